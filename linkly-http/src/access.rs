//! Who may use a Linkly server bound to an address, the one rule of the window (`/`) and of
//! MCP (`/mcp`, `/health`): without a LAN token everyone on the bound address; with one, only
//! local peers (127.0.0.1, `::1`) of a server on a wildcard or loopback address skip it. A peer
//! that skips the token must name the server in `Host` by a loopback name or its bind address
//! (DNS-rebinding protection). A server whose LAN access is switched while it runs
//! ([`Access::switched`]) reads the token on every request: while it is off, no peer but a
//! local one is let in at all. Tokens and proofs are compared in constant time.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// The LAN token while LAN access is on, read on every request (none: off).
pub type LanSwitch = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// The refusal of a `Host` that does not name this server.
pub const HOST_REFUSED: &str = "Forbidden: the Host header must name this server by a loopback address (DNS-rebinding protection)";

/// The access rule of a server bound to one address, with a LAN token or not.
#[derive(Clone)]
pub struct Access {
    token: Option<String>,
    bind: IpAddr,
    switch: Option<LanSwitch>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("bind", &self.bind)
            .field("token", &self.token().map(|_| "<set>"))
            .field("switched", &self.switch.is_some())
            .finish()
    }
}

impl Access {
    /// The rule for a server bound to `bind`; an empty token is none.
    pub fn new(bind: IpAddr, token: Option<String>) -> Access {
        Access {
            token: token.filter(|t| !t.is_empty()),
            bind,
            switch: None,
        }
    }

    /// The rule for a server bound to `bind` whose LAN access is switched while it runs:
    /// `lan` gives the token while it is on (read on every request).
    pub fn switched(bind: IpAddr, lan: LanSwitch) -> Access {
        Access {
            token: None,
            bind,
            switch: Some(lan),
        }
    }

    /// The LAN token, if one is required (and, when switched, while LAN access is on).
    pub fn token(&self) -> Option<String> {
        match &self.switch {
            Some(lan) => lan().filter(|t| !t.is_empty()),
            None => self.token.clone(),
        }
    }

    /// Whether `peer` is refused outright: a peer that is not local while switched LAN access
    /// is off (a connection the LAN listener accepted before it closed, or one to a wildcard
    /// address).
    pub fn shut_out(&self, peer: Option<IpAddr>) -> bool {
        self.switch.is_some() && !peer.is_some_and(is_local_peer) && self.token().is_none()
    }

    /// Whether `peer` may call without the token: everyone without a token (when switched,
    /// local peers only); with one, 127.0.0.1 and `::1` when the server listens on a wildcard
    /// address or on 127.0.0.1/`::1` itself.
    pub fn exempt(&self, peer: Option<IpAddr>) -> bool {
        if self.token().is_none() {
            return self.switch.is_none() || peer.is_some_and(is_local_peer);
        }
        let default_bind = self.bind.is_unspecified()
            || self.bind == IpAddr::V4(Ipv4Addr::LOCALHOST)
            || self.bind == IpAddr::V6(Ipv6Addr::LOCALHOST);
        default_bind && peer.is_some_and(is_local_peer)
    }

    /// Whether `Host` names this server by a loopback name or its bind address (any port).
    pub fn host_allowed(&self, host: Option<&str>) -> bool {
        let Some(host) = host else { return false };
        let name = host_name(host).to_ascii_lowercase();
        let name = name.strip_suffix('.').unwrap_or(&name);
        if matches!(name, "localhost" | "127.0.0.1" | "::1") {
            return true;
        }
        !self.bind.is_unspecified() && name.parse::<IpAddr>().is_ok_and(|ip| ip == self.bind)
    }
}

/// Compares a presented token or proof with the expected one in constant time.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// True for the addresses local clients connect from (`127.0.0.1`, `::1`).
pub fn is_local_peer(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4 == Ipv4Addr::LOCALHOST,
        IpAddr::V6(v6) => v6.is_loopback() || v6.to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST),
    }
}

/// The name part of a `Host` value: `[::1]:80` → `::1`, `localhost:80` → `localhost`.
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_peers_and_token_comparison() {
        assert!(is_local_peer("127.0.0.1".parse().unwrap()));
        assert!(is_local_peer("::1".parse().unwrap()));
        assert!(!is_local_peer("127.0.0.2".parse().unwrap()));
        assert!(!is_local_peer("192.168.1.5".parse().unwrap()));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn who_needs_the_token() {
        let local = Some("127.0.0.1".parse().unwrap());
        let lan = Some("192.168.1.5".parse().unwrap());
        let t = || Some("t".to_string());
        let any = Access::new("0.0.0.0".parse().unwrap(), t());
        assert!(any.exempt(local) && !any.exempt(lan) && !any.exempt(None));
        let other_loopback = Access::new("127.0.0.2".parse().unwrap(), t());
        assert!(!other_loopback.exempt(local));
        assert!(!other_loopback.exempt(Some("127.0.0.2".parse().unwrap())));
        let no_token = Access::new("127.0.0.2".parse().unwrap(), None);
        assert!(no_token.exempt(local));
        assert!(Access::new("0.0.0.0".parse().unwrap(), Some(String::new())).exempt(lan));
    }

    #[test]
    fn switched_lan_access_is_read_at_each_request() {
        let local = Some("127.0.0.1".parse().unwrap());
        let lan = Some("192.168.1.5".parse().unwrap());
        let on = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let state = on.clone();
        let a = Access::switched(
            "127.0.0.1".parse().unwrap(),
            Arc::new(move || {
                state
                    .load(std::sync::atomic::Ordering::Relaxed)
                    .then(|| "t".to_string())
            }),
        );
        // Off: local peers as ever, every other one shut out (never exempt).
        assert!(a.exempt(local) && !a.shut_out(local));
        assert!(!a.exempt(lan) && a.shut_out(lan) && a.shut_out(None));
        assert_eq!(a.token(), None);
        // On: the token is required of them, and only of them.
        on.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(a.exempt(local) && !a.exempt(lan) && !a.shut_out(lan));
        assert_eq!(a.token().as_deref(), Some("t"));
        // Off again: shut out at the next request.
        on.store(false, std::sync::atomic::Ordering::Relaxed);
        assert!(a.shut_out(lan));
    }

    #[test]
    fn host_names() {
        let a = Access::new("127.0.0.2".parse().unwrap(), None);
        let h = |s: &str| a.host_allowed(Some(s));
        assert!(h("127.0.0.1:60606") && h("localhost") && h("LOCALHOST.:1") && h("[::1]:8"));
        assert!(h("127.0.0.2:60606"));
        assert!(!h("evil.example:60606") && !h("127.0.0.3") && !h("localhost.evil.example"));
        assert!(!a.host_allowed(None));
        let any = Access::new("0.0.0.0".parse().unwrap(), None);
        assert!(!any.host_allowed(Some("0.0.0.0:1")));
    }
}
