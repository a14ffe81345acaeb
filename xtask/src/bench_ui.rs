//! `cargo xtask bench ui [--docs N] [--requests R] [--renders K]`: the app's pages (issue 32).
//!
//! Indexes the generated corpus (`corpus::generated`, as `bench serve` does) plus one PDF of
//! 25,000 lines written here (`linkly_extract::hand_made_pdf`), starts a release `linkly
//! serve`, and measures:
//! - the time to serve the overview, search and document pages (HTTP GETs on one keep-alive
//!   connection from this process: request sent to last byte read, so loopback included);
//! - the bytes of the home page with every stylesheet, script and image it links;
//! - the first render in Chromium (Navigation Timing and the `paint` entries, read through
//!   WebDriver with the client of `linkly-cli/tests/browser/mod.rs`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

use crate::bench::{build_cli, percentiles};
use crate::bench_serve::start;
use crate::browser;
use crate::corpus;

/// Lines of the long PDF (the "25,000-line PDF").
const PDF_LINES: usize = 25_000;
/// Text lines per PDF page.
const PDF_LINES_PER_PAGE: usize = 50;

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let docs = num(args, "--docs", 100_000)?;
    let requests = num(args, "--requests", 200)?;
    let renders = num(args, "--renders", 10)?;
    let bin = build_cli()?;
    let work = crate::target_dir().join("bench");
    fs_err::create_dir_all(&work)?;
    eprintln!("bench ui: corpus of {docs} documents in {}", work.display());
    let corpus = corpus::generated(&work, docs)?;
    let big = work.join("ui-long-pdf");
    let pdf = big.join(format!("long-{PDF_LINES}-lines.pdf"));
    if !pdf.exists() {
        fs_err::create_dir_all(&big)?;
        fs_err::write(&pdf, long_pdf(PDF_LINES))?;
    }
    let home = work.join("home-ui");
    let _ = fs_err::remove_dir_all(&home);
    let port = 61607u16;
    eprintln!("bench ui: indexing and starting `linkly serve` on port {port}");
    let (daemon, ready) = start(&bin, &home, port, &[&corpus, &big])?;
    let base = format!("http://127.0.0.1:{port}");
    let mut report = String::from("| page | figure |\n|---|---|\n");
    report.push_str(&format!(
        "| `linkly serve`, {docs} generated documents + the {PDF_LINES}-line PDF | watching after {:.0} s |\n",
        ready.as_secs_f64()
    ));

    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build();
    let queries = corpus::generated_queries(requests);
    let pdf_path = pdf.canonicalize()?;
    let doc_url = document_url(&agent, &base, &pdf_path)?;
    let lines = line_count_hint(&get(&agent, &format!("{base}{doc_url}"))?.1);
    // The PDF's lines as `read` counts them (what the page pages through).
    let id = format!("local://{}", doc_url.trim_start_matches("/doc/"));
    let out = Command::new(&bin)
        .args(["--json", "--home"])
        .arg(&home)
        .args(["read", &id, "--limit", "1"])
        .env_remove("LINKLY_MODEL_DIR")
        .output()?;
    let total_lines = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["total_lines"].as_u64())
        .unwrap_or(0);
    let pages: Vec<(&str, Vec<String>)> = vec![
        ("overview `/`", vec!["/".to_string()]),
        (
            "search `/search?q=…` (limit 10, generated queries)",
            queries
                .iter()
                .map(|q| format!("/search?q={}", encode(q)))
                .collect(),
        ),
        (
            "document page of the 25,000-line PDF (first page of lines)",
            vec![doc_url.clone()],
        ),
    ];
    for (name, urls) in &pages {
        // Warm-up: the first requests open readers and fill caches.
        for u in urls.iter().take(5) {
            get(&agent, &format!("{base}{u}"))?;
        }
        let mut ms = Vec::with_capacity(requests);
        let mut bytes = 0usize;
        for i in 0..requests {
            let u = &urls[i % urls.len()];
            let t = Instant::now();
            let (status, body) = get(&agent, &format!("{base}{u}"))?;
            ms.push(t.elapsed().as_secs_f64() * 1000.0);
            if status != 200 {
                bail!("GET {u}: status {status}");
            }
            bytes += body.len();
        }
        let (p50, p99) = percentiles(ms);
        report.push_str(&format!(
            "| {name}: {requests} GETs | p50 {p50:.1} ms, p99 {p99:.1} ms; {:.0} KB per page |\n",
            bytes as f64 / requests as f64 / 1024.0
        ));
    }
    report.push_str(&format!(
        "| the long PDF's page | {lines} line elements on its first page; `read` counts {total_lines} lines in the PDF ({PDF_LINES} written) |\n"
    ));

    let (total, parts) = home_bytes(&agent, &base)?;
    report.push_str(&format!(
        "| home page with all its assets | {:.1} KB in {} files ({}) |\n",
        total as f64 / 1024.0,
        parts.len(),
        parts
            .iter()
            .map(|(u, n)| format!("`{u}` {:.1} KB", *n as f64 / 1024.0))
            .collect::<Vec<_>>()
            .join(", ")
    ));

    match browser::find() {
        Ok((chromium, driver)) => {
            let q = encode(&queries[0]);
            for (name, url) in [
                ("overview", "/".to_string()),
                ("search", format!("/search?q={q}")),
                ("document (25,000-line PDF)", doc_url.clone()),
            ] {
                let r = first_render(&chromium, &driver, &format!("{base}{url}"), renders)?;
                report.push_str(&format!(
                    "| first render in Chromium 1280×800, {name} ({renders} loads, medians) | first contentful paint {:.0} ms; DOMContentLoaded {:.0} ms; load {:.0} ms; response end {:.0} ms |\n",
                    r[0], r[1], r[2], r[3]
                ));
            }
        }
        Err(why) => {
            report.push_str(&format!("| first render | not measured: {why} |\n"));
        }
    }
    drop(daemon);
    let cpu = Command::new("sh")
        .args(["-c", "lscpu | grep -E 'Model name' | sed 's/.*: *//'"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    report.push_str(&format!(
        "\nCPU: {cpu}, {} cores; command: `cargo xtask bench ui --docs {docs}`.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    ));
    crate::bench::write_report("report-ui.md", &report)
}

fn num(args: &[String], name: &str, default: usize) -> anyhow::Result<usize> {
    crate::arg(args, name)
        .map(|s| s.parse::<usize>())
        .transpose()
        .with_context(|| format!("{name} must be a whole number"))
        .map(|n| n.unwrap_or(default))
}

/// GET: status and body.
fn get(agent: &ureq::Agent, url: &str) -> anyhow::Result<(u16, Vec<u8>)> {
    use std::io::Read as _;
    let res = match agent.get(url).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => bail!("GET {url}: {e}"),
    };
    let status = res.status();
    let mut body = Vec::new();
    res.into_reader().read_to_end(&mut body)?;
    Ok((status, body))
}

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char);
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Every `href="…"`/`src="…"` value of an HTML page, entities `&amp;` undone.
fn links(html: &str, attr: &str) -> Vec<String> {
    let needle = format!("{attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&needle) {
        rest = &rest[i + needle.len()..];
        if let Some(j) = rest.find('"') {
            out.push(rest[..j].replace("&amp;", "&"));
            rest = &rest[j..];
        }
    }
    out
}

/// The app's URL of the long PDF: the first document link of a search for its file name's
/// words, restricted by path.
fn document_url(agent: &ureq::Agent, base: &str, pdf: &Path) -> anyhow::Result<String> {
    let stem = pdf.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let url = format!("{base}/search?q={}", encode("longpdfmarker"));
    let (_, body) = get(agent, &url)?;
    let html = String::from_utf8_lossy(&body);
    // The result's link (`/doc/N?line=…#L…`) without the hit: the document's first page.
    links(&html, "href")
        .into_iter()
        .find(|h| h.starts_with("/doc/"))
        .map(|h| h.split(['?', '#']).next().unwrap_or_default().to_string())
        .with_context(|| format!("no document link for {stem} on {url}"))
}

/// Elements of the page that look like numbered lines (a rough count, to show the page is
/// paged and not the whole document).
fn line_count_hint(body: &[u8]) -> usize {
    let html = String::from_utf8_lossy(body);
    html.matches("id=\"L").count()
}

/// The home page's bytes with the stylesheets, scripts, icons and images it links (same
/// origin), and each part.
fn home_bytes(agent: &ureq::Agent, base: &str) -> anyhow::Result<(usize, Vec<(String, usize)>)> {
    let (_, body) = get(agent, &format!("{base}/"))?;
    let html = String::from_utf8_lossy(&body).into_owned();
    let mut parts = vec![("/".to_string(), body.len())];
    let mut assets: Vec<String> = links(&html, "src");
    // Stylesheets and icons only among the hrefs (not the pages the menu links).
    for tag in html.split('<').filter(|t| t.starts_with("link ")) {
        if tag.contains("stylesheet") || tag.contains("icon") || tag.contains("preload") {
            assets.extend(links(tag, "href"));
        }
    }
    assets.sort();
    assets.dedup();
    for a in assets {
        if !a.starts_with('/') || a.starts_with("//") {
            continue;
        }
        let (status, bytes) = get(agent, &format!("{base}{a}"))?;
        if status == 200 {
            // url(…) references inside a stylesheet count too.
            if a.ends_with(".css") {
                let css = String::from_utf8_lossy(&bytes).into_owned();
                for u in css.split("url(").skip(1) {
                    let u = u.split(')').next().unwrap_or("").trim_matches(['"', '\'']);
                    if u.starts_with('/') {
                        let (_, b) = get(agent, &format!("{base}{u}"))?;
                        parts.push((u.to_string(), b.len()));
                    }
                }
            }
            parts.push((a, bytes.len()));
        }
    }
    Ok((parts.iter().map(|(_, n)| n).sum(), parts))
}

/// Medians over `n` loads of `url` in a fresh headless Chromium window each time (no cache
/// from the previous load): first contentful paint, DOMContentLoaded, load, response end (ms
/// from navigation start).
fn first_render(chromium: &Path, driver: &Path, url: &str, n: usize) -> anyhow::Result<[f64; 4]> {
    let mut d = browser::Driver::start(driver).map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut all: [Vec<f64>; 4] = Default::default();
    for _ in 0..n {
        let mut s = d
            .session(chromium, "en")
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        s.goto(url).map_err(|e| anyhow::anyhow!("{e}"))?;
        // The paint entry is recorded after the frame that painted: wait for it (2 s at most).
        for _ in 0..40 {
            let painted = s
                .exec(
                    "return performance.getEntriesByType('paint').some(e => e.name === 'first-contentful-paint');",
                    &[],
                )
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if painted == serde_json::Value::Bool(true) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let v = s
            .exec(
                "const n = performance.getEntriesByType('navigation')[0];
                 const p = performance.getEntriesByType('paint')
                   .find(e => e.name === 'first-contentful-paint');
                 return [p ? p.startTime : -1, n.domContentLoadedEventEnd, n.loadEventEnd, n.responseEnd];",
                &[],
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        for (i, slot) in all.iter_mut().enumerate() {
            slot.push(v[i].as_f64().unwrap_or(-1.0));
        }
        s.close().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(all.map(|v| percentiles(v).0))
}

/// A PDF of `lines` numbered lines of text, 50 to a page, each line holding the word
/// `longpdfmarker` and a few more, in Helvetica: text a PDF extractor reads one line per line.
pub(crate) fn long_pdf(lines: usize) -> Vec<u8> {
    let words = corpus::vocabulary();
    let mut rng = corpus::Rng::new(3);
    let mut pages = Vec::new();
    let mut n = 0;
    while n < lines {
        let mut content = String::from("BT /F1 10 Tf 14 TL 50 760 Td\n");
        for _ in 0..PDF_LINES_PER_PAGE.min(lines - n) {
            n += 1;
            let tail: Vec<&str> = (0..8)
                .map(|_| words[rng.below(2000)].as_str())
                .filter(|w| w.is_ascii())
                .collect();
            content.push_str(&format!(
                "(Line {n} longpdfmarker {}) Tj T*\n",
                tail.join(" ")
            ));
        }
        content.push_str("ET");
        pages.push(content);
    }
    linkly_extract::hand_made_pdf::helvetica_pages((612, 792), &pages)
}
