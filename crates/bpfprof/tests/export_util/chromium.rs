//! Headless Chromium for the export tests: screenshots and the DOM after
//! scripts ran, with the network off, and a small PNG reader to look at
//! the pixels (8-bit RGB/RGBA, as Chromium writes them).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;

pub fn has_chromium() -> bool {
    support::require(
        Command::new("chromium").arg("--version").output().is_ok(),
        "needs chromium (apt-get install chromium)",
    )
}

/// Chromium with what headless runs as root need, and every request that
/// leaves the machine refused (a proxy that does not exist).
fn chromium(dir: &Path) -> Command {
    let mut c = Command::new("chromium");
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--force-color-profile=srgb",
        "--hide-scrollbars",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
    ])
    .arg(format!(
        "--user-data-dir={}",
        dir.join("chromium").display()
    ));
    c
}

fn url(file: &Path) -> String {
    format!("file://{}", file.display())
}

/// A screenshot of `file` in a window `height` pixels tall (1200 wide),
/// as RGBA pixels (width, height, bytes).
pub fn screenshot(file: &Path, height: usize) -> (usize, usize, Vec<u8>) {
    let dir = file.parent().unwrap();
    let png: PathBuf = dir.join("shot.png");
    support::run(
        chromium(dir)
            .arg(format!("--window-size=1200,{height}"))
            .arg(format!("--screenshot={}", png.display()))
            .arg(url(file)),
    );
    decode_png(&std::fs::read(&png).expect("chromium wrote a screenshot"))
}

/// The document after its scripts ran.
pub fn dom(file: &Path) -> String {
    let dir = file.parent().unwrap();
    support::stdout(
        chromium(dir)
            .arg("--window-size=1200,900")
            .arg("--dump-dom")
            .arg(url(file)),
    )
}

/// Decode an 8-bit RGB or RGBA, non-interlaced PNG into RGBA.
pub fn decode_png(bytes: &[u8]) -> (usize, usize, Vec<u8>) {
    use std::io::Read;
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let (mut w, mut h, mut channels) = (0, 0, 0);
    let mut idat = Vec::new();
    let mut at = 8;
    while at + 8 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = &bytes[at + 4..at + 8];
        let data = &bytes[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(data[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(data[4..8].try_into().unwrap()) as usize;
                assert_eq!(data[8], 8, "8-bit samples");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("PNG colour type {t}"),
                };
                assert_eq!(data[12], 0, "not interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .expect("PNG data inflates");
    let stride = w * channels;
    let mut prev = vec![0u8; stride];
    let mut rgba = Vec::with_capacity(w * h * 4);
    for y in 0..h {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let mut cur = line[1..].to_vec();
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 } as i16;
            let b = prev[i] as i16;
            let c = if i >= channels { prev[i - channels] } else { 0 } as i16;
            let pred = match line[0] {
                0 => 0,
                1 => a,
                2 => b,
                3 => (a + b) / 2,
                4 => {
                    let p = a + b - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                f => panic!("PNG filter {f}"),
            };
            cur[i] = cur[i].wrapping_add(pred as u8);
        }
        for px in cur.chunks(channels) {
            rgba.extend_from_slice(&px[..3]);
            rgba.push(if channels == 4 { px[3] } else { 255 });
        }
        prev = cur;
    }
    (w, h, rgba)
}
