//! One tool declared once, served everywhere: the registry's `line_count` example tool (the
//! `example-tool` feature) is listed and called through the CLI's `linkly call`, MCP over
//! stdio and the gateway, none of which names it.

use serde_json::{Value, json};

use crate::common::{Env, StdioClient};
use crate::gateway::{Gateway, add_user, local_libraries, publish};

const TOOL: &str = "line_count";
const TEXT: &str = "The zebra crossing.\nSecond line.\nThird line.\nFourth.\nFifth and last.\n";

/// A `line_count` JSON answer's count, asserting it was not an error.
fn lines_of(text: &str, error: bool) -> Value {
    assert!(!error, "{text}");
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    v["lines"].clone()
}

#[test]
fn a_tool_added_to_the_registry_is_listed_and_called_by_every_front_end() {
    let lines = json!(TEXT.lines().count());
    let env = Env::new(&[("zebra.txt", TEXT)]);
    env.index();
    let id = env.doc_id("zebra");
    let args = json!({"doc_id": id, "output_format": "json"});

    // The CLI: `linkly call` knows no tool by name.
    let out = env.run(&["call", TOOL, &args.to_string()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        lines_of(&String::from_utf8_lossy(&out.stdout), false),
        lines
    );
    // Its refusal names the parameter, as every tool's does.
    let refused = env.run_failing(&["call", TOOL, "{\"doc_id\": 5}"]);
    assert!(refused.contains("doc_id"), "{refused}");

    // MCP over stdio, as clients start it.
    let mut client = StdioClient::start(env.cmd().arg("mcp"));
    let listed = client.request("tools/list", json!({}));
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&TOOL), "{names:?}");
    let (text, error) = client.call(TOOL, args.clone());
    assert_eq!(lines_of(&text, error), lines);

    // The gateway routes it by what it declares it reaches (one document), not by its name.
    let tmp = tempfile::tempdir().unwrap();
    let gw_home = tmp.path().join("gateway-home");
    let gateway = Gateway::start(&gw_home, None);
    let ann = add_user(&gw_home, "ann", None);
    let home = tmp.path().join("ann-home");
    local_libraries(
        &home,
        &tmp.path().join("ann-docs"),
        &[("counted", &[("zebra.txt", TEXT)])],
    );
    publish(&home, "counted", &gateway, &ann, "public");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let remote = linkly_mcp::RemoteClient::connect(&gateway.mcp(), Some(&ann))
            .await
            .unwrap();
        let names = remote.tool_names().await.unwrap();
        assert!(names.iter().any(|n| n == TOOL), "{names:?}");
        let linked = remote
            .call("library_link", json!({"library": "cloud://ann/counted"}))
            .await
            .unwrap();
        assert!(!linked.is_error, "{}", linked.text);
        let found = remote
            .call(
                "search",
                json!({"query": "zebra", "library": "cloud://ann/counted", "output_format": "json"}),
            )
            .await
            .unwrap();
        let found: Value = serde_json::from_str(&found.text).unwrap();
        let cloud_id = found["results"][0]["doc_id"].as_str().unwrap().to_string();
        assert!(cloud_id.starts_with("cloud://ann/counted/"), "{found}");
        let out = remote
            .call(TOOL, json!({"doc_id": cloud_id, "output_format": "json"}))
            .await
            .unwrap();
        assert_eq!(lines_of(&out.text, out.is_error), lines);
        remote.close().await;
    });
}
