//! Linkly's window: the local web app where the person whose documents these are searches and
//! reads them, watches indexing, manages folders, libraries and notes, and connects agents.
//!
//! [`router`] is an `axum::Router` that a `linkly-http` host serves at `/` beside `/mcp` and
//! `/health` (`linkly-cli`'s daemon composes them). Every page reads and changes state through
//! `linkly-tools`' [`Linkly`] (the tools' typed calls, the notes store, the configuration): no
//! second implementation of any tool. Pages are rendered on the server (maud, escaped by default); one CSS file and one
//! small script are embedded in the binary and served under a hashed URL. Reading works with
//! JavaScript off; every change is a `<form method=post>` the script enhances.
//!
//! Safety (see `security`): loopback `Host` only (with `--lan`, a sign-in with the token that
//! sets an HttpOnly, SameSite=Strict cookie); every POST checks `Origin` and the session's
//! CSRF token; a strict Content-Security-Policy without inline script or style; documents are
//! served by id only, never by a path from the URL.
//!
//! # Selectors for browser tests
//!
//! Every element a scenario needs has a stable `id` or `data-testid`:
//!
//! | What | Selector |
//! |---|---|
//! | navigation links | `#nav-overview`, `#nav-search`, `#nav-notes`, `#nav-libraries`, `#nav-agents` |
//! | language switch (select, button) | `#lang-select`, `#lang-apply` (form `#lang-form`) |
//! | server unreachable banner | `#offline` |
//! | overview counts | `[data-testid=doc-count]`, `[data-testid=indexed-count]`, `[data-testid=index-state]` |
//! | sync progress | `#progress` (`[data-testid=progress-text]`) |
//! | folders | `#folder-add-form`, `#folder-path`, `#folder-add`, `[data-testid=folder]`, `[data-testid=folder-remove]`, `#folder-error` |
//! | skipped files | `#skipped`, `[data-testid=skip-group]` (`data-code`), `[data-testid=skipped-file]`, `[data-testid=skip-advice]` |
//! | model | `[data-testid=model-status]`, `#model-download-button`, `[data-testid=model-download]` (progress) |
//! | search | `#search-form`, `#q`, `#search-submit`, `#search-error`, `[data-testid=result]` (`a[data-testid=result-link]`), `[data-testid=result-count]`, `#next-page`, `#prev-page` |
//! | document | `#doc-title`, `#doc-download`, `#doc-lines`, `#L120` (a line), `.hl` (highlighted lines), `#outline`, `[data-testid=outline-entry]`, `#doc-next-page`, `#doc-prev-page` |
//! | find in document | `#find-form`, `#find`, `#find-case`, `#find-regex`, `#find-submit`, `#find-count`, `#find-next`, `#find-prev`, `#find-error` |
//! | notes list | `#note-new`, `#notes-q`, `[data-testid=note]`, `[data-testid=tag-filter]`, `#notes-trash-link` |
//! | note editor | `#note-form`, `#note-body`, `#note-tags`, `#note-save`, `#note-toolbar` (`[data-md=bold]` …), `#note-saved`, `#note-error` |
//! | note conflict | `#conflict`, `#conflict-theirs`, `#conflict-mine`, `#conflict-overwrite` |
//! | note delete | `#note-delete` (opens `#delete-confirm`), `#note-delete-confirm`, `#note-delete-cancel` |
//! | trash | `[data-testid=trashed-note]`, `[data-testid=note-restore]` |
//! | libraries | `#library-new-form`, `#library-name`, `#library-folders`, `#library-tags`, `#library-create`, `[data-testid=library]`, `[data-testid=library-delete]`, `#library-error` |
//! | agents | `[data-testid=agent-config]` (`data-client`: `claude-desktop`, `claude-code`, `cursor`, `vscode`, `http`, `stdio`, `uvx`), `[data-testid=copy]`, `#lan-token` (`#lan-reveal`), `#lan-form` |

mod i18n;
mod layout;
mod live;
mod pages;
mod security;

