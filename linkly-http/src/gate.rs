//! The one gate of a data directory's server: every route has a [`Class`], declared where the
//! route is mounted ([`Routes::route`]), and one middleware ([`Gate::wrap`]) decides for every
//! request who calls ([`Caller`]) and whether that caller may use the route's class.
//!
//! - [`Class::Public`]: anyone (sign-in, health, static assets).
//! - [`Class::Read`]: searching and reading (pages, `/mcp` tool calls).
//! - [`Class::Person`]: anything that changes what is indexed or who may call (folders,
//!   libraries, notes writes, tokens, the agents page, model download, stop) and the originals.
//!
//! The person is whoever holds the per-start local secret (the port file's, 0600): as a bearer
//! token, or as the session cookie a sign-in with it (or a one-time link `linkly open` makes)
//! sets. An agent holds the agent token (Read). A LAN visitor holds the LAN token: Read, and only
//! while the person shares libraries on the LAN. Anyone else gets the public routes only, with
//! a small body and a short read timeout, on a connection the accept loop may close first.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::MethodRouter;
use sha2::{Digest, Sha256};

use crate::access::{Access, HOST_REFUSED, constant_time_eq};

/// The session cookie (a random id).
pub const SESSION_COOKIE: &str = "linkly_sid";
/// The sign-in cookie: a proof bound to the session id, to the server's start and to who
/// signed in.
pub const AUTH_COOKIE: &str = "linkly_auth";
/// The largest body a caller who has not signed in may send.
pub const ANONYMOUS_BODY_BYTES: usize = 4 * 1024;
/// How long a caller who has not signed in gets to send its body.
pub const ANONYMOUS_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a one-time sign-in link (`linkly open`) stays valid.
pub const LINK_LIFETIME: Duration = Duration::from_secs(120);

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Anyone: sign-in, health, static assets.
    Public,
    /// Searching and reading: the person, their agents, and LAN visitors over what is shared.
    Read,
    /// The person only: anything that changes what is indexed or who may call.
    Person,
}

impl Class {
    /// The name the security table of docs/ui.md uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Public => "Public",
            Class::Read => "Read",
            Class::Person => "Person",
        }
    }
}

/// Who calls, as the gate found out (put in every request's extensions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// The person: the local secret, or the session cookie a sign-in with it set.
    Person,
    /// One of the person's agents, with the agent token: Read.
    Agent,
    /// A LAN visitor, with the LAN token: Read over the libraries shared on the LAN.
    Visitor,
    /// Nobody known: public routes only.
    Anonymous,
}

impl Caller {
    /// Whether this caller may use a route of `class` (`shares`: whether the person shares
    /// anything on the LAN).
    pub fn may(self, class: Class, shares: bool) -> bool {
        match (self, class) {
            (_, Class::Public) | (Caller::Person, _) => true,
            (Caller::Agent, Class::Read) => true,
            (Caller::Visitor, Class::Read) => shares,
            _ => false,
        }
    }
}

/// The libraries the person shares on the LAN, for the handlers that scope a visitor's reads
/// (in the extensions of a [`Caller::Visitor`]'s requests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LanShared(pub Vec<String>);

/// Why the gate refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A route of the person's, asked by someone else (403).
    PersonOnly,
    /// A LAN visitor while the person shares no library on the LAN (403).
    NothingShared,
}

/// Renders a [`Refusal`] for the request's headers (the window's page, in the visitor's
/// language).
pub type RefusalPage = Arc<dyn Fn(&HeaderMap, Refusal, &[String]) -> Response + Send + Sync>;

/// One route and its class, as declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteClass {
    /// The route's path pattern (`/doc/{id}/file`).
    pub path: String,
    /// Who may call it.
    pub class: Class,
}

/// A router whose every route has a class: what front ends hand the host.
#[derive(Debug)]
pub struct Routes<S = ()> {
    router: Router<S>,
    table: Vec<RouteClass>,
}

impl<S: Clone + Send + Sync + 'static> Default for Routes<S> {
    fn default() -> Self {
        Routes::new()
    }
}

