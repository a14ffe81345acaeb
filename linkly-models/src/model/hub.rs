//! Fetching one file of a Hugging Face hub repository over HTTP, resumably.
//!
//! A file is written to `<dest>.part` as it arrives and renamed to `<dest>` once its size (and
//! SHA-256, when the hub gives it) checks out. An interrupted download, in this run or a killed
//! earlier one, continues from the partial file with an HTTP `Range` request; a server that
//! ignores the range (`200`) or answers for other bytes starts the file over.
//!
//! The URL is the hub's `resolve` URL: `$HF_ENDPOINT` (default `https://huggingface.co`)
//! `/<org>/<name>/resolve/main/<file>`. Redirects are followed by hand so that the hub's
//! `X-Linked-Etag` (the SHA-256 of large files) is read before the CDN answers, and so that
//! `$HF_TOKEN` is sent to the hub only.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::DownloadProgress;
use crate::{Error, ModelError, Result};

/// The hub used unless `HF_ENDPOINT` names another (a mirror, or a test server).
const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// Attempts in a row that bring no new byte before a file is given up (the partial file stays).
const ATTEMPTS: u32 = 4;
/// Redirects followed per request.
const MAX_REDIRECTS: usize = 10;

/// A client of one hub.
pub(super) struct Hub {
    agent: ureq::Agent,
    endpoint: String,
    token: Option<String>,
}

/// What became of one file.
pub(super) enum Fetched {
    /// On disk at the destination, checked.
    Done,
    /// The repository has no such file.
    NotFound,
}

/// Why one attempt stopped.
enum Failure {
    /// Worth another attempt (network error, cut connection, 5xx): the partial file is kept.
    Retry(String),
    /// Not worth another attempt.
    Fatal(Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Fatal(Error::Io(e))
    }
}

/// The outcome of one complete attempt.
enum Attempt {
    Complete { sha256: Option<String> },
    NotFound,
}

impl Hub {
    /// The hub of `HF_ENDPOINT` (else huggingface.co), with `HF_TOKEN` when set.
    pub(super) fn from_env() -> Hub {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .map(|e| e.trim().trim_end_matches('/').to_string())
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let token = std::env::var("HF_TOKEN")
            .ok()
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let agent = ureq::AgentBuilder::new()
            .redirects(0)
            .timeout_connect(Duration::from_secs(30))
            .timeout_read(Duration::from_secs(60))
            .try_proxy_from_env(true)
            .user_agent(concat!("linkly/", env!("CARGO_PKG_VERSION")))
            .build();
        Hub {
            agent,
            endpoint,
            token,
        }
    }

    /// The hub's URL of `file` in the model repository `repo`.
    pub(super) fn url(&self, repo: &str, file: &str) -> String {
        format!("{}/{repo}/resolve/main/{file}", self.endpoint)
    }

    /// Fetches `file` of `repo` into `dest`, resuming `<dest>.part` when it is there.
    pub(super) fn fetch(
        &self,
        repo: &str,
        file: &str,
        dest: &Path,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> Result<Fetched> {
        let url = self.url(repo, file);
        let part = part_path(dest);
        if let Some(parent) = dest.parent() {
            fs_err::create_dir_all(parent)?;
        }
        let mut failures = 0;
        loop {
            let before = file_len(&part);
            match self.attempt(&url, file, &part, progress) {
                Ok(Attempt::NotFound) => return Ok(Fetched::NotFound),
                Ok(Attempt::Complete { sha256 }) => {
                    if let Some(expected) = sha256 {
                        let actual = sha256_of(&part)?;
                        if actual != expected {
                            let _ = fs_err::remove_file(&part);
                            return Err(ModelError::Checksum {
                                file: format!("{repo}/{file}"),
                                actual,
                                expected,
                            }
                            .into());
                        }
                    }
                    fs_err::rename(&part, dest)?;
                    return Ok(Fetched::Done);
                }
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry(why)) => {
                    // A cut that brought bytes is progress: only attempts in a row that bring
                    // nothing count against the limit.
                    if file_len(&part) > before {
                        failures = 0;
                    }
                    failures += 1;
                    if failures >= ATTEMPTS {
                        return Err(ModelError::Download {
                            url,
                            reason: format!(
                                "{why} (the {} bytes of {repo}/{file} fetched are kept; run the download again to resume)",
                                file_len(&part)
                            ),
                        }
                        .into());
                    }
                    tracing::info!(file, error = %why, "download interrupted; resuming");
                    std::thread::sleep(Duration::from_millis(250 << failures));
                }
            }
        }
    }

