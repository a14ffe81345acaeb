//! `linkly model download` against a mock Hugging Face hub on 127.0.0.1 (`HF_ENDPOINT`): a
//! download killed midway resumes from its partial file with an HTTP range, a connection cut
//! midway is resumed in the same run, a file whose SHA-256 differs from the hub's is refused;
//! and `linkly doctor` reports the model (missing, interrupted, broken).

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

const REPO: &str = "test-org/tiny-model";
const WEIGHTS: &str = "model.safetensors";

/// How the hub answers the first request for the weights.
#[derive(Clone, Copy, PartialEq)]
enum Trouble {
    None,
    /// Sends this many body bytes, then closes the connection.
    CutAfter(usize),
    /// Sends this many body bytes, then waits (until the client is killed).
    StallAfter(usize),
    /// Announces a wrong SHA-256.
    WrongSha,
}

struct HubState {
    files: Vec<(String, Vec<u8>)>,
    trouble: Trouble,
    /// The weights' requests so far, with their Range header.
    weight_requests: Vec<Option<String>>,
    stalling: bool,
}

struct MockHub {
    endpoint: String,
    state: Arc<Mutex<HubState>>,
}

/// Deterministic bytes that do not compress.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl MockHub {
    fn start(trouble: Trouble) -> MockHub {
        let files = vec![
            (
                "config.json".to_string(),
                br#"{"model_type": "bert", "hidden_size": 4}"#.to_vec(),
            ),
            ("tokenizer.json".to_string(), noise(30_000, 1)),
            (WEIGHTS.to_string(), noise(600_000, 2)),
        ];
        let state = Arc::new(Mutex::new(HubState {
            files,
            trouble,
            weight_requests: Vec::new(),
            stalling: false,
        }));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = shared.clone();
                std::thread::spawn(move || {
                    let _ = serve(stream, &state);
                });
            }
        });
        MockHub { endpoint, state }
    }

    fn bytes(&self, file: &str) -> Vec<u8> {
        let s = self.state.lock().unwrap();
        s.files.iter().find(|(n, _)| n == file).unwrap().1.clone()
    }

    fn weight_requests(&self) -> Vec<Option<String>> {
        self.state.lock().unwrap().weight_requests.clone()
    }

    fn set_trouble(&self, trouble: Trouble) {
        let mut s = self.state.lock().unwrap();
        s.trouble = trouble;
        s.stalling = false;
    }
}