impl<S: Clone + Send + Sync + 'static> Routes<S> {
    /// No routes.
    pub fn new() -> Routes<S> {
        Routes {
            router: Router::new(),
            table: Vec::new(),
        }
    }

    /// Mounts `route` at `path`, callable by `class`.
    pub fn route(mut self, path: &str, class: Class, route: MethodRouter<S>) -> Routes<S> {
        self.router = self.router.route(path, route);
        self.table.push(RouteClass {
            path: path.to_string(),
            class,
        });
        self
    }

    /// `router`'s routes (they are `paths`, every one of `class`).
    pub fn mount(mut self, paths: &[&str], class: Class, router: Router<S>) -> Routes<S> {
        self.router = self.router.merge(router);
        self.table.extend(paths.iter().map(|p| RouteClass {
            path: p.to_string(),
            class,
        }));
        self
    }

    /// Both sets of routes.
    pub fn merge(mut self, other: Routes<S>) -> Routes<S> {
        self.router = self.router.merge(other.router);
        self.table.extend(other.table);
        self
    }

    /// The router changed by `f` (state, layers, fallback), the classes kept.
    pub fn map<T>(self, f: impl FnOnce(Router<S>) -> Router<T>) -> Routes<T> {
        Routes {
            router: f(self.router),
            table: self.table,
        }
    }

    /// Every route and its class, in the order declared.
    pub fn table(&self) -> &[RouteClass] {
        &self.table
    }

    /// The router, without the gate (for a host that merges it into another [`Routes`]).
    pub fn into_parts(self) -> (Router<S>, Vec<RouteClass>) {
        (self.router, self.table)
    }
}

/// The class of `path` in `table`: the first pattern that matches (`{x}` one segment, `{*x}`
/// the rest); a path no route knows is [`Class::Read`] (the not-found page needs a sign-in).
pub fn class_of(table: &[RouteClass], path: &str) -> Class {
    table
        .iter()
        .find(|r| matches(&r.path, path))
        .map_or(Class::Read, |r| r.class)
}

fn matches(pattern: &str, path: &str) -> bool {
    let mut p = pattern.split('/');
    let mut s = path.split('/');
    loop {
        match (p.next(), s.next()) {
            (None, None) => return true,
            (Some(a), _) if a.starts_with("{*") => return true,
            (Some(a), Some(b)) if a.starts_with('{') && a.ends_with('}') => {
                if b.is_empty() {
                    return false;
                }
            }
            (Some(a), Some(b)) if a == b => {}
            _ => return false,
        }
    }
}

/// What the gate knows: the access rule, the secrets, what is shared on the LAN.
#[derive(Clone)]
pub struct GateOptions {
    /// The address rule (the LAN token, the `Host` check).
    pub access: Access,
    /// The per-start local secret (the port file's): `None` only for a server whose local
    /// peers are all the person (tests of the front ends without a host).
    pub local_secret: Option<String>,
    /// The agent token (`<data dir>/agent-token`), when agents may call over HTTP.
    pub agent_token: Option<String>,
    /// The libraries the person shares on the LAN, read at each visitor's request.
    pub lan_shared: Arc<dyn Fn() -> Vec<String> + Send + Sync>,
}

impl std::fmt::Debug for GateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateOptions")
            .field("access", &self.access)
            .field("local_secret", &self.local_secret.as_ref().map(|_| "<set>"))
            .field("agent_token", &self.agent_token.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

/// The gate: who calls, and whether they may (see the module's documentation).
#[derive(Clone)]
pub struct Gate(Arc<GateInner>);

struct GateInner {
    opts: GateOptions,
    /// Drawn at start: the sign-in proofs derive from it.
    cookie_secret: [u8; 32],
    /// The one-time links already used (nonce → expiry), until they expire.
    used_links: Mutex<HashMap<String, u64>>,
    refusal_page: OnceLock<RefusalPage>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("opts", &self.0.opts)
            .finish_non_exhaustive()
    }
}

/// Why a one-time sign-in link was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// Not a link of this server's start (or altered).
    #[error(
        "this sign-in link is not valid for this server (it may be from an earlier start): run `linkly open` again"
    )]
    Invalid,
    /// Older than [`LINK_LIFETIME`].
    #[error("this sign-in link has expired: run `linkly open` again")]
    Expired,
    /// Used once already.
    #[error("this sign-in link was already used: run `linkly open` again")]
    Replayed,
}

/// A random secret of 32 bytes from the OS generator (two v4 UUIDs).
pub(crate) fn new_secret_bytes() -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    s[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    s
}

/// A new random token: 64 hex characters (256 bits).
pub fn new_token() -> String {
    hex(&new_secret_bytes())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn link_mac(local_secret: &str, expiry: u64, nonce: &str) -> String {
    let mut h = Sha256::new();
    h.update(local_secret.as_bytes());
    h.update(b"\0sign-in link\0");
    h.update(expiry.to_string().as_bytes());
    h.update([0]);
    h.update(nonce.as_bytes());
    hex(&h.finalize()[..20])
}

/// A one-time sign-in code for the server whose local secret is `local_secret` (what
/// `linkly open` puts in `/signin/link/{code}`): valid for [`LINK_LIFETIME`], once.
pub fn sign_in_link_code(local_secret: &str) -> String {
    let expiry = now_secs() + LINK_LIFETIME.as_secs();
    let nonce = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{expiry}-{nonce}-{}",
        link_mac(local_secret, expiry, &nonce)
    )
}

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

