//! `linkly mcp --remote <URL> --token <T>`: one stdio MCP server with the registry's tools and
//! the gateway's own. The registry's tools run on the local index, as `linkly mcp` serves them,
//! except when a call names a `cloud://` library or document id (where the tool's `Reach` says
//! to look): that call, and every call of the gateway's own tools (`library_search`,
//! `library_link`), goes to the gateway. `list_libraries` answers with both lists (local first).
//!
//! The gateway session is opened lazily and opened again once when the transport fails (the
//! gateway restarted, say), as `linkly_mcp::BridgeServer` does; while the gateway is down the
//! local tools keep answering.

use std::sync::Arc;

use linkly_mcp::{INSTRUCTIONS, LinklyServer, RemoteClient, RemoteError, SERVER_NAME};
use linkly_tools::{Linkly, ListLibrariesParams, Reach, TOOLS, ToolOutput, ToolParams};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::{GatewayError, Result};

/// What the router tells clients at `initialize`, after the local server's instructions.
const CLOUD_INSTRUCTIONS: &str = " Cloud: `library_search` finds libraries others published \
on the Linkly Cloud gateway; `library_link` links one (it takes a slot of the user's plan); \
then pass its `cloud://<owner>/<slug>` as `library` to search, list, explore or find_paths, and \
use its document ids (`cloud://<owner>/<slug>/<n>`) with outline, grep and read. \
`list_libraries` lists the local libraries, then the linked cloud ones.";

/// Where a call goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The local index.
    Local,
    /// The gateway.
    Cloud,
    /// Both: `list_libraries`.
    Both,
    /// Refused: local and cloud document ids in one call.
    Mixed,
}

/// Where a tool call goes, from the registry's declaration of the tool (`linkly_tools::TOOLS`):
/// a tool the registry does not have (the gateway's own, `library_search` and `library_link`)
/// to the gateway; `list_libraries` to both; a call whose library or documents (the parameter
/// its `Reach` names) are `cloud://` ones to the gateway; the rest to the local index.
pub fn route(name: &str, args: &Value) -> Route {
    let Some(spec) = TOOLS.iter().find(|t| t.name == name) else {
        return Route::Cloud;
    };
    let is_cloud = |v: &Value| {
        v.as_str()
            .is_some_and(|s| s.trim_start().starts_with(crate::model::LibraryKey::PREFIX))
    };
    match spec.reach {
        Reach::Libraries if spec.name == ListLibrariesParams::NAME => Route::Both,
        Reach::Documents(field) => match args.get(field) {
            Some(Value::Array(ids)) => {
                let cloud = ids.iter().filter(|v| is_cloud(v)).count();
                match cloud {
                    0 => Route::Local,
                    n if n == ids.len() => Route::Cloud,
                    _ => Route::Mixed,
                }
            }
            Some(id) if is_cloud(id) => Route::Cloud,
            _ => Route::Local,
        },
        Reach::Libraries | Reach::Library if args.get("library").is_some_and(is_cloud) => {
            Route::Cloud
        }
        _ => Route::Local,
    }
}

/// The stdio router of `linkly mcp --remote`.
#[derive(Clone)]
pub struct RemoteRouter {
    local: Arc<Linkly>,
    url: String,
    token: String,
    session: Arc<tokio::sync::Mutex<Option<Arc<RemoteClient>>>>,
    cloud_tools: Arc<tokio::sync::Mutex<Option<Vec<Tool>>>>,
}

