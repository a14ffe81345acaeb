//! The stdio transport: newline-delimited JSON-RPC, as rmcp's own, except that a line that
//! cannot be understood is answered (`-32700` with a null id for what is not JSON, see
//! [`crate::inbound`]) instead of dropped, so a client never waits for its own timeout.

use std::io;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::inbound::{INVALID_REQUEST, Inbound, MAX_MESSAGE_BYTES, Rejection, check_message};

/// How many outgoing lines may wait for the writer.
const QUEUE: usize = 64;

/// A server transport over a reader and a writer of newline-delimited JSON-RPC (stdin and
/// stdout for `linkly mcp`). Every line is checked by [`check_message`]: messages go to rmcp,
/// refusals are answered here, and the transport keeps serving.
pub struct StdioTransport<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// The rest of an over-long line is being skipped.
    discarding: bool,
    /// An error answer not yet handed to the writer.
    pending: Option<Vec<u8>>,
    tx: Option<mpsc::Sender<Vec<u8>>>,
    writer: Option<JoinHandle<io::Result<()>>>,
    max_line: usize,
}

impl<R> std::fmt::Debug for StdioTransport<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport").finish_non_exhaustive()
    }
}

enum Line {
    Complete,
    TooLong,
    Eof,
}

impl<R: AsyncRead + Unpin + Send + 'static> StdioTransport<R> {
    /// A transport reading `read` and writing `write`; must be called inside a Tokio runtime
    /// (the writer is a task of its own, so answers and refusals never interleave mid-line).
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W) -> StdioTransport<R> {
        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(QUEUE);
        let writer = tokio::spawn(async move {
            let mut write = write;
            while let Some(line) = rx.recv().await {
                write.write_all(&line).await?;
                write.flush().await?;
            }
            write.shutdown().await
        });
        StdioTransport {
            reader: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            pending: None,
            tx: Some(tx),
            writer: Some(writer),
            max_line: MAX_MESSAGE_BYTES,
        }
    }

    /// Reads up to the next newline into `self.line`, at most `max_line` bytes. Cancel-safe:
    /// bytes read stay in `self.line` (rmcp polls `receive` inside a `select!`).
    async fn read_line(&mut self) -> io::Result<Line> {
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                return Ok(if self.line.is_empty() || self.discarding {
                    Line::Eof
                } else {
                    // A last line without its newline is still a message.
                    Line::Complete
                });
            }
            let (chunk, used, ends) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            if !self.discarding {
                if self.line.len() + chunk.len() > self.max_line {
                    self.discarding = true;
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            self.reader.consume(used);
            if ends {
                if std::mem::take(&mut self.discarding) {
                    return Ok(Line::TooLong);
                }
                return Ok(Line::Complete);
            }
        }
    }
}

fn broken_pipe() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the stdio writer has stopped")
}

impl<R: AsyncRead + Unpin + Send + 'static> Transport<RoleServer> for StdioTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let tx = self.tx.clone();
        let line = serde_json::to_vec(&item).map(|mut l| {
            l.push(b'\n');
            l
        });
        async move {
            let line = line.map_err(io::Error::other)?;
            tx.ok_or_else(broken_pipe)?
                .send(line)
                .await
                .map_err(|_| broken_pipe())
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            if self.pending.is_some() {
                let permit = self.tx.as_ref()?.reserve().await.ok()?;
                if let Some(answer) = self.pending.take() {
                    permit.send(answer);
                }
            }
            let read = match self.read_line().await {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the MCP input");
                    return None;
                }
            };
            let checked = match read {
                Line::Eof => return None,
                Line::TooLong => Inbound::Rejected(Rejection {
                    code: INVALID_REQUEST,
                    message: format!(
                        "Invalid Request: message longer than {} bytes",
                        self.max_line
                    ),
                    id: serde_json::Value::Null,
                }),
                Line::Complete => {
                    let line = std::mem::take(&mut self.line);
                    let trimmed = line.strip_suffix(b"\r").unwrap_or(&line);
                    if trimmed.iter().all(u8::is_ascii_whitespace) {
                        self.line = line;
                        self.line.clear();
                        continue;
                    }
                    let checked = check_message(trimmed);
                    // Keep the buffer's capacity for the next line.
                    self.line = line;
                    self.line.clear();
                    checked
                }
            };
            match checked {
                Inbound::Message(message) => return Some(*message),
                Inbound::Rejected(rejection) => {
                    tracing::debug!(code = rejection.code, message = %rejection.message, "refused an MCP message");
                    self.pending = Some(rejection.to_line());
                }
                Inbound::Ignored => tracing::debug!("ignored a notification it cannot read"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // Once every sender is gone the writer drains its queue and stops.
        drop(self.tx.take());
        if let Some(writer) = self.writer.take() {
            match tokio::time::timeout(Duration::from_secs(5), writer).await {
                Ok(Ok(result)) => result?,
                Ok(Err(e)) => return Err(io::Error::other(e)),
                Err(_) => tracing::warn!("the MCP output did not drain within 5 s"),
            }
        }
        Ok(())
    }
}
