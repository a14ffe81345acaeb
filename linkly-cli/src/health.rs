//! The `/health` probe of a Linkly server, over a plain HTTP/1.1 request (no client library:
//! it must answer within a tight timeout even when the server is wedged).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use linkly_http::{Health, PortFile, ServerInfo, StartedBy};

/// A server's base URL (`http://host:port`), its MCP endpoint and how to reach it.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) base: String,
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) token: Option<String>,
}

impl Target {
    /// `http://127.0.0.1:<port>` for the local server.
    pub(crate) fn local(port: u16) -> Target {
        Target {
            base: format!("http://127.0.0.1:{port}"),
            host: "127.0.0.1".into(),
            port,
            token: None,
        }
    }

    /// The local server of a port file, with its per-start secret as the bearer token (what
    /// the person's clients send: `linkly mcp`, client mode, `linkly open`, `linkly stop`).
    pub(crate) fn of_port_file(file: &PortFile) -> Target {
        Target {
            token: file.secret.clone(),
            ..Target::local(file.port)
        }
    }

    /// Normalises an endpoint: strips a trailing `/` and `/mcp`.
    pub(crate) fn parse(endpoint: &str, token: Option<String>) -> anyhow::Result<Target> {
        let mut base = endpoint.trim().trim_end_matches('/').to_string();
        if let Some(b) = base.strip_suffix("/mcp") {
            base = b.to_string();
        }
        let Some(rest) = base.strip_prefix("http://") else {
            bail!(
                "--endpoint must be an http:// URL like http://192.168.1.20:60606 (got {endpoint:?})"
            );
        };
        let authority = rest.split('/').next().unwrap_or(rest);
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h.trim_matches(['[', ']']).to_string(),
                p.parse::<u16>()
                    .with_context(|| format!("invalid port in --endpoint {endpoint:?}"))?,
            ),
            _ => (authority.to_string(), 80),
        };
        Ok(Target {
            base,
            host,
            port,
            token,
        })
    }

    /// The MCP endpoint.
    pub(crate) fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn addr(&self) -> anyhow::Result<SocketAddr> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .with_context(|| format!("cannot resolve {}", self.host))
    }

    /// `GET /health`: the status code, the body, and the latency.
    pub(crate) fn health(&self, timeout: Duration) -> anyhow::Result<(u16, String, Duration)> {
        self.request("GET", "/health", &[], "", timeout)
    }

    /// One HTTP/1.1 request (`Connection: close`) with extra headers and a JSON body: the
    /// status code, the body, and the latency.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
        timeout: Duration,
    ) -> anyhow::Result<(u16, String, Duration)> {
        let started = Instant::now();
        let mut stream = TcpStream::connect_timeout(&self.addr()?, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\n",
            self.host, self.port
        );
        if let Some(t) = &self.token {
            head.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method != "GET" {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(body.as_bytes())?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .context("not an HTTP response")?;
        Ok((status, body.to_string(), started.elapsed()))
    }

    /// `/health`, parsed, when the server answers 2xx.
    pub(crate) fn health_json(&self, timeout: Duration) -> anyhow::Result<Health> {
        let (status, body, _) = self.health(timeout)?;
        match status {
            200..=299 => Ok(serde_json::from_str(&body)
                .context("the /health body is not Linkly's health JSON")?),
            401 => bail!("Authentication failed (401): {body}"),
            403 => bail!("Access denied (403): {body}"),
            other => bail!("Server returned HTTP {other}: {body}"),
        }
    }
}

/// How `linkly status` and the messages name a server: `pid 12, started by hand at …`.
pub(crate) fn describe(info: &ServerInfo) -> String {
    let by = match info.started_by {
        StartedBy::Hand => "by hand",
        StartedBy::Background => "in the background by `linkly mcp`",
    };
    let options = if info.options.is_empty() {
        "no options".to_string()
    } else {
        format!("options: {}", info.options.join(" "))
    };
    format!(
        "pid {}, started {by} at {}, {options}",
        info.pid, info.started_at
    )
}

/// The port in a port file ([`PortFile`]), with the anchor's error messages.
pub(crate) fn read_port_file(path: &std::path::Path) -> anyhow::Result<Option<u16>> {
    Ok(read_port_file_full(path)?.map(|p| p.port))
}

/// The whole port file ([`PortFile`]: port, pid, control token).
pub(crate) fn read_port_file_full(path: &std::path::Path) -> anyhow::Result<Option<PortFile>> {
    let text = match fs_err::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let file: PortFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "the port file {} is corrupted (expected {{\"port\": 1-65535, \"pid\": N}})",
            path.display()
        )
    })?;
    if file.port == 0 {
        bail!(
            "Invalid port {} in {} (must be 1-65535)",
            file.port,
            path.display()
        );
    }
    Ok(Some(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_normalised() {
        let t = Target::parse("http://192.168.1.20:60606/mcp/", None).unwrap();
        assert_eq!(t.base, "http://192.168.1.20:60606");
        assert_eq!((t.host.as_str(), t.port), ("192.168.1.20", 60606));
        assert_eq!(t.mcp_url(), "http://192.168.1.20:60606/mcp");
        let t = Target::parse("http://[::1]:7000", None).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 7000));
        assert!(Target::parse("https://x", None).is_err());
    }
}
