//! Agents: ready-to-copy configurations for Claude Desktop, Claude Code, Cursor, VS Code and
//! plain HTTP with this server's real URL (the texts of `docs/clients.md`), the stdio command
//! (and its `uvx` form, which needs nothing installed),
//! and the LAN switch with its token, hidden until revealed.

use axum::extract::State;
use axum::response::Response;
use axum::{Extension, Form};
use maud::{Markup, html};
use serde::Deserialize;

use crate::layout::{Nav, csrf_field, page};
use crate::pages::{blocking, failure, see_other};
use crate::{App, Ctx};

/// The stdio configuration every client's JSON shares.
pub(crate) const STDIO: &str = r#"{"command": "linkly", "args": ["mcp"]}"#;
/// The same through uv, which fetches the `linkly` wheel and runs it: nothing to install first.
pub(crate) const STDIO_UVX: &str = r#"{"command": "uvx", "args": ["linkly", "mcp"]}"#;

fn block(ctx: &Ctx, client: &str, title: &str, note: &str, text: &str) -> Markup {
    let l = ctx.lang;
    let id = format!("cfg-{client}");
    html! {
        section.panel.agent data-testid="agent-config" data-client=(client) {
            header.lib-head {
                h2 { (title) }
                button.copy type="button" data-testid="copy" data-copy=(id) { (l.t("agents.copy")) }
            }
            p.muted { (note) }
            pre.code id=(id) { code { (text) } }
        }
    }
}

/// `GET /agents`.
pub(crate) async fn page_handler(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    let l = ctx.lang;
    let url = app.opts.endpoint.clone();
    // Only the person reaches this page (the gate's class), so the LAN token may show.
    let (token, enabled, shared, libraries, version) = blocking(&app, |linkly| {
        // What config.toml holds now, so that a share is checked against the version shown.
        let c = linkly_core::Config::load(linkly.data_dir())
            .map(std::sync::Arc::new)
            .unwrap_or_else(|_| linkly.config());
        let names: Vec<String> = c.libraries.iter().map(|l| l.name.clone()).collect();
        let version = c
            .setting_version("lan_shared_libraries")
            .unwrap_or_default();
        (
            c.lan_token.clone(),
            c.lan_access().is_some(),
            c.lan_shared_libraries.clone(),
            names,
            version,
        )
    })
    .await;
    let agent_token = app.opts.agent_token.clone().unwrap_or_default();
    let lan_address = (app.opts.lan_address)();
    let desktop = "{\n  \"mcpServers\": {\n    \"linkly\": {\n      \"command\": \"linkly\",\n      \"args\": [\"mcp\"]\n    }\n  }\n}".to_string();
    let code = format!(
        "claude mcp add linkly -- linkly mcp\n\n# {}\nclaude mcp add --transport http linkly {url} --header \"Authorization: Bearer $LINKLY_AGENT_TOKEN\"",
        l.t("agents.or_http")
    );
    let cursor = format!(
        "{{\n  \"mcpServers\": {{\n    \"linkly\": {{\n      \"url\": \"{url}\",\n      \"headers\": {{ \"Authorization\": \"Bearer ${{env:LINKLY_AGENT_TOKEN}}\" }}\n    }}\n  }}\n}}"
    );
    let vscode = format!(
        "{{\n  \"servers\": {{\n    \"linkly\": {{\n      \"type\": \"http\",\n      \"url\": \"{url}\",\n      \"headers\": {{ \"Authorization\": \"Bearer ${{env:LINKLY_AGENT_TOKEN}}\" }}\n    }}\n  }}\n}}"
    );
    let http = format!(
        "POST {url}\nAuthorization: Bearer {agent_token}\nContent-Type: application/json\nAccept: application/json, text/event-stream"
    );
    let main = html! {
        header.page-head { h1 { (l.t("agents.title")) } }
        p { (l.t("agents.intro")) }
        p { (l.t("agents.url")) " " code #mcp-url { (url) } }
        p.muted #agent-token-note { (l.t("agents.token_note")) }
        @if !agent_token.is_empty() {
            details #agent-token-reveal {
                summary { (l.t("lan.reveal")) }
                div.token-row {
                    code #agent-token { (agent_token) }
                    button.copy type="button" data-testid="copy" data-copy="agent-token" { (l.t("agents.copy")) }
                }
            }
        }
        div.agent-grid {
        (block(&ctx, "stdio", l.t("agents.stdio"), l.t("agents.stdio_note"), STDIO))
        (block(&ctx, "uvx", l.t("agents.uvx"), l.t("agents.uvx_note"), STDIO_UVX))
        (block(&ctx, "claude-desktop", "Claude Desktop", l.t("agents.desktop_note"), &desktop))
        (block(&ctx, "claude-code", "Claude Code", l.t("agents.code_note"), &code))
        (block(&ctx, "cursor", "Cursor", l.t("agents.cursor_note"), &cursor))
        (block(&ctx, "vscode", "VS Code", l.t("agents.vscode_note"), &vscode))
        (block(&ctx, "http", l.t("agents.http"), l.t("agents.http_note"), &http))
        }
        section.panel #lan {
            h2 { (l.t("lan.title")) }
            @if let Some(address) = lan_address {
                p #lan-state data-state="on" { (l.t("lan.on")) }
                p { (l.t("lan.address")) " " code #lan-address { "http://" (address) "/" } }
            } @else {
                p #lan-state data-state="off" { (l.t("lan.off")) }
            }
            p.muted #lan-plain-http { (l.t("lan.plain_http")) }
            @if shared.is_empty() {
                p #lan-shared data-testid="lan-shared" { (l.t("lan.shared_none")) }
            } @else {
                p #lan-shared data-testid="lan-shared" { (l.t("lan.shared")) " " (shared.join(", ")) }
            }
            (share_list(&ctx, &libraries, &shared, &version))
            @if let Some(t) = &token {
                details #lan-reveal {
                    summary { (l.t("lan.reveal")) }
                    div.token-row {
                        code #lan-token { (t) }
                        button.copy type="button" data-testid="copy" data-copy="lan-token" { (l.t("agents.copy")) }
                    }
                    p.muted { (l.t("lan.token_note")) }
                }
            }
            @if !ctx.lan {
                form #lan-form.inline-form method="post" action="/agents/lan" {
                    (csrf_field(&ctx))
                    @if enabled {
                        input type="hidden" name="enable" value="0";
                        button.link-danger type="submit" data-testid="lan-switch" { (l.t("lan.disable")) }
                    } @else {
                        input type="hidden" name="enable" value="1";
                        button.primary type="submit" data-testid="lan-switch" { (l.t("lan.enable")) }
                    }
                }
                p.muted { (l.t("lan.applied")) }
            }
        }
    };
    page(&ctx, Nav::Agents, l.t("agents.title"), main)
}

