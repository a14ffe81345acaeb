//! Freshness as MCP clients meet it: `linkly mcp` over stdio, no `linkly serve` started by
//! hand, driven by the official MCP Python SDK (`fresh_stdio.py`): two clients on one data
//! directory; created, modified and deleted files visible in search within 2 s; a modified
//! file read at once shows its new text; a saved note found by its tag in the next call; a
//! killed server replaced on the next call with the index whole.

use crate::common;

use common::Env;

#[test]
fn two_stdio_clients_see_every_change_without_a_server_started_by_hand() {
    let env = Env::new(&[("start.md", "# Start\n\nThe aardvark eats ants.\n")]);
    env.run_ok(&["folders", "add", env.docs.to_str().unwrap()]);
    let (last, stdout) = env.stdio_scenario("fresh_stdio.py", &[&env.docs]);
    assert!(last.ends_with(" 0 failed"), "{last}\n{stdout}");
    assert!(
        last.starts_with("17 passed"),
        "every check ran: {last}\n{stdout}"
    );
}
