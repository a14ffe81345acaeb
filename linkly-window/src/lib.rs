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
//! Safety (see `security` and `linkly_http::Gate`): every route has a class (public, read, the
//! person's) declared in [`router`] and enforced by the host's one gate; the person signs in with
//! the per-start local secret (`linkly open`'s one-time link), a LAN visitor with the LAN token
//! (HttpOnly, SameSite=Strict cookies); every POST checks `Origin` and the session's CSRF token; a strict Content-Security-Policy without inline script or style; documents are
//! served by id only, never by a path from the URL.
//!
//! # Selectors for browser tests
//!
//! Every element a scenario needs has a stable `id` or `data-testid`:
//!
//! | What | Selector |
//! |---|---|
//! | navigation links | `#nav-overview`, `#nav-search`, `#nav-notes`, `#nav-libraries`, `#nav-agents`, `#nav-settings` |
//! | language switch (select, button) | `#lang-select`, `#lang-apply` (form `#lang-form`) |
//! | server unreachable banner | `#offline` |
//! | overview counts | `[data-testid=doc-count]`, `[data-testid=indexed-count]`, `[data-testid=index-state]` |
//! | sync progress | `#progress` (`[data-testid=progress-text]`) |
//! | folders | `#folder-add-form`, `#folder-path`, `#folder-add`, `[data-testid=folder]`, `[data-testid=folder-remove]`, `#folder-error` |
//! | skipped files | `#skipped`, `[data-testid=skip-group]` (`data-code`), `[data-testid=skipped-file]`, `[data-testid=skip-advice]`, `[data-testid=skip-media-heading]` (before the audio and video groups) |
//! | model | `[data-testid=model-status]`, `#model-download-button`, `[data-testid=model-download]` (progress) |
//! | search | `#search-form`, `#q`, `#search-submit`, `#search-error`, `[data-testid=result]` (`a[data-testid=result-link]`), `[data-testid=result-count]`, `#next-page`, `#prev-page` |
//! | document | `#doc-title`, `#doc-download`, `#doc-lines`, `#L120` (a line), `.hl` (highlighted lines), `#outline`, `[data-testid=outline-entry]`, `#doc-next-page`, `#doc-prev-page` |
//! | find in document | `#find-form`, `#find`, `#find-case`, `#find-regex`, `#find-submit`, `#find-count`, `#find-next`, `#find-prev`, `#find-error` |
//! | notes list | `#note-new`, `#notes-q`, `[data-testid=note]` (`[data-testid=note-source]`, `data-source` = `you` or `agent`), `[data-testid=tag-filter]`, `#notes-trash-link` |
//! | note editor | `#note-form`, `#note-body`, `#note-tags`, `#note-save`, `#note-toolbar` (`[data-md=bold]` …), `#note-saved`, `#note-error` |
//! | note conflict | `#conflict`, `#conflict-theirs`, `#conflict-mine`, `#conflict-overwrite` |
//! | note delete | `#note-delete` (opens `#delete-confirm`), `#note-delete-confirm`, `#note-delete-cancel` |
//! | trash | `[data-testid=trashed-note]`, `[data-testid=note-restore]` |
//! | libraries | `#library-new-form`, `#library-name`, `#library-folders`, `#library-tags`, `#library-create`, `[data-testid=library]`, `[data-testid=library-delete]`, `#library-error` |
//! | settings | `#settings-folders` (`[data-testid=setting-folder]`, `[data-testid=setting-folder-remove]`, `#settings-folder-path`, `#settings-folder-add`), `#settings-exclude` (`[data-testid=exclusion]`, `[data-testid=exclusion-remove]`, `#exclude-pattern`, `#exclude-add`), `#settings-ocr` (`#ocr-toggle`, `#ocr-languages`, `#ocr-languages-save`), `#settings-transcription` (`#transcribe-audio`, `#transcribe-video`, `[data-testid=media-waiting]`), `#settings-index` (`#reindex-rebuild`, `#reindex-reextract`), `#settings-models` (`[data-testid=model-on-disk]`, `[data-testid=model-remove]`, `#speech-model-remove`, `[data-testid=speech-engine]`, `#model-import-path`, `#model-import`, `#settings-model-download`), `[data-testid=setting-error]` (`data-key`) |
//! | agents | `[data-testid=agent-config]` (`data-client`: `claude-desktop`, `claude-code`, `cursor`, `vscode`, `http`, `stdio`, `uvx`), `[data-testid=copy]`, `#lan-token` (`#lan-reveal`), `#lan-form` |

mod i18n;
mod layout;
mod live;
mod pages;
mod security;

use std::net::IpAddr;
use std::sync::Arc;