/// Every library with its switch: shared with LAN visitors or not (a change of the
/// `lan_shared_libraries` setting, which the gate reads on every request).
fn share_list(ctx: &Ctx, libraries: &[String], shared: &[String], version: &str) -> Markup {
    let l = ctx.lang;
    html! {
        @if libraries.is_empty() {
            p.muted #lan-no-libraries { (l.t("lan.no_libraries")) " " a href="/libraries" { (l.t("nav.libraries")) } }
        } @else {
            table.share-list #lan-share-list {
                @for name in libraries {
                    @let on = shared.contains(name);
                    tr data-testid="lan-library" data-library=(name) {
                        td { (name) }
                        td.muted { (if on { l.t("lan.is_shared") } else { l.t("lan.not_shared") }) }
                        td {
                            form.inline-form method="post" action="/settings/change" {
                                (csrf_field(ctx))
                                input type="hidden" name="key" value="lan_shared_libraries";
                                input type="hidden" name="op" value=(if on { "remove" } else { "add" });
                                input type="hidden" name="value" value=(name);
                                input type="hidden" name="version" value=(version);
                                @if on {
                                    button.link-danger type="submit" data-testid="lan-share" { (l.t("lan.unshare")) }
                                } @else {
                                    button type="submit" data-testid="lan-share" { (l.t("lan.share")) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct LanForm {
    enable: String,
}

/// `POST /agents/lan`: turns LAN access on (making the LAN token when there is none) or off
/// (forgetting the token, so that a later one is new); the running server opens or closes its
/// LAN listener within a second. Refused to a visitor signed in over the LAN.
pub(crate) async fn lan(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<LanForm>,
) -> Response {
    if ctx.lan {
        return failure(
            &ctx,
            axum::http::StatusCode::FORBIDDEN,
            ctx.lang.t("lan.local_only"),
        );
    }
    let enable = f.enable == "1";
    let r = blocking(&app, move |linkly| {
        linkly.update_config(|c| {
            if enable {
                if c.lan_token.as_deref().is_none_or(str::is_empty) {
                    c.lan_token = Some(uuid::Uuid::new_v4().simple().to_string());
                }
                c.lan_enabled = true;
            } else {
                c.lan_token = None;
                c.lan_enabled = false;
            }
            Ok(())
        })
    })
    .await;
    match r {
        Ok(()) => see_other("/agents#lan"),
        Err(e) => failure(
            &ctx,
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            &e.message,
        ),
    }
}