/// One HTTP/1.1 exchange, `Connection: close`.
fn serve(stream: TcpStream, state: &Mutex<HubState>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut range = None;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line)?;
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("range")
        {
            range = Some(value.trim().to_string());
        }
    }
    let path = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    let mut out = stream;
    let prefix = format!("/{REPO}/resolve/main/");
    // Large files go through a redirect to a "CDN", with the checksum on the hub's answer.
    if path == format!("{prefix}{WEIGHTS}") {
        let s = state.lock().unwrap();
        let body = &s.files.iter().find(|(n, _)| n == WEIGHTS).unwrap().1;
        let sha = if s.trouble == Trouble::WrongSha {
            hex_sha256(b"something else")
        } else {
            hex_sha256(body)
        };
        write!(
            out,
            "HTTP/1.1 302 Found\r\nLocation: /cdn/{WEIGHTS}\r\nX-Linked-Etag: \"{sha}\"\r\nX-Linked-Size: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            body.len()
        )?;
        return Ok(());
    }
    let name = if path == format!("/cdn/{WEIGHTS}") {
        WEIGHTS.to_string()
    } else if let Some(name) = path.strip_prefix(&prefix) {
        name.to_string()
    } else {
        String::new()
    };
    let (body, trouble) = {
        let mut s = state.lock().unwrap();
        let Some(body) = s
            .files
            .iter()
            .find(|(n, _)| *n == name)
            .map(|f| f.1.clone())
        else {
            drop(s);
            write!(
                out,
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )?;
            return Ok(());
        };
        let mut trouble = Trouble::None;
        if name == WEIGHTS {
            s.weight_requests.push(range.clone());
            if s.weight_requests.len() == 1 {
                trouble = s.trouble;
                s.stalling = matches!(trouble, Trouble::StallAfter(_));
            }
        }
        (body, trouble)
    };
    let start = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.strip_suffix('-'))
        .and_then(|n| n.parse::<usize>().ok());
    let start = match start {
        Some(n) if n >= body.len() => {
            write!(
                out,
                "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            return Ok(());
        }
        Some(n) => {
            write!(
                out,
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {n}-{}/{}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len() - 1,
                body.len(),
                body.len() - n
            )?;
            n
        }
        None => {
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            0
        }
    };
    let rest = &body[start..];
    match trouble {
        Trouble::CutAfter(n) => {
            out.write_all(&rest[..n])?;
            out.flush()?;
            // Dropping the stream closes the connection before the announced length.
        }
        Trouble::StallAfter(n) => {
            out.write_all(&rest[..n])?;
            out.flush()?;
            while state.lock().unwrap().stalling {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Trouble::None | Trouble::WrongSha => {
            for chunk in rest.chunks(16 * 1024) {
                out.write_all(chunk)?;
            }
            out.flush()?;
        }
    }
    Ok(())
}

/// `linkly` for this data directory and hub, with no proxy in the way.
fn linkly(home: &Path, hub: &MockHub) -> Command {
    let mut c = Command::new(common::bin());
    c.env("LINKLY_HOME", home)
        .env("HF_ENDPOINT", &hub.endpoint)
        .env_remove("HF_TOKEN")
        .env_remove("LINKLY_MODEL_DIR")
        .env_remove("LINKLY_LOG");
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        c.env_remove(var);
    }
    c
}

fn download(home: &Path, hub: &MockHub) -> Output {
    linkly(home, hub)
        .args(["model", "download", REPO])
        .output()
        .unwrap()
}

fn model_dir(home: &Path) -> PathBuf {
    home.join("models").join(REPO.replace('/', "--"))
}

fn partial_weights(home: &Path) -> PathBuf {
    home.join("models")
        .join(format!("{}.partial", REPO.replace('/', "--")))
        .join(format!("{WEIGHTS}.part"))
}

fn assert_complete(home: &Path, hub: &MockHub) {
    for file in ["config.json", "tokenizer.json", WEIGHTS] {
        let got = fs_err::read(model_dir(home).join(file)).unwrap();
        assert!(got == hub.bytes(file), "{file} differs from the hub's");
    }
    assert!(!partial_weights(home).parent().unwrap().exists());
}

/// The doctor's check named `name`.
fn doctor_check(home: &Path, hub: &MockHub, name: &str) -> Value {
    let out = linkly(home, hub)
        .args(["--json", "doctor"])
        .output()
        .unwrap();
    check_named(&out, name)
}

/// The check named `name` in the output of `linkly --json doctor`.
fn check_named(doctor: &Output, name: &str) -> Value {
    let v: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check: {v}"))
}

/// Asserts that a doctor check's detail contains `detail` and its advice is to download the
/// model again.
#[track_caller]
fn assert_download_advised(check: &Value, detail: &str) {
    assert!(
        check["detail"].as_str().unwrap().contains(detail),
        "{check}"
    );
    assert!(
        check["advice"]
            .as_str()
            .unwrap()
            .contains("linkly model download"),
        "{check}"
    );
}

#[test]
fn a_killed_download_resumes_from_its_partial_file() {
    let hub = MockHub::start(Trouble::StallAfter(200_000));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = linkly(&home, &hub)
        .args(["model", "use", REPO])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut child = linkly(&home, &hub)
        .args(["model", "download", REPO])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let part = partial_weights(&home);
    let deadline = Instant::now() + Duration::from_secs(60);
    while fs_err::metadata(&part).map_or(0, |m| m.len()) < 200_000 {
        assert!(
            Instant::now() < deadline,
            "the download did not reach 200,000 bytes"
        );
        assert!(child.try_wait().unwrap().is_none(), "the download ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    hub.set_trouble(Trouble::None);
    assert_eq!(fs_err::metadata(&part).unwrap().len(), 200_000);
    assert!(!model_dir(&home).exists());

    // The doctor sees the interrupted download.
    let model = doctor_check(&home, &hub, "Model");
    assert_eq!(model["ok"], true, "{model}");
    assert_eq!(model["warning"], true, "{model}");
    assert_download_advised(&model, "interrupted");

    let out = download(&home, &hub);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        hub.weight_requests(),
        [None, Some("bytes=200000-".to_string())]
    );
    assert!(
        stderr.contains(&format!("{WEIGHTS}: resuming at 200.0 kB of 600.0 kB")),
        "{stderr}"
    );
    assert!(stderr.contains("MB/s"), "{stderr}");
    assert_complete(&home, &hub);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("Downloaded {REPO}")), "{stdout}");
}

