//! The window's own checks, in one middleware behind the host's gate (`linkly_http::Gate`,
//! which decided who calls and whether they may use the route): the session cookie and its
//! CSRF token, the `Origin` and CSRF checks of every POST, and the security headers of every
//! answer.
//!
//! Sessions are stateless: the session cookie is a random id; its CSRF token (and the gate's
//! sign-in proof) are SHA-256 digests of a secret drawn when the server starts and that id, so
//! nothing grows with the number of visitors and a restart signs everyone out.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::i18n::Lang;
use crate::{App, Ctx};
pub(crate) use linkly_http::{AUTH_COOKIE, SESSION_COOKIE, cookie};
use linkly_http::{Caller, constant_time_eq};

/// The language cookie.
pub(crate) const LANG_COOKIE: &str = "linkly_lang";
/// The form field holding the CSRF token.
pub(crate) const CSRF_FIELD: &str = "_csrf";
/// The header holding the CSRF token (the script's `fetch` calls).
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// The largest form body (a 10 MiB note, encoded).
const MAX_FORM_BYTES: usize = 32 * 1024 * 1024;

/// The Content-Security-Policy of every answer: no inline script or style.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

/// A random secret of 32 bytes from the OS generator (two v4 UUIDs).
pub(crate) fn new_secret() -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    s[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    s
}

fn digest(secret: &[u8; 32], purpose: &str, sid: &str) -> String {
    let mut h = Sha256::new();
    h.update(secret);
    h.update(purpose.as_bytes());
    h.update([0]);
    h.update(sid.as_bytes());
    h.finalize()[..20]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The CSRF token of a session.
pub(crate) fn csrf_token(secret: &[u8; 32], sid: &str) -> String {
    digest(secret, "csrf", sid)
}

fn valid_sid(s: &str) -> bool {
    s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn forbidden(msg: &'static str) -> Response {
    (StatusCode::FORBIDDEN, msg).into_response()
}

/// The language of a request: the cookie, else `Accept-Language`, else English.
pub(crate) fn lang_of(headers: &HeaderMap) -> Lang {
    cookie(headers, LANG_COOKIE)
        .and_then(Lang::from_code)
        .or_else(|| {
            headers
                .get(header::ACCEPT_LANGUAGE)
                .and_then(|v| v.to_str().ok())
                .and_then(Lang::from_accept_language)
        })
        .unwrap_or(Lang::En)
}

/// Whether a POST's `Origin` is this server's own (the scheme and the `Host` the browser used).
fn same_origin(headers: &HeaderMap) -> bool {
    let (Some(origin), Some(host)) = (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        headers.get(header::HOST).and_then(|v| v.to_str().ok()),
    ) else {
        return false;
    };
    origin.eq_ignore_ascii_case(&format!("http://{host}"))
        || origin.eq_ignore_ascii_case(&format!("https://{host}"))
}

/// The CSRF token a form body carries.
fn form_csrf(body: &[u8]) -> Option<String> {
    body.split(|&b| b == b'&').find_map(|kv| {
        let s = std::str::from_utf8(kv).ok()?;
        let (k, v) = s.split_once('=')?;
        (k == CSRF_FIELD).then(|| v.to_string())
    })
}

/// Every request of the window.
pub(crate) async fn gate(State(app): State<App>, req: Request, next: Next) -> Response {
    with_security_headers(gate_inner(app, req, next).await)
}

/// `res` with the security headers every answer of the window carries.
pub(crate) fn with_security_headers(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null` with
    // every form POST (the Fetch standard), and the Origin check above would refuse them all.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}

async fn gate_inner(app: App, mut req: Request, next: Next) -> Response {
    // The host's gate said who calls; without it (a window served without its gate) nothing.
    let Some(caller) = req.extensions().get::<Caller>().copied() else {
        tracing::error!("the window is served without the host's gate: refusing");
        return forbidden("Forbidden: this server has no gate");
    };
    // The session.
    let (sid, new_session) = match cookie(req.headers(), SESSION_COOKIE).filter(|s| valid_sid(s)) {
        Some(s) => (s.to_string(), false),
        None => (uuid::Uuid::new_v4().simple().to_string(), true),
    };
    let csrf = csrf_token(&app.secret, &sid);
    if req.method() == Method::POST {
        if !same_origin(req.headers()) {
            return forbidden(
                "Forbidden: this form must be sent from the Linkly window itself (Origin check)",
            );
        }
        if new_session {
            return forbidden("Forbidden: no session; reload the page and try again");
        }
        let header_token = req
            .headers()
            .get(CSRF_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (parts, body) = req.into_parts();
        let Ok(bytes) = to_bytes(body, MAX_FORM_BYTES).await else {
            return (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large").into_response();
        };
        let token = header_token.or_else(|| form_csrf(&bytes));
        if !token.is_some_and(|t| constant_time_eq(t.as_bytes(), csrf.as_bytes())) {
            return forbidden(
                "Forbidden: the form's security token is missing or stale; reload the page and try again",
            );
        }
        req = Request::from_parts(parts, Body::from(bytes));
    }
    let lang = lang_of(req.headers());
    let here = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".to_string());
    // Without the gate's word, the narrowest: nothing shared.
    let audience = req
        .extensions()
        .get::<linkly_tools::Audience>()
        .cloned()
        .unwrap_or(linkly_tools::Audience::Shared(Vec::new()));
    req.extensions_mut().insert(Ctx {
        here,
        lang,
        csrf,
        sid: sid.clone(),
        caller,
        lan: caller == Caller::Visitor,
        audience,
    });
    let mut res = next.run(req).await;
    if new_session
        && let Ok(v) = HeaderValue::from_str(&format!(
            "{SESSION_COOKIE}={sid}; Path=/; HttpOnly; SameSite=Strict"
        ))
    {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_by_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; linkly_sid=abc; b=2"),
        );
        assert_eq!(cookie(&h, "linkly_sid"), Some("abc"));
        assert_eq!(cookie(&h, "c"), None);
    }

    #[test]
    fn tokens_depend_on_the_session() {
        let s = [7u8; 32];
        assert_ne!(csrf_token(&s, "a"), csrf_token(&s, "b"));
        assert_eq!(csrf_token(&s, "a").len(), 40);
    }

    #[test]
    fn origin_must_match_host() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:60606"));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:60606"),
        );
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&h));
        h.remove(header::ORIGIN);
        assert!(!same_origin(&h));
    }
}
