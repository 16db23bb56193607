//! Headless Firefox (ESR) for the export tests: a screenshot of a page,
//! with every request Firefox makes sent to a proxy of ours that records
//! it and answers none.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support;

pub fn has_firefox() -> bool {
    support::require(
        Command::new("firefox-esr")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "needs firefox-esr (apt-get install firefox-esr)",
    )
}

/// Where Firefox's own background services live (settings, location,
/// telemetry): it calls them on its own, whatever the page.
const FIREFOX_SERVICES: [&str; 4] = [
    ".mozilla.com",
    ".mozilla.net",
    ".mozilla.org",
    ".firefox.com",
];

/// What a screenshot run saw.
pub struct Shot {
    /// (width, height, RGBA pixels).
    pub pixels: (usize, usize, Vec<u8>),
    /// The first line of each request through the proxy that was not to
    /// Firefox's own services: what the page asked for.
    pub page_requests: Vec<String>,
}

/// The first line of a proxied request: `CONNECT host:443 …` or
/// `GET http://host/… …`; the host, for the filter.
fn host(request: &str) -> &str {
    let target = request.split(' ').nth(1).unwrap_or("");
    let target = target.split_once("://").map_or(target, |(_, r)| r);
    target.split(['/', ':']).next().unwrap_or("")
}

/// A screenshot of `file` in a window 1200 pixels wide and `height` tall,
/// in a fresh profile whose every connection goes to a proxy of ours.
pub fn screenshot(file: &Path, height: usize) -> Shot {
    let dir = file.parent().unwrap();
    let profile = dir.join("firefox-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = proxy.local_addr().unwrap().port();
    let prefs: String = [
        ("network.proxy.type", "1".to_string()),
        ("network.proxy.http", "\"127.0.0.1\"".into()),
        ("network.proxy.http_port", port.to_string()),
        ("network.proxy.ssl", "\"127.0.0.1\"".into()),
        ("network.proxy.ssl_port", port.to_string()),
        ("network.proxy.share_proxy_settings", "true".into()),
        // Even loopback addresses go to the proxy.
        ("network.proxy.allow_hijacking_localhost", "true".into()),
        ("network.proxy.no_proxies_on", "\"\"".into()),
    ]
    .iter()
    .map(|(k, v)| format!("user_pref(\"{k}\", {v});\n"))
    .collect();
    std::fs::write(profile.join("user.js"), prefs).unwrap();

    let recorder = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for conn in proxy.incoming() {
            let Ok(conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut line = String::new();
            let _ = BufReader::new(&conn).read_line(&mut line);
            if line.starts_with("STOP") {
                break;
            }
            // Dropped unanswered: the request fails at once.
            seen.push(line.trim_end().to_string());
        }
        seen
    });
    let png = dir.join("firefox-shot.png");
    support::run(
        Command::new("firefox-esr")
            .args(["--headless", "--no-remote", "-profile"])
            .arg(&profile)
            .arg(format!("--window-size=1200,{height}"))
            .arg("--screenshot")
            .arg(&png)
            .arg(format!("file://{}", file.display())),
    );
    TcpStream::connect(("127.0.0.1", port))
        .and_then(|mut s| s.write_all(b"STOP\r\n"))
        .expect("the proxy is still listening");
    let requests = recorder.join().unwrap();
    eprintln!("firefox: {} requests through the proxy", requests.len());
    let page_requests = requests
        .into_iter()
        .filter(|r| !FIREFOX_SERVICES.iter().any(|s| host(r).ends_with(s)))
        .collect();
    let bytes = std::fs::read(&png).expect("firefox wrote a screenshot");
    Shot {
        pixels: super::chromium::decode_png(&bytes),
        page_requests,
    }
}
