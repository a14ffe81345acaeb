//! Sign-in for LAN visitors: the server's LAN token, once, sets an HttpOnly, SameSite=Strict
//! cookie that proves it for this session (until the server restarts).

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::{Extension, Form};
use maud::html;
use serde::Deserialize;

use crate::layout::{Nav, csrf_field, error_box, page};
use crate::pages::see_other;
use crate::security::{AUTH_COOKIE, auth_proof};
use crate::{App, Ctx};
use linkly_http::constant_time_eq;

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
    if !ctx.lan {
        return see_other("/");
    }
    form(&ctx, None)
}

#[derive(Deserialize)]
pub(crate) struct SignInForm {
    token: String,
}

/// `POST /signin`.
pub(crate) async fn submit(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<SignInForm>,
) -> Response {
    let Some(token) = app.opts.lan_token.as_deref().filter(|t| !t.is_empty()) else {
        return see_other("/");
    };
    if !constant_time_eq(f.token.trim().as_bytes(), token.as_bytes()) {
        let mut res = form(&ctx, Some(ctx.lang.t("signin.wrong")));
        *res.status_mut() = StatusCode::UNAUTHORIZED;
        return res;
    }
    let mut res = see_other("/");
    if let Ok(v) = HeaderValue::from_str(&format!(
        "{AUTH_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
        auth_proof(&app.secret, &ctx.sid)
    )) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
    res
}