impl Gate {
    /// A gate with a fresh cookie secret (a restart signs everyone out).
    pub fn new(opts: GateOptions) -> Gate {
        Gate(Arc::new(GateInner {
            opts,
            cookie_secret: new_secret_bytes(),
            used_links: Mutex::new(HashMap::new()),
            refusal_page: OnceLock::new(),
        }))
    }

    /// The access rule.
    pub fn access(&self) -> &Access {
        &self.0.opts.access
    }

    /// The libraries the person shares on the LAN now.
    pub fn lan_shared(&self) -> Vec<String> {
        (self.0.opts.lan_shared)()
    }

    /// Renders refusals with `page` (the window's, in the visitor's language); the first one
    /// set stays.
    pub fn set_refusal_page(&self, page: RefusalPage) {
        let _ = self.0.refusal_page.set(page);
    }

    fn proof(&self, who: &str, sid: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.0.cookie_secret);
        h.update(who.as_bytes());
        h.update([0]);
        h.update(sid.as_bytes());
        hex(&h.finalize()[..20])
    }

    /// The proof of a visitor's session `sid` signed in with the LAN token `lan`: a new token
    /// (LAN access turned off and on again) ends every session made with the old one.
    fn visitor_proof(&self, lan: &str, sid: &str) -> String {
        let mut h = Sha256::new();
        h.update(lan.as_bytes());
        self.proof(&format!("visitor:{}", hex(&h.finalize()[..16])), sid)
    }

    /// The value of [`AUTH_COOKIE`] that makes session `sid` the person's.
    pub fn person_proof(&self, sid: &str) -> String {
        self.proof("person", sid)
    }

    /// The caller a sign-in with `token` makes, and the value of [`AUTH_COOKIE`] that proves
    /// it for session `sid`: the local secret signs the person in, the LAN token a visitor.
    pub fn sign_in(&self, token: &str, sid: &str) -> Option<(Caller, String)> {
        let token = token.trim();
        let is = |t: &Option<String>| {
            t.as_deref()
                .filter(|t| !t.is_empty())
                .is_some_and(|t| constant_time_eq(token.as_bytes(), t.as_bytes()))
        };
        if is(&self.0.opts.local_secret) {
            return Some((Caller::Person, self.proof("person", sid)));
        }
        let lan = self
            .0
            .opts
            .access
            .token()
            .filter(|t| is(&Some(t.clone())))?;
        Some((Caller::Visitor, self.visitor_proof(&lan, sid)))
    }

    /// Uses a one-time sign-in code (see [`sign_in_link_code`]): once, before it expires.
    pub fn redeem_link(&self, code: &str) -> Result<(), LinkError> {
        let secret = self
            .0
            .opts
            .local_secret
            .as_deref()
            .ok_or(LinkError::Invalid)?;
        let mut parts = code.splitn(3, '-');
        let (Some(expiry), Some(nonce), Some(mac)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(LinkError::Invalid);
        };
        let expiry: u64 = expiry.parse().map_err(|_| LinkError::Invalid)?;
        if nonce.len() != 32 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(LinkError::Invalid);
        }
        if !constant_time_eq(mac.as_bytes(), link_mac(secret, expiry, nonce).as_bytes()) {
            return Err(LinkError::Invalid);
        }
        let now = now_secs();
        if expiry < now {
            return Err(LinkError::Expired);
        }
        let mut used = self.0.used_links.lock().unwrap_or_else(|e| e.into_inner());
        used.retain(|_, e| *e >= now);
        if used.insert(nonce.to_string(), expiry).is_some() {
            return Err(LinkError::Replayed);
        }
        Ok(())
    }

    /// Who calls: a bearer token (a wrong one is an error), else the sign-in cookie, else the
    /// person when the server has no local secret and the peer needs no token.
    fn identify(&self, req: &Request, peer: Option<std::net::IpAddr>) -> Result<Caller, ()> {
        let o = &self.0.opts;
        let matches = |t: Option<&str>, p: &str| {
            t.filter(|t| !t.is_empty())
                .is_some_and(|t| constant_time_eq(p.as_bytes(), t.as_bytes()))
        };
        if let Some(p) = bearer(req.headers()) {
            return if matches(o.local_secret.as_deref(), p) {
                Ok(Caller::Person)
            } else if matches(o.agent_token.as_deref(), p) {
                Ok(Caller::Agent)
            } else if matches(o.access.token().as_deref(), p) {
                Ok(Caller::Visitor)
            } else {
                Err(())
            };
        }
        if let (Some(sid), Some(proof)) = (
            cookie(req.headers(), SESSION_COOKIE),
            cookie(req.headers(), AUTH_COOKIE),
        ) {
            if constant_time_eq(proof.as_bytes(), self.proof("person", sid).as_bytes()) {
                return Ok(Caller::Person);
            }
            if let Some(lan) = o.access.token()
                && constant_time_eq(proof.as_bytes(), self.visitor_proof(&lan, sid).as_bytes())
            {
                return Ok(Caller::Visitor);
            }
        }
        if o.local_secret.is_none() && o.access.exempt(peer) {
            return Ok(Caller::Person);
        }
        Ok(Caller::Anonymous)
    }

    /// `routes` behind this gate: the one layer that enforces every route's class.
    pub fn wrap(&self, routes: Routes) -> Router {
        let (router, table) = routes.into_parts();
        let state = Arc::new((self.clone(), table));
        router.layer(axum::middleware::from_fn_with_state(state, gate))
    }

    fn refuse(&self, headers: &HeaderMap, why: Refusal, shared: &[String]) -> Response {
        if let Some(page) = self.0.refusal_page.get() {
            return page(headers, why, shared);
        }
        let text = match why {
            Refusal::PersonOnly => {
                "Forbidden: only the person whose documents these are may do this (not a LAN visitor or an agent)"
            }
            Refusal::NothingShared => {
                "Forbidden: the person shares no library on the LAN (lan_shared_libraries is empty)"
            }
        };
        (StatusCode::FORBIDDEN, text).into_response()
    }
}