#[test]
fn a_cut_connection_is_resumed_in_the_same_run() {
    let hub = MockHub::start(Trouble::CutAfter(100_000));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    common::succeeded(download(&home, &hub));
    assert_eq!(
        hub.weight_requests(),
        [None, Some("bytes=100000-".to_string())]
    );
    assert_complete(&home, &hub);
    // Already there: nothing is fetched again.
    let out = download(&home, &hub);
    assert!(out.status.success());
    assert_eq!(hub.weight_requests().len(), 2);
}

#[test]
fn a_file_that_does_not_match_the_hub_checksum_is_refused() {
    let hub = MockHub::start(Trouble::WrongSha);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let out = download(&home, &hub);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("SHA-256"), "{stderr}");
    assert!(!model_dir(&home).exists());
    assert!(!partial_weights(&home).exists());
}

#[test]
fn doctor_reports_a_missing_and_a_broken_model() {
    let hub = MockHub::start(Trouble::None);
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let model = doctor_check(&home, &hub, "Model");
    assert_eq!(model["ok"], true, "{model}");
    assert_eq!(model["warning"], true, "{model}");
    assert!(
        model["detail"]
            .as_str()
            .unwrap()
            .ends_with("is not downloaded"),
        "{model}"
    );
    let vectors = doctor_check(&home, &hub, "Vectors");
    assert_eq!(vectors["ok"], true, "{vectors}");

    // The mock's files are no model: the doctor says it does not load, and why.
    let out = linkly(&home, &hub)
        .args(["model", "use", REPO])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(download(&home, &hub).status.success());
    let model = doctor_check(&home, &hub, "Model");
    assert_eq!(model["ok"], false, "{model}");
    assert_download_advised(&model, "does not load");
}

#[test]
fn doctor_loads_the_model_and_counts_the_waiting_documents() {
    let model = linkly_models::test_inputs::TestInput::MiniLm.path();
    let hub = MockHub::start(Trouble::None);
    let env = common::Env::new(&[("bread.md", "# Bread\n\nBaking loaves at home.\n")]);
    // Indexed without the model: the document waits for its vectors.
    let out = linkly(&env.home, &hub)
        .args(["index", env.docs.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let with_model = |args: &[&str]| {
        linkly(&env.home, &hub)
            .env("LINKLY_MODEL_DIR", &model)
            .args(args)
            .output()
            .unwrap()
    };
    let doctor = |name: &str| check_named(&with_model(&["--json", "doctor"]), name);
    let m = doctor("Model");
    assert_eq!(m["ok"], true, "{m}");
    assert!(m.get("warning").is_none(), "{m}");
    assert!(
        m["detail"]
            .as_str()
            .unwrap()
            .contains("loads (384 dimensions)"),
        "{m}"
    );
    let v = doctor("Vectors");
    assert_eq!(v["warning"], true, "{v}");
    assert!(v["detail"].as_str().unwrap().ends_with("1 waiting"), "{v}");
    assert!(
        v["advice"].as_str().unwrap().contains("linkly index"),
        "{v}"
    );
    assert!(with_model(&["index"]).status.success());
    let v = doctor("Vectors");
    assert!(v.get("warning").is_none(), "{v}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .starts_with("1 documents embedded"),
        "{v}"
    );
}
