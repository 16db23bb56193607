//! The output file: checked before anything starts, and the previous
//! recording kept as NAME.old, as perf does.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};

/// Check that `path` can be created, before anything starts.
pub fn check_output(path: &Path) -> anyhow::Result<()> {
    if path.is_dir() {
        bail!("{}: is a directory; give -o a file name", path.display());
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let probe = dir.join(format!(
        ".{}.bpfprof-probe-{}",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("perf.data"),
        std::process::id()
    ));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(anyhow!(
            "cannot write the output {}: {} (directory {})",
            path.display(),
            e,
            dir.display()
        )),
    }
}

/// perf's habit: keep one previous recording as NAME.old.
pub fn rotate_old(path: &Path) -> anyhow::Result<()> {
    if std::fs::metadata(path)
        .map(|m| m.len() > 0)
        .unwrap_or(false)
    {
        let mut old = path.as_os_str().to_owned();
        old.push(".old");
        std::fs::rename(path, &old).with_context(|| {
            format!(
                "renaming {} to {}",
                path.display(),
                Path::new(&old).display()
            )
        })?;
    }
    Ok(())
}
