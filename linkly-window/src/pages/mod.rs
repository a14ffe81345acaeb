//! The pages: one module each, and what they share (running a tool off the async threads,
//! the language switch, the not-found page).

pub(crate) mod agents;
pub(crate) mod document;
pub(crate) mod libraries;
pub(crate) mod notes;
pub(crate) mod overview;
pub(crate) mod search;
pub(crate) mod settings;
pub(crate) mod signin;

use axum::Extension;
use axum::Form;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use crate::layout::{Nav, page};
use crate::security::LANG_COOKIE;
use crate::{App, Ctx, Lang};

/// Runs blocking work (a tool call, the file system) on tokio's blocking threads.
pub(crate) async fn blocking<T: Send + 'static>(
    app: &App,
    f: impl FnOnce(&linkly_tools::Linkly) -> T + Send + 'static,
) -> T {
    let linkly = app.linkly.clone();
    match tokio::task::spawn_blocking(move || f(&linkly)).await {
        Ok(v) => v,
        Err(e) => std::panic::resume_unwind(e.into_panic()),
    }
}

/// [`blocking`] for the caller: tool calls read only what its audience may (a LAN visitor:
/// the shared libraries).
pub(crate) async fn blocking_for<T: Send + 'static>(
    app: &App,
    ctx: &Ctx,
    f: impl FnOnce(&linkly_tools::Linkly) -> T + Send + 'static,
) -> T {
    let audience = ctx.audience.clone();
    blocking(app, move |linkly| audience.run(|| f(linkly))).await
}

/// A redirect after a POST (303, so the browser GETs the target).
pub(crate) fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

#[derive(Deserialize)]
pub(crate) struct LangForm {
    lang: String,
    #[serde(default)]
    back: Option<String>,
}

/// `POST /lang`: remembers the language in a cookie and goes back where the person was.
pub(crate) async fn set_lang(headers: HeaderMap, Form(f): Form<LangForm>) -> Response {
    let lang = Lang::from_code(&f.lang).unwrap_or(Lang::En);
    // Back to the page the form was on, when the script said which (a local path only).
    let back = f
        .back
        .filter(|b| b.starts_with('/') && !b.starts_with("//") && !b.contains('\\'))
        .unwrap_or_else(|| "/".to_string());
    let _ = headers;
    let mut res = see_other(&back);
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{LANG_COOKIE}={}; Path=/; Max-Age=31536000; SameSite=Strict",
        lang.code()
    )) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
    res
}

/// Anything else: a page that says so, with the way back.
pub(crate) async fn not_found(Extension(ctx): Extension<Ctx>) -> Response {
    let l = ctx.lang;
    let mut res = page(
        &ctx,
        Nav::None,
        l.t("notfound.title"),
        html! {
            h1 { (l.t("notfound.title")) }
            p { (l.t("notfound.body")) }
            p { a href="/" { (l.t("nav.overview")) } }
        },
    );
    *res.status_mut() = StatusCode::NOT_FOUND;
    res
}

/// The gate's refusal (403), in the visitor's language: why, and the way back.
pub(crate) fn refusal(
    headers: &HeaderMap,
    why: linkly_http::Refusal,
    shared: &[String],
) -> Response {
    let lang = crate::security::lang_of(headers);
    let ctx = Ctx {
        lang,
        csrf: String::new(),
        sid: String::new(),
        caller: linkly_http::Caller::Visitor,
        lan: true,
        audience: linkly_tools::Audience::Shared(shared.to_vec()),
        here: "/".to_string(),
    };
    let reason = match why {
        linkly_http::Refusal::PersonOnly => lang.t("refused.person_only"),
        linkly_http::Refusal::NothingShared => lang.t("refused.nothing_shared"),
    };
    let mut res = page(
        &ctx,
        Nav::None,
        lang.t("refused.title"),
        html! {
            h1 { (lang.t("refused.title")) }
            p.error #refused role="alert" { (reason) }
            @if !shared.is_empty() {
                p { a href="/search" { (lang.t("nav.search")) } }
            }
        },
    );
    *res.status_mut() = StatusCode::FORBIDDEN;
    crate::security::with_security_headers(res)
}

/// A page that reports a failure (a tool's message), with a status.
pub(crate) fn failure(ctx: &Ctx, status: StatusCode, message: &str) -> Response {
    let l = ctx.lang;
    let mut res = page(
        ctx,
        Nav::None,
        l.t("error.title"),
        html! {
            h1 { (l.t("error.title")) }
            p.error role="alert" { (message) }
            p { a href="/" { (l.t("nav.overview")) } }
        },
    );
    *res.status_mut() = status;
    res
}