    /// One request (following redirects) and the copy of its body onto the partial file.
    fn attempt(
        &self,
        url: &str,
        file: &str,
        part: &Path,
        progress: &mut dyn FnMut(&DownloadProgress),
    ) -> std::result::Result<Attempt, Failure> {
        let start = file_len(part);
        let mut url = url.to_string();
        let mut sha256 = None;
        let mut linked_size = None;
        let mut redirects = 0;
        let response = loop {
            let mut req = self.agent.get(&url).set("Accept-Encoding", "identity");
            if start > 0 {
                req = req.set("Range", &format!("bytes={start}-"));
            }
            if let Some(token) = &self.token
                && url.starts_with(&self.endpoint)
            {
                req = req.set("Authorization", &format!("Bearer {token}"));
            }
            let response = match req.call() {
                Ok(r) => r,
                Err(ureq::Error::Status(_, r)) => r,
                Err(ureq::Error::Transport(t)) => return Err(Failure::Retry(t.to_string())),
            };
            // The hub names a large file's SHA-256 and size on its own answer, before the CDN.
            if let Some(etag) = response.header("x-linked-etag") {
                let etag = etag.trim().trim_matches('"').to_ascii_lowercase();
                if etag.len() == 64 && etag.bytes().all(|b| b.is_ascii_hexdigit()) {
                    sha256 = Some(etag);
                }
            }
            if let Some(size) = response
                .header("x-linked-size")
                .and_then(|s| s.trim().parse::<u64>().ok())
            {
                linked_size = Some(size);
            }
            if (300..400).contains(&response.status()) {
                let Some(location) = response.header("location") else {
                    return Err(Failure::Fatal(
                        ModelError::Download {
                            url,
                            reason: "a redirect without a Location".into(),
                        }
                        .into(),
                    ));
                };
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(Failure::Fatal(
                        ModelError::Download {
                            url,
                            reason: "too many redirects".into(),
                        }
                        .into(),
                    ));
                }
                url = join_url(&url, location);
                continue;
            }
            break response;
        };
        let status = response.status();
        let content_range = response.header("content-range").map(str::to_string);
        let total = match status {
            200 => {
                // The whole file: the server ignored the range, or there was no partial file.
                let len = response
                    .header("content-length")
                    .and_then(|s| s.trim().parse::<u64>().ok());
                let mut out = fs_err::File::create(part)?;
                out.flush()?;
                let total = len.or(linked_size);
                copy_body(response, out, file, 0, total, progress)?;
                total
            }
            206 => {
                let (first, total) = content_range
                    .as_deref()
                    .and_then(parse_content_range)
                    .ok_or_else(|| {
                        Failure::Fatal(
                            ModelError::Download {
                                url: url.clone(),
                                reason: "a partial answer without a valid Content-Range".into(),
                            }
                            .into(),
                        )
                    })?;
                if first != start {
                    // Other bytes than asked: start the file over.
                    fs_err::File::create(part)?;
                    return Err(Failure::Retry(format!(
                        "the server answered from byte {first}, not {start}"
                    )));
                }
                let mut out = fs_err::OpenOptions::new().write(true).open(part)?;
                out.seek(SeekFrom::Start(start))?;
                copy_body(response, out, file, start, total, progress)?;
                total
            }
            416 => {
                // Nothing after `start`: complete when the partial file has the full size.
                let total = content_range
                    .as_deref()
                    .and_then(|c| c.rsplit('/').next())
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .or(linked_size);
                if total != Some(start) {
                    fs_err::File::create(part)?;
                    return Err(Failure::Retry(format!(
                        "the partial file ({start} bytes) does not fit the server's file; starting over"
                    )));
                }
                total
            }
            404 => return Ok(Attempt::NotFound),
            401 | 403 => {
                return Err(Failure::Fatal(ModelError::Denied { url, status }.into()));
            }
            429 | 500..=599 => return Err(Failure::Retry(format!("HTTP {status} from {url}"))),
            _ => {
                return Err(Failure::Fatal(
                    ModelError::Download {
                        url,
                        reason: format!("unexpected HTTP {status}"),
                    }
                    .into(),
                ));
            }
        };
        let len = file_len(part);
        match total {
            Some(total) if len < total => Err(Failure::Retry(format!(
                "the connection closed after {len} of {total} bytes"
            ))),
            Some(total) if len > total => {
                fs_err::File::create(part)?;
                Err(Failure::Retry(format!(
                    "got {len} bytes, more than the {total} announced; starting over"
                )))
            }
            _ => Ok(Attempt::Complete { sha256 }),
        }
    }
}

