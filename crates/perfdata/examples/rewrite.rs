//! Read a perf.data file and write it back in time order, uncompressed:
//! `cargo run -p perfdata --example rewrite -- in.data out.data`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (src, dst) = (
        args.next().ok_or("need input")?,
        args.next().ok_or("need output")?,
    );
    let file = perfdata::PerfFile::open(src.as_ref())?;
    let mut w = perfdata::PerfFileWriter::create(dst.as_ref(), file.attrs())?;
    let mut records = file.records()?;
    while let Some(r) = records.next()? {
        w.write_raw(r.raw)?;
    }
    w.finish(file.features())?;
    Ok(())
}
