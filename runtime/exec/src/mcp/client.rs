//! The connection to one MCP server through the official Rust SDK (`rmcp`): streamable HTTP or
//! a child process's stdio, the `initialize` handshake, `tools/list` and `tools/call`, each
//! bounded by the server's `timeout`; what a call answered, sorted into the classes an episode
//! acts on (`super::Outcome`).

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use wrl_plan::params::{McpServer, McpStdio};

use super::Outcome;
use super::schema::Listed;

/// A connected server.
pub struct Connection {
    service: RunningService<RoleClient, ()>,
    timeout: Duration,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

/// Connects to `server` and completes the `initialize` handshake within its `timeout`; why
/// not, in words that name the server.
pub async fn connect(server: &McpServer) -> Result<Connection, String> {
    let timeout = server.limits().timeout.duration().max(Duration::from_millis(1));
    let name = server.name();
    let started = async {
        match server {
            McpServer::Http(h) => {
                let mut cfg = StreamableHttpClientTransportConfig::with_uri(h.url.as_str());
                if !h.api_key_env.is_empty() {
                    let key = std::env::var(&h.api_key_env).map_err(|_| {
                        format!(
                            "the environment variable `{}` (its `api_key_env`) is not set",
                            h.api_key_env
                        )
                    })?;
                    cfg = cfg.auth_header(key);
                }
                let transport = StreamableHttpClientTransport::from_config(cfg);
                ().serve(transport).await.map_err(|e| e.to_string())
            }
            McpServer::Stdio(McpStdio {
                command,
                args,
                // The limits are the caller's (`McpServer::limits`).
                timeout: _,
                result_chars: _,
                max_calls: _,
                on_error: _,
            }) => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                let transport = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map(|(t, _)| t)
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                ().serve(transport).await.map_err(|e| e.to_string())
            }
        }
    };
    match tokio::time::timeout(timeout, started).await {
        Ok(Ok(service)) => Ok(Connection { service, timeout }),
        Ok(Err(why)) => Err(format!("MCP server `{name}` cannot be reached: {}", plain(&why))),
        Err(_) => {
            Err(format!("MCP server `{name}` did not complete `initialize` within {timeout:.0?}"))
        }
    }
}

/// An SDK error without the transport's Rust type names (`… [rmcp::transport::…] error: Client
/// error: error sending request …`): its last `error: ` clause, which says what happened.
fn plain(why: &str) -> &str {
    why.rfind("] error: ").map_or(why, |i| &why[i + "] error: ".len()..])
}

impl Connection {
    /// Every tool the server lists (`tools/list`, all pages).
    pub async fn list(&self) -> Result<Vec<Listed>, String> {
        let tools = tokio::time::timeout(self.timeout, self.service.list_all_tools())
            .await
            .map_err(|_| format!("`tools/list` took over {:.0?}", self.timeout))?
            .map_err(|e| format!("`tools/list` failed: {e}"))?;
        Ok(tools
            .into_iter()
            .map(|t| Listed { name: t.name.to_string(), input_schema: (*t.input_schema).clone() })
            .collect())
    }

    /// Calls `tool` with `arguments` (`tools/call`): its text, the tool's own error (`isError`,
    /// a JSON-RPC error, the timeout), or a server that could not be reached.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Outcome {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match tokio::time::timeout(self.timeout, self.service.call_tool(params)).await {
            Err(_) => Outcome::ToolError(format!(
                "the call took over {:.0?} and was abandoned",
                self.timeout
            )),
            Ok(Ok(r)) => {
                let text = text_of(&r.content, r.structured_content.as_ref());
                if r.is_error == Some(true) {
                    Outcome::ToolError(text)
                } else {
                    Outcome::Text(text)
                }
            }
            Ok(Err(rmcp::ServiceError::McpError(e))) => Outcome::ToolError(e.message.to_string()),
            Ok(Err(rmcp::ServiceError::Timeout { timeout })) => {
                Outcome::ToolError(format!("the call took over {timeout:.0?} and was abandoned"))
            }
            Ok(Err(other)) => Outcome::Unreachable(other.to_string()),
        }
    }

    /// Ends the session (a child process is stopped).
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

/// A result's content as the policy reads it: its text blocks, one per line; other blocks by
/// what they are; the structured result when there is no content.
pub fn text_of(content: &[ContentBlock], structured: Option<&serde_json::Value>) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in content {
        match c {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => parts.push(format!("[image {}]", i.mime_type)),
            ContentBlock::Audio(a) => parts.push(format!("[audio {}]", a.mime_type)),
            ContentBlock::Resource(r) => parts.push(match &r.resource {
                rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
                // A blob, or a kind a later protocol adds (rmcp's enum is non-exhaustive).
                _ => "[resource]".to_string(),
            }),
            ContentBlock::ResourceLink(l) => parts.push(format!("[link {}]", l.uri)),
            #[allow(unreachable_patterns)]
            _ => parts.push("[content]".into()),
        }
    }
    if parts.is_empty()
        && let Some(s) = structured
    {
        parts.push(s.to_string());
    }
    parts.join("\n")
}