use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use linkly_http::Access;
use linkly_tools::Linkly;

pub use crate::i18n::Lang;
pub use crate::live::Live;
pub use crate::security::CSP;

/// What the window needs to know of the server that serves it.
#[derive(Clone)]
pub struct WindowOptions {
    /// The MCP endpoint of this server (`http://127.0.0.1:60606/mcp`), shown on the Agents page.
    pub endpoint: String,
    /// The address the server is bound to.
    pub bind: IpAddr,
    /// The LAN token when the server is reachable beyond loopback (`--lan`): then every peer
    /// but a local one signs in with it.
    pub lan_token: Option<String>,
}

impl std::fmt::Debug for WindowOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowOptions")
            .field("endpoint", &self.endpoint)
            .field("bind", &self.bind)
            .field("lan_token", &self.lan_token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// The window's shared state.
#[derive(Clone)]
pub(crate) struct App(Arc<AppInner>);

pub(crate) struct AppInner {
    pub(crate) linkly: Arc<Linkly>,
    pub(crate) live: Arc<Live>,
    pub(crate) opts: WindowOptions,
    /// Who may use the window (the rule of `/mcp`).
    pub(crate) access: Access,
    /// Drawn at start: the CSRF tokens and sign-in proofs derive from it.
    pub(crate) secret: [u8; 32],
}

impl std::ops::Deref for App {
    type Target = AppInner;
    fn deref(&self) -> &AppInner {
        &self.0
    }
}

/// What the gate learned of a request, for the handlers.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The page's language.
    pub(crate) lang: Lang,
    /// The session's CSRF token, put in every form.
    pub(crate) csrf: String,
    /// The session id.
    pub(crate) sid: String,
    /// True when the visitor signed in with the LAN token (not a local peer).
    pub(crate) lan: bool,
    /// The path and query of this page (where the language switch comes back to).
    pub(crate) here: String,
}

/// The window, to mount at `/` (its routes are `/`, `/search`, `/doc/…`, `/notes…`,
/// `/libraries…`, `/agents…`, `/folders/…`, `/lang`, `/signin`, `/api/status`, `/assets/…`).
///
/// `live` is where the server's keep-fresh engine reports its progress (see [`Live::record`]).
pub fn router(linkly: Arc<Linkly>, live: Arc<Live>, opts: WindowOptions) -> Router {
    let app = App(Arc::new(AppInner {
        linkly,
        live,
        access: Access::new(opts.bind, opts.lan_token.clone()),
        opts,
        secret: security::new_secret(),
    }));
    Router::new()
        .route("/", get(pages::overview::page_handler))
        .route("/folders/add", post(pages::overview::add_folder))
        .route("/folders/remove", post(pages::overview::remove_folder))
        .route("/api/status", get(pages::overview::status))
        .route("/model/download", post(pages::overview::download_model))
        .route("/search", get(pages::search::page_handler))
        .route("/doc/{id}", get(pages::document::page_handler))
        .route("/doc/{id}/file", get(pages::document::file))
        .route("/notes", get(pages::notes::list))
        .route("/notes/new", get(pages::notes::new))
        .route("/notes/edit/{note_id}", get(pages::notes::edit))
        .route("/notes/save", post(pages::notes::save))
        .route("/notes/delete", post(pages::notes::delete))
        .route("/notes/trash", get(pages::notes::trash))
        .route("/notes/restore", post(pages::notes::restore))
        .route("/libraries", get(pages::libraries::page_handler))
        .route("/libraries/create", post(pages::libraries::create))
        .route("/libraries/edit", post(pages::libraries::edit))
        .route("/libraries/delete", post(pages::libraries::delete))
        .route("/agents", get(pages::agents::page_handler))
        .route("/agents/lan", post(pages::agents::lan))
        .route("/lang", post(pages::set_lang))
        .route(
            "/signin",
            get(pages::signin::page_handler).post(pages::signin::submit),
        )
        .route("/assets/{name}", get(layout::asset))
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            security::gate,
        ))
        .with_state(app)
}