/// The refusal of a peer on the network while LAN access is off.
pub const LAN_OFF: &str = "Forbidden: LAN access is off: the person turns it on in the window's Agents page (or with `linkly config set lan_enabled true`)";

/// The paths whose callers are programs, not browsers: 401 rather than the sign-in page.
fn for_programs(path: &str) -> bool {
    path == "/mcp" || path.starts_with("/mcp/") || path.starts_with("/control/")
}

/// Every request: the `Host` check, who calls, the route's class; a caller who has not signed
/// in sends a small body quickly, on a connection the accept loop may close for another.
async fn gate(
    State(state): State<Arc<(Gate, Vec<RouteClass>)>>,
    req: Request,
    next: Next,
) -> Response {
    with_baseline_headers(admit(state, req, next).await)
}

/// The Content-Security-Policy of an answer that sets none: the gate's own refusals,
/// redirects and 401s, and every program's answer (`/mcp`, `/health`), load nothing.
pub const BASELINE_CSP: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// `res` with a strict policy where the route set none, and never sniffed or framed.
fn with_baseline_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(BASELINE_CSP),
        );
    }
    h.entry(header::X_CONTENT_TYPE_OPTIONS)
        .or_insert(HeaderValue::from_static("nosniff"));
    h.entry(header::X_FRAME_OPTIONS)
        .or_insert(HeaderValue::from_static("DENY"));
    res
}

