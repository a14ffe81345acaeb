//! Fuzzes the MCP request path: each input is one line of JSON-RPC sent to a stdio server
//! (`linkly_mcp::StdioTransport` with `LinklyServer`, over an empty index), as a client would.
//! Every answer must be a JSON-RPC message, and a `ping` sent after the input must still be
//! answered; any panic, on any thread, aborts.

#![no_main]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use linkly_core::{Config, DataDir};
use linkly_index::Index;
use linkly_mcp::inbound::{Inbound, check_message};
use linkly_tools::Linkly;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#;

struct Pipes {
    input: WriteHalf<DuplexStream>,
    output: BufReader<ReadHalf<DuplexStream>>,
}

struct Harness {
    rt: tokio::runtime::Runtime,
    pipes: Mutex<Pipes>,
    next: AtomicU64,
    _tmp: tempfile::TempDir,
}

impl Pipes {
    async fn send(&mut self, line: &[u8]) {
        self.input.write_all(line).await.unwrap();
        self.input.write_all(b"\n").await.unwrap();
    }

    /// The next answer, which must be a JSON-RPC message.
    async fn answer(&mut self) -> Value {
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(10), self.output.read_line(&mut line))
            .await
            .expect("the server stopped answering")
            .unwrap();
        assert!(read > 0, "the server closed its output");
        let answer: Value = serde_json::from_str(&line).expect("an answer that is not JSON");
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        answer
    }
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        // A panic in a server task would otherwise only end that task.
        std::panic::set_hook(Box::new(|info| {
            eprintln!("{info}");
            std::process::abort();
        }));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::new(tmp.path().join("data"));
        let index = Index::open(&data.index_dir()).unwrap();
        let linkly = Arc::new(Linkly::new(Arc::new(index), data, Config::default()));
        let pipes = rt.block_on(async {
            let (client, server) = tokio::io::duplex(1 << 20);
            let (read, write) = tokio::io::split(server);
            tokio::spawn(linkly_mcp::serve_streams(linkly, read, write));
            let (read, write) = tokio::io::split(client);
            let mut pipes = Pipes {
                input: write,
                output: BufReader::new(read),
            };
            pipes.send(INIT.as_bytes()).await;
            pipes.answer().await;
            pipes
                .send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
                .await;
            pipes
        });
        Harness {
            rt,
            pipes: Mutex::new(pipes),
            next: AtomicU64::new(1),
            _tmp: tmp,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let line: Vec<u8> = data.iter().copied().filter(|&b| b != b'\n').collect();
    // The check alone, as both transports run it.
    if let Inbound::Rejected(r) = check_message(&line) {
        let _: Value = serde_json::from_slice(&r.to_line()).unwrap();
    }
    let h = harness();
    let id = format!("probe-{}", h.next.fetch_add(1, Ordering::Relaxed));
    let mut pipes = h.pipes.lock().unwrap();
    h.rt.block_on(async {
        pipes.send(&line).await;
        let probe = format!(r#"{{"jsonrpc":"2.0","id":"{id}","method":"ping"}}"#);
        pipes.send(probe.as_bytes()).await;
        // Answers to the input (if any), then the probe's.
        while pipes.answer().await["id"] != Value::String(id.clone()) {}
    });
});