impl std::fmt::Debug for RemoteRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteRouter")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl RemoteRouter {
    /// A router over the local tools and the gateway's MCP endpoint `url` (`…/mcp`; a base URL
    /// gets `/mcp` appended), signed in with `token`.
    pub fn new(local: Arc<Linkly>, url: &str, token: &str) -> RemoteRouter {
        RemoteRouter {
            local,
            url: mcp_url(url),
            token: token.trim().to_string(),
            session: Arc::new(tokio::sync::Mutex::new(None)),
            cloud_tools: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// The gateway's MCP endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Opens the gateway session now (the router opens it on demand otherwise): an unreachable
    /// gateway or a refused token shows here.
    pub async fn check(&self) -> Result<()> {
        self.session().await.map(|_| ()).map_err(remote_failure)
    }

    async fn session(&self) -> Result<Arc<RemoteClient>, RemoteError> {
        let mut guard = self.session.lock().await;
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let client = Arc::new(RemoteClient::connect(&self.url, Some(&self.token)).await?);
        *guard = Some(client.clone());
        Ok(client)
    }

    async fn drop_session(&self, lost: &Arc<RemoteClient>) {
        let mut guard = self.session.lock().await;
        if guard.as_ref().is_some_and(|c| Arc::ptr_eq(c, lost)) {
            *guard = None;
        }
    }

    /// Calls a tool on the gateway, with one new session and retry when the transport failed
    /// (a tool the registry declares not idempotent, `note_save`, only when it never left).
    pub async fn call_cloud(&self, name: &str, args: Value) -> Result<ToolOutput, RemoteError> {
        let session = self.session().await?;
        let repeatable = !TOOLS.iter().any(|t| t.name == name && !t.idempotent);
        match session.call(name, args.clone()).await {
            Err(RemoteError::Transport { message, unsent }) if unsent || repeatable => {
                tracing::info!(error = %message, "the gateway went away; reconnecting");
                self.drop_session(&session).await;
                self.session().await?.call(name, args).await
            }
            other => other,
        }
    }

    /// The gateway's `library_search` and `library_link`, as it lists them (fetched once).
    pub async fn cloud_tools(&self) -> Result<Vec<Tool>, RemoteError> {
        if let Some(t) = self.cloud_tools.lock().await.as_ref() {
            return Ok(t.clone());
        }
        let session = self.session().await?;
        let tools = match session.tools().await {
            Err(RemoteError::Transport { .. }) => {
                self.drop_session(&session).await;
                self.session().await?.tools().await
            }
            other => other,
        }?;
        let cloud: Vec<Tool> = tools
            .into_iter()
            .filter(|t| !TOOLS.iter().any(|local| local.name == t.name))
            .collect();
        *self.cloud_tools.lock().await = Some(cloud.clone());
        Ok(cloud)
    }

    async fn call_local(&self, name: &str, args: Value) -> Result<ToolOutput, McpError> {
        let linkly = self.local.clone();
        let name = name.to_string();
        tokio::task::spawn_blocking(move || linkly.call(&name, args))
            .await
            .map_err(|e| McpError::internal_error(format!("tool task failed: {e}"), None))?
            .map_err(|unknown| McpError::invalid_params(unknown.to_string(), None))
    }

    /// Routes one tool call (see [`route`]).
    pub async fn call(&self, name: &str, args: Value) -> Result<ToolOutput, McpError> {
        match route(name, &args) {
            Route::Local => self.call_local(name, args).await,
            Route::Cloud => self.call_cloud(name, args).await.map_err(cloud_error),
            Route::Mixed => Ok(ToolOutput {
                text: "Error [INVALID_ARGUMENT]: doc_ids mixes local and cloud:// document ids; \
                       call once for the local ones and once for the cloud ones"
                    .to_string(),
                is_error: true,
                matched: None,
            }),
            Route::Both => {
                let local = self.call_local(name, args.clone()).await?;
                let cloud = self.call_cloud(name, args.clone()).await;
                Ok(merge_libraries(local, cloud))
            }
        }
    }
}

/// `…/mcp` for a base URL, the URL itself when it names the endpoint already.
fn mcp_url(url: &str) -> String {
    let t = url.trim().trim_end_matches('/');
    if t.ends_with("/mcp") {
        t.to_string()
    } else {
        format!("{t}/mcp")
    }
}

fn remote_failure(e: RemoteError) -> GatewayError {
    match e {
        RemoteError::Connect { url, message }
            if message.contains("401")
                || message.to_ascii_lowercase().contains("unauthorized")
                || message.to_ascii_lowercase().contains("auth required") =>
        {
            GatewayError::Unauthorized(format!(
                "the gateway at {url} refused the token (401): check --token or LINKLY_GATEWAY_TOKEN"
            ))
        }
        e => GatewayError::Io(std::io::Error::other(e.to_string())),
    }
}

fn cloud_error(e: RemoteError) -> McpError {
    match e {
        RemoteError::Rejected(data) => data,
        e => McpError::internal_error(format!("Linkly Cloud gateway: {e}"), None),
    }
}

/// `list_libraries` from both sides: the two Markdown answers one after the other (local
/// first), or, when the local answer is a JSON object, the `libraries` arrays merged. When the
/// gateway failed, the local answer with a word on why the cloud libraries are missing.
pub fn merge_libraries(local: ToolOutput, cloud: Result<ToolOutput, RemoteError>) -> ToolOutput {
    if local.is_error {
        return local;
    }
    let json = serde_json::from_str::<Value>(&local.text)
        .is_ok_and(|v| v.get("libraries").is_some_and(Value::is_array));
    let cloud_failure = match &cloud {
        Err(e) => Some(e.to_string()),
        Ok(c) if c.is_error => Some(c.text.clone()),
        Ok(_) => None,
    };
    if json {
        let Ok(mut merged) = serde_json::from_str::<Value>(&local.text) else {
            return local;
        };
        match (&cloud, cloud_failure) {
            (Ok(c), None) => {
                let theirs = serde_json::from_str::<Value>(&c.text)
                    .ok()
                    .and_then(|v| v.get("libraries").and_then(Value::as_array).cloned())
                    .unwrap_or_default();
                if let Some(Value::Array(ours)) = merged.get_mut("libraries") {
                    ours.extend(theirs);
                    let n = ours.len();
                    if let Some(total) = merged.get_mut("total") {
                        *total = Value::from(n);
                    }
                }
            }
            (_, Some(why)) => {
                merged["cloud_error"] = Value::String(why);
            }
            _ => {}
        }
        ToolOutput {
            text: merged.to_string(),
            is_error: false,
            matched: None,
        }
    } else {
        let cloud_text = match (cloud, cloud_failure) {
            (Ok(c), None) => c.text,
            (_, Some(why)) => format!("Cloud libraries are unavailable: {why}"),
            _ => String::new(),
        };
        ToolOutput {
            text: format!("{}\n\n{}", local.text.trim_end(), cloud_text),
            is_error: false,
            matched: None,
        }
    }
}

impl ServerHandler for RemoteRouter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(format!("{INSTRUCTIONS}{CLOUD_INSTRUCTIONS}"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools = LinklyServer::tools();
        match self.cloud_tools().await {
            Ok(cloud) => tools.extend(cloud),
            Err(e) => {
                tracing::warn!(error = %e, "the gateway's tools are unavailable; listing the local ones")
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let output = self.call(&request.name, args).await?;
        Ok(linkly_mcp::answer::call_result(output).into())
    }
}

/// Serves the router over stdin/stdout until the client closes the stream.
pub async fn serve_stdio_remote(router: RemoteRouter) -> Result<()> {
    let service = router
        .serve(linkly_mcp::StdioTransport::new(
            tokio::io::stdin(),
            tokio::io::stdout(),
        ))
        .await
        .map_err(|e| GatewayError::Io(std::io::Error::other(e.to_string())))?;
    service
        .waiting()
        .await
        .map_err(|e| GatewayError::Io(std::io::Error::other(e.to_string())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_go_where_their_library_or_document_lives() {
        assert_eq!(route("library_search", &json!({})), Route::Cloud);
        assert_eq!(
            route("library_link", &json!({"library": "x"})),
            Route::Cloud
        );
        assert_eq!(route("list_libraries", &json!({})), Route::Both);
        assert_eq!(route("search", &json!({"query": "a"})), Route::Local);
        assert_eq!(
            route("search", &json!({"query": "a", "library": "cloud://al/x"})),
            Route::Cloud
        );
        assert_eq!(
            route("search", &json!({"query": "a", "library": "research"})),
            Route::Local
        );
        assert_eq!(
            route("read", &json!({"doc_id": "cloud://a/b/3"})),
            Route::Cloud
        );
        assert_eq!(route("read", &json!({"doc_id": "local://3"})), Route::Local);
        assert_eq!(
            route(
                "outline",
                &json!({"doc_ids": ["cloud://a/b/1", "cloud://a/b/2"]})
            ),
            Route::Cloud
        );
        assert_eq!(
            route(
                "outline",
                &json!({"doc_ids": ["cloud://a/b/1", "local://2"]})
            ),
            Route::Mixed
        );
        assert_eq!(route("outline", &json!({"doc_ids": ["7"]})), Route::Local);
        assert_eq!(route("note_save", &json!({"mode": "create"})), Route::Local);
    }

    #[test]
    fn list_libraries_merges_local_then_cloud() {
        let local = ToolOutput {
            text: json!({"libraries": [{"id": "local://1"}], "total": 1}).to_string(),
            is_error: false,
            matched: None,
        };
        let cloud = ToolOutput {
            text: json!({"libraries": [{"id": "cloud://a/b"}]}).to_string(),
            is_error: false,
            matched: None,
        };
        let merged = merge_libraries(local.clone(), Ok(cloud));
        let v: Value = serde_json::from_str(&merged.text).unwrap();
        assert_eq!(v["libraries"][0]["id"], "local://1");
        assert_eq!(v["libraries"][1]["id"], "cloud://a/b");
        assert_eq!(v["total"], 2);

        let failed = merge_libraries(local, Err(RemoteError::Timeout(60)));
        let v: Value = serde_json::from_str(&failed.text).unwrap();
        assert_eq!(v["libraries"].as_array().unwrap().len(), 1);
        assert!(v["cloud_error"].as_str().unwrap().contains("timed out"));

        let md = merge_libraries(
            ToolOutput {
                text: "## Local\n".into(),
                is_error: false,
                matched: None,
            },
            Ok(ToolOutput {
                text: "## Cloud\n".into(),
                is_error: false,
                matched: None,
            }),
        );
        assert!(md.text.starts_with("## Local") && md.text.contains("## Cloud"));
        let down = merge_libraries(
            ToolOutput {
                text: "## Local\n".into(),
                is_error: false,
                matched: None,
            },
            Err(RemoteError::Timeout(60)),
        );
        assert!(!down.is_error && down.text.contains("Cloud libraries are unavailable"));
    }

    #[test]
    fn endpoints_end_in_mcp() {
        assert_eq!(mcp_url("http://h:1/"), "http://h:1/mcp");
        assert_eq!(mcp_url("http://h:1/mcp"), "http://h:1/mcp");
    }
}