async fn admit(state: Arc<(Gate, Vec<RouteClass>)>, mut req: Request, next: Next) -> Response {
    let (gate, table) = (&state.0, &state.1);
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let access = gate.access();
    if access.shut_out(peer) {
        return (StatusCode::FORBIDDEN, LAN_OFF).into_response();
    }
    if access.exempt(peer)
        && !access.host_allowed(
            req.headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok()),
        )
    {
        return (StatusCode::FORBIDDEN, HOST_REFUSED).into_response();
    }
    let path = req.uri().path().to_string();
    let class = class_of(table, &path);
    let Ok(caller) = gate.identify(&req, peer) else {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token: send Authorization: Bearer <token> (the agent token shown on the window's Agents page, or the LAN token of `linkly status` on the server)",
        )
            .into_response();
    };
    let shared = if caller == Caller::Visitor {
        gate.lan_shared()
    } else {
        Vec::new()
    };
    if !caller.may(class, !shared.is_empty()) {
        if caller == Caller::Anonymous {
            if !for_programs(&path) && matches!(*req.method(), Method::GET | Method::HEAD) {
                return Redirect::to("/signin").into_response();
            }
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "sign in first: open /signin (or run `linkly open`); programs send Authorization: Bearer <token>",
            )
                .into_response();
        }
        let why = if caller == Caller::Visitor && class == Class::Read {
            Refusal::NothingShared
        } else {
            Refusal::PersonOnly
        };
        tracing::info!(?caller, path, "refused by the gate");
        return gate.refuse(req.headers(), why, &shared);
    }
    req.extensions_mut().insert(caller);
    // What the tools let this caller read: a visitor only the shared libraries.
    let audience = if caller == Caller::Visitor {
        linkly_tools::Audience::Shared(shared.clone())
    } else {
        linkly_tools::Audience::Person
    };
    req.extensions_mut().insert(audience);
    if caller == Caller::Visitor {
        req.extensions_mut().insert(LanShared(shared));
    }
    if caller != Caller::Anonymous {
        return next.run(req).await;
    }
    // Before sign-in: the connection may be closed for another, the body is small and quick.
    let _evictable = req
        .extensions()
        .get::<crate::conn::ConnSlot>()
        .map(crate::conn::ConnSlot::evictable);
    let (parts, body) = req.into_parts();
    let bytes =
        match tokio::time::timeout(ANONYMOUS_READ_TIMEOUT, to_bytes(body, ANONYMOUS_BODY_BYTES))
            .await
        {
            Ok(Ok(b)) => b,
            Ok(Err(_)) => {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "the request is too large for a caller who has not signed in",
                )
                    .into_response();
            }
            Err(_) => {
                return (
                    StatusCode::REQUEST_TIMEOUT,
                    [(header::CONNECTION, "close")],
                    "the request's body came too slowly",
                )
                    .into_response();
            }
        };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_segments() {
        let t = vec![
            RouteClass {
                path: "/doc/{id}/file".into(),
                class: Class::Person,
            },
            RouteClass {
                path: "/doc/{id}".into(),
                class: Class::Read,
            },
            RouteClass {
                path: "/signin".into(),
                class: Class::Public,
            },
            RouteClass {
                path: "/assets/{*rest}".into(),
                class: Class::Public,
            },
        ];
        assert_eq!(class_of(&t, "/doc/12/file"), Class::Person);
        assert_eq!(class_of(&t, "/doc/12"), Class::Read);
        assert_eq!(class_of(&t, "/doc//file"), Class::Read);
        assert_eq!(class_of(&t, "/signin"), Class::Public);
        assert_eq!(class_of(&t, "/signin/x"), Class::Read);
        assert_eq!(class_of(&t, "/assets/a/b"), Class::Public);
        assert_eq!(class_of(&t, "/nowhere"), Class::Read);
    }

    #[test]
    fn who_may_call_what() {
        use Caller::{Agent, Anonymous, Visitor};
        use Class::{Public, Read};
        assert!(Caller::Person.may(Class::Person, false));
        assert!(Agent.may(Read, false) && !Agent.may(Class::Person, true));
        assert!(!Visitor.may(Read, false) && Visitor.may(Read, true));
        assert!(!Visitor.may(Class::Person, true));
        assert!(Anonymous.may(Public, false) && !Anonymous.may(Read, true));
    }

    fn gate() -> Gate {
        Gate::new(GateOptions {
            access: Access::new("0.0.0.0".parse().unwrap(), Some("lan".into())),
            local_secret: Some("local".into()),
            agent_token: None,
            lan_shared: Arc::new(Vec::new),
        })
    }

    #[test]
    fn links_are_one_time_and_bound_to_the_secret() {
        let g = gate();
        let code = sign_in_link_code("local");
        assert_eq!(g.redeem_link(&code), Ok(()));
        assert_eq!(g.redeem_link(&code), Err(LinkError::Replayed));
        assert_eq!(
            g.redeem_link(&sign_in_link_code("other")),
            Err(LinkError::Invalid)
        );
        assert_eq!(g.redeem_link("garbage"), Err(LinkError::Invalid));
        let expiry = now_secs() - 1;
        let nonce = "0".repeat(32);
        let old = format!("{expiry}-{nonce}-{}", link_mac("local", expiry, &nonce));
        assert_eq!(g.redeem_link(&old), Err(LinkError::Expired));
    }

    #[test]
    fn sign_in_tells_the_person_from_a_visitor() {
        let g = gate();
        assert_eq!(g.sign_in("local", "s").unwrap().0, Caller::Person);
        assert_eq!(g.sign_in(" lan ", "s").unwrap().0, Caller::Visitor);
        assert!(g.sign_in("", "s").is_none() && g.sign_in("x", "s").is_none());
        assert_ne!(g.sign_in("local", "s"), g.sign_in("local", "t"));
    }
}
