//! Errors over MCP keep their meaning: a tool's `INVALID_ARGUMENT` carries its `details`
//! (the parameter and its allowed range or values) in a real session, and an unknown tool is
//! the server's JSON-RPC `-32602`, seen by the client as a typed rejection.

use crate::common;

use std::net::{IpAddr, Ipv4Addr};

use common::{empty_linkly, serve_http_until_stopped};
use linkly_mcp::{HttpOptions, RemoteClient, RemoteError, bind_http};
use serde_json::{Value, json};

/// A server on loopback over an empty index, and a client session with it.
async fn session() -> (
    RemoteClient,
    tokio::sync::oneshot::Sender<()>,
    tempfile::TempDir,
) {
    let tmp = tempfile::tempdir().unwrap();
    let bound = bind_http(HttpOptions {
        bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
        port: 0,
        port_attempts: 1,
        ..HttpOptions::default()
    })
    .await
    .unwrap();
    let endpoint = bound.endpoint();
    let stop = serve_http_until_stopped(bound, empty_linkly(&tmp));
    let client = RemoteClient::connect(&endpoint, None).await.unwrap();
    (client, stop, tmp)
}

#[tokio::test]
async fn invalid_arguments_carry_their_details_over_mcp() {
    let (client, _stop, _tmp) = session().await;

    let out = client
        .call(
            "search",
            json!({"query": "budget", "limit": 500, "output_format": "json"}),
        )
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.text);
    let error: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(
        error,
        json!({"error": {
            "code": "INVALID_ARGUMENT",
            "message": "limit must be between 1 and 50 (got 500)",
            "details": {"parameter": "limit", "minimum": 1, "maximum": 50, "received": 500},
        }})
    );

    let out = client
        .call(
            "grep",
            json!({"pattern": "x", "doc_id": "local://1", "output_mode": "everything", "output_format": "json"}),
        )
        .await
        .unwrap();
    assert!(out.is_error, "{}", out.text);
    let error: Value = serde_json::from_str(&out.text).unwrap();
    assert_eq!(error["error"]["code"], "INVALID_ARGUMENT", "{error}");
    let details = &error["error"]["details"];
    assert_eq!(
        *details,
        json!({"parameter": "output_mode", "allowed": ["content", "count"], "received": "everything"}),
        "{error}"
    );

    // Markdown keeps its one line: the code in brackets, then what to do.
    let out = client
        .call("search", json!({"query": "budget", "limit": 500}))
        .await
        .unwrap();
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "[INVALID_ARGUMENT] limit must be between 1 and 50 (got 500)"
    );
}

#[tokio::test]
async fn an_unknown_tool_is_a_typed_json_rpc_rejection() {
    let (client, _stop, _tmp) = session().await;
    match client.call("no_such_tool", json!({})).await {
        Err(RemoteError::Rejected(data)) => {
            assert_eq!(data.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(data.message.contains("no_such_tool"), "{}", data.message);
        }
        other => panic!("expected a JSON-RPC rejection, got {other:?}"),
    }
}
