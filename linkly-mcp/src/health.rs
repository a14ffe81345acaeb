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
}

/// The port file (`<data dir>/port`) of a running server: `{"port", "pid"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortFile {
    /// The port the server listens on.
    pub port: u16,
    /// The server's process id.
    pub pid: u32,
}

impl PortFile {
    /// The file's text.
    pub fn to_json(&self) -> String {
        serde_json::json!({ "port": self.port, "pid": self.pid }).to_string()
    }
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
        };
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(v["index_status"], "rebuilding");
        assert_eq!(v["doc_count"], 7);
        assert!(v["coverage"].is_null());
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
        };
        let text = p.to_json();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v, serde_json::json!({"port": 60606, "pid": 42}));
        assert_eq!(serde_json::from_str::<PortFile>(&text).unwrap(), p);
        assert!(serde_json::from_str::<PortFile>(r#"{"port": 70000, "pid": 1}"#).is_err());
    }
}
