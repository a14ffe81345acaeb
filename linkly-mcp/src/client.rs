//! An MCP client over Streamable HTTP, for front ends that forward tool calls to a running
//! server (the CLI's client mode, `linkly mcp --endpoint`, `doctor`).

use std::time::Duration;

use linkly_tools::ToolOutput;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};

/// The name the client reports in `clientInfo`.
pub const CLIENT_NAME: &str = "linkly-cli";

/// A connected MCP session with a Linkly server.
pub struct RemoteClient {
    service: RunningService<RoleClient, ClientConfig>,
}

impl std::fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteClient").finish_non_exhaustive()
    }
}

/// Why a remote call failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The session could not be set up.
    #[error("cannot connect to the Linkly server at {url}: {message}")]
    Connect {
        /// The MCP endpoint.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The server refused the request with a JSON-RPC error (`-32602` for an unknown tool,
    /// say); a bridge passes it on as it came.
    #[error("the server refused the request: {}", .0.message)]
    Rejected(rmcp::model::ErrorData),
    /// Another protocol failure (an unexpected answer, a cancelled request).
    #[error("{0}")]
    Protocol(String),
    /// The connection to the server is lost (it stopped, or restarted): a new session may
    /// succeed.
    #[error("connection to the Linkly server lost: {message}")]
    Transport {
        /// What the transport said.
        message: String,
        /// True when the request never left (so replaying it cannot do anything twice).
        unsent: bool,
    },
    /// The call timed out.
    #[error("request timed out after {0} seconds")]
    Timeout(u64),
}

fn service_error(e: rmcp::ServiceError) -> RemoteError {
    match e {
        rmcp::ServiceError::TransportSend(_) => RemoteError::Transport {
            message: e.to_string(),
            unsent: true,
        },
        rmcp::ServiceError::TransportClosed => RemoteError::Transport {
            message: e.to_string(),
            unsent: false,
        },
        rmcp::ServiceError::McpError(data) => RemoteError::Rejected(data),
        other => RemoteError::Protocol(other.to_string()),
    }
}

impl RemoteClient {
    /// Connects to `url` (the `/mcp` endpoint), with a bearer token when given.
    pub async fn connect(url: &str, token: Option<&str>) -> Result<RemoteClient, RemoteError> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(t) = token {
            config = config.auth_header(t.to_string());
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(CLIENT_NAME, env!("CARGO_PKG_VERSION")),
        );
        let service = tokio::time::timeout(Duration::from_secs(30), info.serve(transport))
            .await
            .map_err(|_| RemoteError::Timeout(30))?
            .map_err(|e| RemoteError::Connect {
                url: url.to_string(),
                message: e.to_string(),
            })?;
        Ok(RemoteClient { service })
    }

    /// Calls a tool; the text comes back as the server rendered it.
    pub async fn call(
        &self,
        name: &str,
        args: serde_json::Value,
    ) -> Result<ToolOutput, RemoteError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let serde_json::Value::Object(map) = args {
            params = params.with_arguments(map);
        }
        let result = tokio::time::timeout(
            Duration::from_secs(60),
            self.service.peer().call_tool(params),
        )
        .await
        .map_err(|_| RemoteError::Timeout(60))?
        .map_err(service_error)?;
        Ok(crate::answer::tool_output(&result))
    }

    /// The server's tools, as it lists them.
    pub async fn tools(&self) -> Result<Vec<rmcp::model::Tool>, RemoteError> {
        self.service
            .peer()
            .list_all_tools()
            .await
            .map_err(service_error)
    }

    /// The names of the server's tools.
    pub async fn tool_names(&self) -> Result<Vec<String>, RemoteError> {
        Ok(self
            .tools()
            .await?
            .into_iter()
            .map(|t| t.name.to_string())
            .collect())
    }

    /// Ends the session.
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}
