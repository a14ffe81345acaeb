//! Freshness as MCP clients meet it: `linkly mcp` over stdio, no `linkly serve` started by
//! hand, driven by the official MCP Python SDK (`fresh_stdio.py`): two clients on one data
//! directory; created, modified and deleted files visible in search within 2 s; a modified
//! file read at once shows its new text; a saved note found by its tag in the next call; a
//! killed server replaced on the next call with the index whole.

mod common;

use std::path::Path;
use std::process::Command;

use common::{Env, bin, probe_python};

#[test]
fn two_stdio_clients_see_every_change_without_a_server_started_by_hand() {
    let env = Env::new(&[("start.md", "# Start\n\nThe aardvark eats ants.\n")]);
    let out = env.run(&["folders", "add", env.docs.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fresh_stdio.py");
    let out = Command::new(probe_python())
        .arg(&script)
        .arg(bin())
        .arg(&env.home)
        .arg(&env.docs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let log = fs_err::read_to_string(env.home.join("serve.log")).unwrap_or_default();
    assert!(
        out.status.success(),
        "fresh_stdio.py failed:\n{stdout}\n{stderr}\nserver log:\n{log}"
    );
    let last = stdout.trim_end().lines().last().unwrap_or_default();
    assert!(last.ends_with(" 0 failed"), "{last}\n{stdout}");
    assert!(
        last.starts_with("17 passed"),
        "every check ran: {last}\n{stdout}"
    );
}
