//! The `fetch` tool against a direct GET of the same 100 KB page from the
//! same loopback server, measured in the same run.

use std::io::{Read, Write};
use std::net::TcpStream;
use warden_tests::{Answer, Sandbox, WebPeer};

use crate::{ratio, time, us};

/// A direct HTTP/1.1 GET over loopback, the whole response read.
fn direct_get(port: u16) -> usize {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET /page HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).unwrap();
    out.len()
}

pub fn run() {
    let text: String = "All work and no play makes a dull page. 0123456789\n".repeat(2000);
    let page = text[..100_000].to_string();
    let html = format!(
        "<html><body>{}</body></html>",
        page.lines()
            .map(|l| format!("<p>{l}</p>"))
            .collect::<String>()
    );
    let plain = WebPeer::start(move |_| Answer::ok("text/plain", page.clone()));
    let marked = WebPeer::start(move |_| Answer::ok("text/html", html.clone()));
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"127.0.0.1:{}\", \"127.0.0.1:{}\"]\noutput = \"1MiB\"\n",
        plain.port, marked.port
    ));
    let tools = sb.toolset(&[]);
    let args =
        |p: &WebPeer| serde_json::json!({"url": p.url("/page"), "max_length": 200_000}).to_string();
    let (a_plain, a_html) = (args(&plain), args(&marked));
    let out = tools.call("fetch", &a_plain);
    assert!(
        out.result.as_ref().is_ok_and(|o| o.len() > 100_000),
        "{out:?}"
    );
    for _ in 0..20 {
        tools.call("fetch", &a_plain);
        direct_get(plain.port);
    }
    let runs = 200;
    let direct = time(runs, || direct_get(plain.port));
    let fetch = time(runs, || tools.call("fetch", &a_plain));
    let direct_html = time(runs, || direct_get(marked.port));
    let fetch_html = time(runs / 4, || tools.call("fetch", &a_html));
    println!();
    println!("fetch of a 100 KB page from a loopback server (median)");
    println!("  direct GET (baseline)      {:>12}", us(direct));
    println!(
        "  fetch, text/plain          {:>12}   ({:.1}x direct; overhead {})",
        us(fetch),
        ratio(fetch, direct),
        us(fetch.saturating_sub(direct))
    );
    println!(
        "  fetch, HTML to Markdown    {:>12}   ({:.1}x a direct GET of the HTML, {})",
        us(fetch_html),
        ratio(fetch_html, direct_html),
        us(direct_html)
    );
}
