//! Sign-in: the person with the per-start local secret (typed, or through the one-time link
//! `linkly open` opens), a LAN visitor with the LAN token; either sets an HttpOnly,
//! SameSite=Strict cookie that proves it for this session (until the server restarts).

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use crate::layout::{Nav, csrf_field, error_box, page};
use crate::pages::{failure, see_other};
use crate::security::AUTH_COOKIE;
use crate::{App, Ctx};
use axum::extract::Path;
use linkly_http::Caller;

fn form(ctx: &Ctx, error: Option<&str>) -> Response {
    let l = ctx.lang;
    page(
        ctx,
        Nav::None,
        l.t("signin.title"),
        html! {
            section.panel.narrow {
                h1 { (l.t("signin.title")) }
                p { (l.t("signin.body")) }
                form #signin-form.stack method="post" action="/signin" {
                    (csrf_field(ctx))
                    label { span { (l.t("signin.token")) } input #signin-token type="password" name="token" required autocomplete="current-password"; }
                    button #signin-submit.primary type="submit" { (l.t("signin.submit")) }
                }
                (error_box("signin-error", error))
            }
        },
    )
}

/// `GET /signin`.
pub(crate) async fn page_handler(Extension(ctx): Extension<Ctx>) -> Response {
    if ctx.caller != Caller::Anonymous {
        return see_other("/");
    }
    form(&ctx, None)
}

#[derive(Deserialize)]
pub(crate) struct SignInForm {
    token: String,
}

/// The answer of a sign-in: back to the overview, with the proof for this session.
fn signed_in(proof: &str) -> Response {
    let mut res = see_other("/");
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{AUTH_COOKIE}={proof}; Path=/; HttpOnly; SameSite=Strict"
    )) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
    res
}

/// `POST /signin`: the local secret signs the person in, the LAN token a visitor; anything
/// else is 401 and changes nothing.
pub(crate) async fn submit(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<SignInForm>,
) -> Response {
    match app.opts.gate.sign_in(&f.token, &ctx.sid) {
        Some((_, proof)) => signed_in(&proof),
        None => {
            let mut res = form(&ctx, Some(ctx.lang.t("signin.wrong")));
            *res.status_mut() = StatusCode::UNAUTHORIZED;
            res
        }
    }
}

/// `GET /signin/link/{code}`: the one-time link of `linkly open` signs the person in; a
/// replayed, expired or foreign code is 401 with the reason, and changes nothing.
pub(crate) async fn link(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Path(code): Path<String>,
) -> Response {
    match app.opts.gate.redeem_link(&code) {
        Ok(()) => signed_in(&app.opts.gate.person_proof(&ctx.sid)),
        Err(e) => failure(&ctx, StatusCode::UNAUTHORIZED, &e.to_string()),
    }
}
