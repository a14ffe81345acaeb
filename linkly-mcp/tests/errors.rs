//! Errors over MCP keep their meaning: a tool's `INVALID_ARGUMENT` carries its `details`
//! (the parameter and its allowed range or values) in a real session, and an unknown tool is
//! the server's JSON-RPC `-32602`, seen by the client as a typed rejection.

use crate::common;

use common::{HttpServer, empty_linkly, serve_http};
use linkly_http::HttpOptions;
use linkly_mcp::{McpOptions, RemoteClient, RemoteError};
use serde_json::{Value, json};

/// A server on loopback over an empty index, and a client session with it.
async fn session() -> (RemoteClient, HttpServer, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let server = serve_http(
        HttpOptions::default(),
        McpOptions::default(),
        empty_linkly(&tmp),
    )
    .await;
    let client = RemoteClient::connect(&server.endpoint, None).await.unwrap();
    (client, server, tmp)
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