/// Appends the body to `out` (positioned at `start`), reporting progress.
fn copy_body(
    response: ureq::Response,
    mut out: fs_err::File,
    file: &str,
    start: u64,
    total: Option<u64>,
    progress: &mut dyn FnMut(&DownloadProgress),
) -> std::result::Result<(), Failure> {
    let mut reader = response.into_reader();
    let mut buf = vec![0u8; 64 * 1024];
    let mut done = start;
    let mut report = |done: u64| {
        progress(&DownloadProgress {
            file: file.to_string(),
            done,
            total: total.unwrap_or(0),
            resumed_from: start,
        })
    };
    report(done);
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                out.flush()?;
                return Err(Failure::Retry(e.to_string()));
            }
        };
        out.write_all(&buf[..n])?;
        done += n as u64;
        report(done);
    }
    out.flush()?;
    out.sync_all()?;
    Ok(())
}

/// `<dest>.part`.
fn part_path(dest: &Path) -> std::path::PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    dest.with_file_name(name)
}

fn file_len(path: &Path) -> u64 {
    fs_err::metadata(path).map_or(0, |m| m.len())
}

/// The lowercase hex SHA-256 of a file.
fn sha256_of(path: &Path) -> Result<String> {
    let mut f = fs_err::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// `bytes 100-199/1000` → (100, Some(1000)); `bytes 100-199/*` → (100, None).
fn parse_content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, _) = range.split_once('-')?;
    Some((first.trim().parse().ok()?, total.trim().parse().ok()))
}

/// Resolves a `Location` header against the URL that gave it.
fn join_url(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location.to_string();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    if location.starts_with('/') {
        format!("{}{location}", &base[..host_end])
    } else {
        let dir_end = base
            .rfind('/')
            .filter(|&i| i >= host_end)
            .unwrap_or(host_end);
        format!("{}/{location}", &base[..dir_end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range_and_redirects() {
        assert_eq!(
            parse_content_range("bytes 100-199/1000"),
            Some((100, Some(1000)))
        );
        assert_eq!(parse_content_range("bytes 5-9/*"), Some((5, None)));
        assert_eq!(parse_content_range("items 1-2/3"), None);
        assert_eq!(
            join_url(
                "https://hub.test/a/b/resolve/main/x.json",
                "https://cdn.test/blob"
            ),
            "https://cdn.test/blob"
        );
        assert_eq!(
            join_url("https://hub.test/a/b/resolve/main/x.json", "/api/x"),
            "https://hub.test/api/x"
        );
        assert_eq!(
            join_url("http://127.0.0.1:9/a/resolve/main/x.json", "y.json"),
            "http://127.0.0.1:9/a/resolve/main/y.json"
        );
        assert_eq!(
            part_path(Path::new("/m/1_Pooling/config.json")),
            Path::new("/m/1_Pooling/config.json.part")
        );
    }
}
