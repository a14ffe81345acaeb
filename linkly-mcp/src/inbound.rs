//! The check every incoming JSON-RPC message goes through before rmcp sees it, on both
//! transports: what cannot be parsed is answered `-32700` (id null), what is JSON but not a
//! message `-32600`, a standard request whose `params` do not fit `-32602` (rmcp would take it
//! for an unknown method and answer `-32601`). Nothing here panics on any input: serde_json
//! stops at 128 levels of nesting, so a deeply nested line is a parse error, not a stack
//! overflow.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::{Value, json};

/// JSON-RPC: the message is not valid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: valid JSON, but not a JSON-RPC message the server understands.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: a known method with parameters of the wrong shape.
pub const INVALID_PARAMS: i64 = -32602;

/// The largest message accepted, in bytes (one stdio line, one HTTP body): a 10 MiB note plus
/// its JSON escaping and envelope.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The requests of the MCP schema that rmcp parses into their own types: one of these whose
/// params do not fit is an invalid-params error, not an unknown method.
const STANDARD_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/directory/read",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
];

/// What became of one incoming message.
#[derive(Debug)]
pub enum Inbound {
    /// A message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// A message refused with a JSON-RPC error, to be answered.
    Rejected(Rejection),
    /// A notification that cannot be understood: dropped without an answer (JSON-RPC never
    /// answers a notification).
    Ignored,
}

/// A refused message: the JSON-RPC error it is answered with.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The JSON-RPC error code.
    pub code: i64,
    /// What was wrong.
    pub message: String,
    /// The request's id when it could be read (a string or a number), else null.
    pub id: Value,
}

impl Rejection {
    /// The error response, as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": { "code": self.code, "message": self.message },
        })
    }

    /// The error response as one line of the stdio transport (with its newline).
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = self.to_json().to_string().into_bytes();
        line.push(b'\n');
        line
    }
}

/// Checks one message (a stdio line without its newline, or an HTTP body).
pub fn check_message(bytes: &[u8]) -> Inbound {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return Inbound::Rejected(Rejection {
                code: PARSE_ERROR,
                message: format!("Parse error: {e}"),
                id: Value::Null,
            });
        }
    };
    let Value::Object(object) = &value else {
        let what = if value.is_array() {
            "batches are not supported"
        } else {
            "a message must be a JSON object"
        };
        return Inbound::Rejected(Rejection {
            code: INVALID_REQUEST,
            message: format!("Invalid Request: {what}"),
            id: Value::Null,
        });
    };
    let id = match object.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    let method = object
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let is_notification = method.is_some() && !object.contains_key("id");
    // A well-formed request of a standard method: what fails to parse can only be its params.
    let standard = object.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && !id.is_null()
        && method
            .as_deref()
            .is_some_and(|m| STANDARD_REQUESTS.contains(&m));
    let invalid_params = || {
        Inbound::Rejected(Rejection {
            code: INVALID_PARAMS,
            message: format!(
                "Invalid params for {}: see the method's schema (tools/call takes \
                 {{\"name\": string, \"arguments\": object}})",
                method.as_deref().unwrap_or_default()
            ),
            id: id.clone(),
        })
    };
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(JsonRpcMessage::Request(request))
            if standard && matches!(request.request, ClientRequest::CustomRequest(_)) =>
        {
            invalid_params()
        }
        Ok(message) => Inbound::Message(Box::new(message)),
        Err(_) if is_notification => Inbound::Ignored,
        Err(_) if standard => invalid_params(),
        Err(e) => Inbound::Rejected(Rejection {
            code: INVALID_REQUEST,
            message: format!("Invalid Request: {e}"),
            id,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> Option<(i64, Value)> {
        match check_message(line.as_bytes()) {
            Inbound::Rejected(r) => Some((r.code, r.id)),
            _ => None,
        }
    }

    #[test]
    fn codes() {
        assert_eq!(code("{"), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(code(r#"{"a":"\ud800"}"#), Some((PARSE_ERROR, Value::Null)));
        assert_eq!(code(&"[".repeat(100_000)), Some((PARSE_ERROR, Value::Null)));
        assert!(matches!(
            check_message(b"{\"x\":\"\xff\"}"),
            Inbound::Rejected(Rejection {
                code: PARSE_ERROR,
                ..
            })
        ));
        assert_eq!(code("[]"), Some((INVALID_REQUEST, Value::Null)));
        assert_eq!(code("3"), Some((INVALID_REQUEST, Value::Null)));
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":[1]}}"#
            ),
            Some((INVALID_PARAMS, json!(7)))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":3}"#),
            Some((INVALID_PARAMS, json!("a")))
        );
        assert!(matches!(
            check_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Inbound::Message(_)
        ));
        assert!(matches!(
            check_message(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}"#
            ),
            Inbound::Message(_)
        ));
        assert!(matches!(
            check_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":7}"#),
            Inbound::Message(_) | Inbound::Ignored
        ));
    }
}