use axum::routing::{get, post};
use linkly_http::{Caller, Class, Gate, Routes};
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
    /// Where other computers reach the server while LAN access is on (none: off), asked at
    /// each page.
    pub lan_address: Arc<dyn Fn() -> Option<std::net::SocketAddr> + Send + Sync>,
    /// The agent token MCP clients over HTTP send (shown on the Agents page).
    pub agent_token: Option<String>,
    /// The server's gate: who calls (the window's sign-in makes its cookies).
    pub gate: Gate,
}

impl std::fmt::Debug for WindowOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowOptions")
            .field("endpoint", &self.endpoint)
            .field("bind", &self.bind)
            .field("lan_address", &(self.lan_address)())
            .field("agent_token", &self.agent_token.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

/// The window's shared state.
#[derive(Clone)]
pub(crate) struct App(Arc<AppInner>);

pub(crate) struct AppInner {
    pub(crate) linkly: Arc<Linkly>,
    pub(crate) live: Arc<Live>,
    pub(crate) opts: WindowOptions,
    /// Drawn at start: the CSRF tokens derive from it.
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
    /// Who calls (the gate's finding).
    pub(crate) caller: Caller,
    /// True when the caller is a LAN visitor (signed in with the LAN token).
    pub(crate) lan: bool,
    /// What the tools let this caller read (a LAN visitor: the shared libraries only).
    pub(crate) audience: linkly_tools::Audience,
    /// The path and query of this page (where the language switch comes back to).
    pub(crate) here: String,
}

/// The window, to mount at `/` (its routes are `/`, `/search`, `/doc/…`, `/notes…`,
/// `/libraries…`, `/agents…`, `/settings…`, `/folders/…`, `/lang`, `/signin…`, `/api/status`, `/assets/…`),
/// each with its [`Class`]: the host puts them behind `opts.gate` ([`linkly_http::Gate::wrap`]),
/// whose refusals this window renders (a page in the visitor's language).
///
/// `live` is where the server's keep-fresh engine reports its progress (see [`Live::record`]).
pub fn router(linkly: Arc<Linkly>, live: Arc<Live>, opts: WindowOptions) -> Routes {
    opts.gate
        .set_refusal_page(Arc::new(pages::refusal) as linkly_http::RefusalPage);
    let app = App(Arc::new(AppInner {
        linkly,
        live,
        opts,
        secret: security::new_secret(),
    }));
    use Class::{Person, Public, Read};
    use pages::{agents, document, libraries, notes, overview, search, settings, signin};
    // One line a route: its path, who may call it (the gate enforces it), its handlers.
    Routes::new()
        .route("/", Read, get(overview::page_handler))
        .route("/folders/add", Person, post(overview::add_folder))
        .route("/folders/remove", Person, post(overview::remove_folder))
        .route("/api/status", Read, get(overview::status))
        .route("/model/download", Person, post(overview::download_model))
        .route("/search", Read, get(search::page_handler))
        .route("/doc/{id}", Read, get(document::page_handler))
        .route("/doc/{id}/file", Person, get(document::file))
        .route("/notes", Person, get(notes::list))
        .route("/notes/new", Person, get(notes::new))
        .route("/notes/edit/{note_id}", Person, get(notes::edit))
        .route("/notes/save", Person, post(notes::save))
        .route("/notes/delete", Person, post(notes::delete))
        .route("/notes/trash", Person, get(notes::trash))
        .route("/notes/restore", Person, post(notes::restore))
        .route("/libraries", Person, get(libraries::page_handler))
        .route("/libraries/create", Person, post(libraries::create))
        .route("/libraries/edit", Person, post(libraries::edit))
        .route("/libraries/delete", Person, post(libraries::delete))
        .route("/agents", Person, get(agents::page_handler))
        .route("/agents/lan", Person, post(agents::lan))
        .route("/settings", Person, get(settings::page_handler))
        .route("/settings/change", Person, post(settings::change))
        .route("/settings/reindex", Person, post(settings::reindex))
        .route(
            "/settings/model/import",
            Person,
            post(settings::import_model),
        )
        .route(
            "/settings/model/remove",
            Person,
            post(settings::remove_model),
        )
        .route("/lang", Public, post(pages::set_lang))
        .route(
            "/signin",
            Public,
            get(signin::page_handler).post(signin::submit),
        )
        .route("/signin/link/{code}", Public, get(signin::link))
        .route("/assets/{name}", Public, get(layout::asset))
        .map(|r| {
            r.fallback(pages::not_found)
                .layer(axum::middleware::from_fn_with_state(
                    app.clone(),
                    security::gate,
                ))
                .with_state(app)
        })
}
