//! The `/health` answer and the port file, typed once for the server that writes them and the
//! clients (`linkly status`, `linkly mcp`, client mode) that read them.

use linkly_tools::Coverage;
use serde::{Deserialize, Serialize};

/// What the index is doing, as `/health` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexStatus {
    /// Up to date and following changes.
    Watching,
    /// Walking the folders.
    Scanning,
    /// Indexing changed files.
    Indexing,
    /// Up to date, not following changes.
    Idle,
    /// Rebuilding the full-text index from the store (it was lost or inconsistent).
    Rebuilding,
    /// The last sync failed.
    Error,
}

impl IndexStatus {
    /// The token of `/health`.
    pub fn as_str(self) -> &'static str {
        match self {
            IndexStatus::Watching => "watching",
            IndexStatus::Scanning => "scanning",
            IndexStatus::Indexing => "indexing",
            IndexStatus::Idle => "idle",
            IndexStatus::Rebuilding => "rebuilding",
            IndexStatus::Error => "error",
        }
    }
}

/// The JSON body of `GET /health`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// The server's version.
    pub version: String,
    /// Documents in the index.
    pub doc_count: u64,
    /// The MCP endpoint (`http://host:port/mcp`).
    pub mcp_endpoint: String,
    /// What the index is doing.
    pub index_status: IndexStatus,
    /// How fresh the index is (null when it cannot be read).
    pub coverage: Option<Coverage>,
    /// Which process serves, since when, started by whom and how (absent from servers that do
    /// not say: the gateway, older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
}

/// Who started a data directory's server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartedBy {
    /// A person, with `linkly serve`: it runs until stopped.
    Hand,
    /// `linkly mcp`, for its clients (`serve --exit-when-unused`): it stops when they are gone,
    /// and hands over to a server a person starts.
    Background,
}

impl StartedBy {
    /// The token of `/health`.
    pub fn as_str(self) -> &'static str {
        match self {
            StartedBy::Hand => "hand",
            StartedBy::Background => "background",
        }
    }
}

/// The serving process, as `/health` and `linkly status` describe it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Its process id.
    pub pid: u32,
    /// When it started, RFC 3339 UTC.
    pub started_at: String,
    /// Who started it.
    pub started_by: StartedBy,
    /// The options it was started with, as command-line flags (`--lan`, `--port 7000`).
    pub options: Vec<String>,
}

/// The port file (`<data dir>/port`) of a running server: `{"port", "pid"}`, and the
/// control token when the server takes control requests (`POST /control/stop`). The file lies
/// in the data directory (0700), so whoever may read it may stop the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortFile {
    /// The port the server listens on.
    pub port: u16,
    /// The server's process id.
    pub pid: u32,
    /// The token `POST /control/stop` must carry in its `Linkly-Control` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<String>,
    /// The per-start local secret: the person's clients (`linkly mcp`, client mode, `linkly
    /// open`) send it as `Authorization: Bearer …` (see `linkly_http::Gate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl PortFile {
    /// The file's text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The header that carries the control token of a [`PortFile`].
pub const CONTROL_HEADER: &str = "linkly-control";

/// The body of `POST /control/stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopRequest {
    /// A server started by hand takes over: refused (409) unless this server was started in
    /// the background.
    #[serde(default)]
    pub handover: bool,
    /// The process id of whoever asks (for the log).
    #[serde(default)]
    pub by_pid: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_round_trips_with_the_wire_names() {
        let h = Health {
            version: "1.2.3".into(),
            doc_count: 7,
            mcp_endpoint: "http://127.0.0.1:60606/mcp".into(),
            index_status: IndexStatus::Rebuilding,
            coverage: None,
            server: Some(ServerInfo {
                pid: 9,
                started_at: "2026-01-02T03:04:05Z".into(),
                started_by: StartedBy::Background,
                options: vec!["--port".into(), "7000".into()],
            }),
        };
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["index_status"], "rebuilding");
        assert_eq!(v["doc_count"], 7);
        assert!(v["coverage"].is_null());
        assert_eq!(v["server"]["started_by"], "background");
        assert_eq!(
            v["server"]["options"],
            serde_json::json!(["--port", "7000"])
        );
        assert_eq!(serde_json::from_value::<Health>(v).unwrap(), h);
        for s in [
            IndexStatus::Watching,
            IndexStatus::Scanning,
            IndexStatus::Indexing,
            IndexStatus::Idle,
            IndexStatus::Rebuilding,
            IndexStatus::Error,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }

    #[test]
    fn port_file_round_trips() {
        let p = PortFile {
            port: 60606,
            pid: 42,
            control: None,
            secret: None,
        };
        let text = p.to_json();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, serde_json::json!({"port": 60606, "pid": 42}));
        assert_eq!(serde_json::from_str::<PortFile>(&text).unwrap(), p);
        let with = PortFile {
            control: Some("c0ffee".into()),
            ..p
        };
        assert_eq!(
            serde_json::from_str::<PortFile>(&with.to_json()).unwrap(),
            with
        );
        // A health answer of an older server (no `server`) still reads.
        let old = r#"{"version":"0.1.0","doc_count":1,"mcp_endpoint":"x","index_status":"idle","coverage":null}"#;
        assert!(
            serde_json::from_str::<Health>(old)
                .unwrap()
                .server
                .is_none()
        );
        assert!(serde_json::from_str::<PortFile>(r#"{"port": 70000, "pid": 1}"#).is_err());
    }
}
