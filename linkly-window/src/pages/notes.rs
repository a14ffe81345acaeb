//! Notes: the list (tag filter, search), the editor (its toolbar offers exactly what
//! `note_save` accepts: paragraphs and line breaks, bold, strikethrough, bulleted and numbered
//! lists, plain text), compare-and-swap saves whose lost race shows both texts, and deletion
//! into the trash with a way back.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use linkly_core::ErrorCode;
use linkly_tools::{NoteSaveParams, NoteView, SearchParams};
use maud::{Markup, html};
use serde::Deserialize;

use crate::layout::{Nav, csrf_field, enc, first, page, parse_query};
use crate::pages::overview::doc_href;
use crate::pages::{blocking, failure, see_other};
use crate::{App, Ctx};

/// Notes per page of the list.
const PER_PAGE: usize = 50;

/// One note of `list scope="notes"` (its JSON answer).
#[derive(Debug, Deserialize)]
struct ListedNote {
    doc_id: Option<String>,
    note_id: Option<String>,
    title: Option<String>,
    path: String,
    modified_at: i64,
    #[serde(default)]
    tags: Vec<String>,
    snippet: Option<String>,
    /// The agent that wrote it (`app_name`); none when the person did.
    #[serde(default)]
    source: Option<String>,
}

#[derive(Debug, Deserialize)]
struct NotesAnswer {
    total: usize,
    has_more: bool,
    items: Vec<ListedNote>,
    #[serde(default)]
    available_tags: Vec<String>,
}

enum Listing {
    All(NotesAnswer),
    Found(linkly_tools::SearchResponse),
}

/// `GET /notes`.
pub(crate) async fn list(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    RawQuery(raw): RawQuery,
) -> Response {
    let l = ctx.lang;
    let p = parse_query(raw.as_deref());
    let tag = first(&p, "tag").unwrap_or("").trim().to_string();
    let q = first(&p, "q").unwrap_or("").trim().to_string();
    let pageno: usize = first(&p, "page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let deleted = first(&p, "deleted").map(str::to_string);
    let (tag2, q2) = (tag.clone(), q.clone());
    let listing = blocking(&app, move |linkly| -> Result<(Listing, Vec<String>), String> {
        let tags = (!tag2.is_empty()).then(|| vec![tag2.clone()]);
        // The tag chips always come from the whole list.
        let all = linkly
            .call(
                "list",
                serde_json::json!({"scope": "notes", "limit": 1, "snippet": false, "output_format": "json"}),
            )
            .map_err(|e| e.to_string())?;
        let chips = serde_json::from_str::<NotesAnswer>(&all.text)
            .map(|a| a.available_tags)
            .unwrap_or_default();
        if !q2.is_empty() {
            return linkly
                .search(SearchParams {
                    query: q2,
                    scope: Some(linkly_tools::SearchScope::Notes),
                    tags,
                    limit: Some(50),
                    ..SearchParams::default()
                })
                .map(|r| (Listing::Found(r), chips))
                .map_err(|e| e.message);
        }
        let out = linkly
            .call(
                "list",
                serde_json::json!({
                    "scope": "notes", "tags": tags, "limit": PER_PAGE,
                    "offset": (pageno - 1) * PER_PAGE, "output_format": "json",
                }),
            )
            .map_err(|e| e.to_string())?;
        if out.is_error {
            return Err(out.text);
        }
        serde_json::from_str::<NotesAnswer>(&out.text)
            .map(|a| (Listing::All(a), chips))
            .map_err(|e| e.to_string())
    })
    .await;
    let (listing, chips, error) = match listing {
        Ok((lst, chips)) => (Some(lst), chips, None),
        Err(m) => (None, Vec::new(), Some(m)),
    };
    let main = html! {
        header.page-head {
            h1 { (l.t("notes.title")) }
            a #note-new.button.primary href="/notes/new" { (l.t("notes.new")) }
        }
        @if let Some(name) = &deleted {
            div.notice #note-deleted role="status" {
                (l.t("notes.deleted")) " "
                form.inline method="post" action="/notes/restore" {
                    (csrf_field(&ctx))
                    input type="hidden" name="name" value=(name);
                    button #note-undo.link type="submit" data-testid="note-restore" { (l.t("notes.undo")) }
                }
            }
        }
        form.search-row method="get" action="/notes" role="search" {
            label.sr for="notes-q" { (l.t("notes.search")) }
            input #notes-q type="search" name="q" value=(q) placeholder=(l.t("notes.search"));
            @if !tag.is_empty() { input type="hidden" name="tag" value=(tag); }
            button type="submit" { (l.t("search.submit")) }
        }
        @if let Some(m) = &error { p #notes-error.error role="alert" { (m) } }
        @if !chips.is_empty() {
            div.chips {
                a.chip.active[tag.is_empty()] data-testid="tag-filter" href={ "/notes" @if !q.is_empty() { "?q=" (enc(&q)) } } { (l.t("notes.all_tags")) }
                @for c in &chips {
                    a.chip.active[*c == tag] data-testid="tag-filter" data-tag=(c)
                        href={ "/notes?tag=" (enc(c)) @if !q.is_empty() { "&q=" (enc(&q)) } } { "#" (c) }
                }
            }
        }
        @match &listing {
            Some(Listing::All(a)) => {
                @if a.items.is_empty() { p.empty { (l.t("notes.none")) } }
                ul.note-list {
                    @for n in &a.items { (note_item(&ctx, n)) }
                }
                nav.pager {
                    @if pageno > 1 { a href={ "/notes?page=" (pageno - 1) @if !tag.is_empty() { "&tag=" (enc(&tag)) } } { "← " (l.t("pager.prev")) } }
                    span.muted { (l.tf("notes.count", &[("n", &l.num(a.total as u64))])) }
                    @if a.has_more { a href={ "/notes?page=" (pageno + 1) @if !tag.is_empty() { "&tag=" (enc(&tag)) } } { (l.t("pager.next")) " →" } }
                }
            }
            Some(Listing::Found(r)) => {
                @if r.results.is_empty() { p.empty { (l.t("search.none")) } }
                ul.note-list {
                    @for hit in &r.results {
                        li.note-item data-testid="note" {
                            a.note-title href=(doc_href(&hit.doc_id)) { (hit.title) }
                            p.snippet { (crate::layout::highlight(&hit.snippet, &hit.matched_terms)) }
                        }
                    }
                }
            }
            None => {}
        }
        p { a #notes-trash-link href="/notes/trash" { (l.t("notes.trash")) } }
    };
    page(&ctx, Nav::Notes, l.t("notes.title"), main)
}

fn note_item(ctx: &Ctx, n: &ListedNote) -> Markup {
    let l = ctx.lang;
    let title = n
        .title
        .clone()
        .unwrap_or_else(|| l.t("notes.untitled").to_string());
    let href = match (&n.note_id, &n.doc_id) {
        (Some(id), _) => format!("/notes/edit/{id}"),
        (None, Some(d)) => doc_href(d),
        (None, None) => "/notes".to_string(),
    };
    html! {
        li.note-item data-testid="note" data-note-id=[n.note_id.as_deref()] {
            a.note-title href=(href) { (title) }
            " "
            @match &n.source {
                Some(agent) => span.badge data-testid="note-source" data-source="agent" title=(l.t("notes.source_agent")) { (agent) },
                None => span.badge data-testid="note-source" data-source="you" { (l.t("notes.source_you")) },
            }
            span.muted.date { (l.datetime(n.modified_at)) }
            @if let Some(s) = &n.snippet { p.snippet { (s) } }
            @if !n.tags.is_empty() {
                div.tags { @for t in &n.tags { a.tag href={ "/notes?tag=" (enc(t)) } { "#" (t) } } }
            }
            span.sr { (n.path) }
        }
    }
}

/// What the editor shows.
struct Editor<'a> {
    note: Option<&'a NoteView>,
    /// The text in the box (the person's, after a failed save).
    body: &'a str,
    /// The version the next save is based on.
    base_version: Option<&'a str>,
    error: Option<&'a str>,
    /// A lost race: the note as it is now.
    conflict: Option<&'a NoteView>,
    flash: Option<&'static str>,
}

fn editor(ctx: &Ctx, e: Editor<'_>) -> Response {
    let l = ctx.lang;
    let title = e
        .note
        .and_then(|n| n.title.clone())
        .unwrap_or_else(|| l.t("notes.new").to_string());
    let main = html! {
        header.page-head {
            h1 { (title) }
            a.button href="/notes" { "← " (l.t("notes.title")) }
        }
        @if let Some(f) = e.flash { p #note-saved.notice role="status" { (f) } }
        @if let Some(c) = e.conflict {
            section #conflict.conflict role="alert" {
                h2 { (l.t("conflict.title")) }
                p { (l.t("conflict.body")) }
                div.grid2 {
                    div {
                        h3 { (l.t("conflict.theirs")) }
                        textarea #conflict-theirs readonly rows="12" { (c.body) }
                    }
                    div {
                        h3 { (l.t("conflict.mine")) }
                        textarea #conflict-mine readonly rows="12" { (e.body) }
                    }
                }
                p.muted { (l.t("conflict.howto")) }
            }
        }
        form #note-form.editor method="post" action="/notes/save" {
            (csrf_field(ctx))
            input type="hidden" name="mode" value=(if e.note.is_some() { "edit" } else { "create" });
            @if let Some(n) = e.note {
                input type="hidden" name="note_id" value=(n.note_id);
            }
            @if let Some(v) = e.base_version { input #note-version type="hidden" name="base_version" value=(v); }
            div #note-toolbar.toolbar role="toolbar" aria-label=(l.t("editor.toolbar")) hidden {
                button type="button" data-md="bold" title=(l.t("editor.bold")) { b { "B" } }
                button type="button" data-md="strike" title=(l.t("editor.strike")) { s { "S" } }
                button type="button" data-md="ul" title=(l.t("editor.ul")) { "•" }
                button type="button" data-md="ol" title=(l.t("editor.ol")) { "1." }
                button type="button" data-md="br" title=(l.t("editor.br")) { "↵" }
            }
            label.sr for="note-body" { (l.t("editor.body")) }
            textarea #note-body name="content" rows="18" required
                placeholder=(l.t("editor.placeholder")) { (e.body) }
            p.muted.small { (l.t("editor.allowed")) }
            label for="note-tags" { (l.t("editor.tags")) }
            input #note-tags type="text" name="tags" placeholder="work, ideas";
            @if let Some(m) = e.error { p #note-error.error role="alert" { (m) } }
            div.actions {
                @if e.conflict.is_some() {
                    button #conflict-overwrite.primary type="submit" { (l.t("conflict.overwrite")) }
                } @else {
                    button #note-save.primary type="submit" { (l.t("editor.save")) }
                }
            }
        }
        @if let (Some(n), None) = (e.note, e.conflict) {
            details #delete-confirm.danger-zone {
                summary #note-delete { (l.t("notes.delete")) }
                p { (l.t("notes.delete_confirm")) }
                form method="post" action="/notes/delete" {
                    (csrf_field(ctx))
                    input type="hidden" name="note_id" value=(n.note_id);
                    input type="hidden" name="base_version" value=(n.version);
                    button #note-delete-confirm.danger type="submit" { (l.t("notes.delete_yes")) }
                    " "
                    a #note-delete-cancel.button href={ "/notes/edit/" (n.note_id) } { (l.t("notes.cancel")) }
                }
            }
        }
    };
    let mut res = page(ctx, Nav::Notes, &title, main);
    if e.error.is_some() || e.conflict.is_some() {
        *res.status_mut() = if e.conflict.is_some() {
            StatusCode::CONFLICT
        } else {
            StatusCode::UNPROCESSABLE_ENTITY
        };
    }
    res
}

/// `GET /notes/new`.
pub(crate) async fn new(Extension(ctx): Extension<Ctx>) -> Response {
    editor(
        &ctx,
        Editor {
            note: None,
            body: "",
            base_version: None,
            error: None,
            conflict: None,
            flash: None,
        },
    )
}

/// `GET /notes/edit/{note_id}`.
pub(crate) async fn edit(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Path(note_id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let l = ctx.lang;
    let note = blocking(&app, move |linkly| linkly.note(&note_id)).await;
    let p = parse_query(raw.as_deref());
    let flash = match first(&p, "done") {
        Some("saved") => Some(l.t("notes.saved")),
        Some("restored") => Some(l.t("notes.restored")),
        _ => None,
    };
    match note {
        Ok(n) => editor(
            &ctx,
            Editor {
                note: Some(&n),
                body: &n.body,
                base_version: Some(&n.version),
                error: None,
                conflict: None,
                flash,
            },
        ),
        Err(e) => failure(&ctx, StatusCode::NOT_FOUND, &e.message),
    }
}

#[derive(Deserialize)]
pub(crate) struct SaveForm {
    mode: String,
    #[serde(default)]
    note_id: Option<String>,
    #[serde(default)]
    base_version: Option<String>,
    content: String,
    #[serde(default)]
    tags: String,
}

/// `POST /notes/save`: `note_save`; a lost race shows both texts.
pub(crate) async fn save(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<SaveForm>,
) -> Response {
    let tags: Vec<String> = f
        .tags
        .split([',', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    // Browsers send CRLF line ends from a textarea.
    let content = f.content.replace("\r\n", "\n");
    let params = NoteSaveParams {
        mode: linkly_tools::NoteMode::from_token(&f.mode).unwrap_or_default(),
        content: content.clone(),
        note_id: f.note_id.clone().filter(|s| !s.is_empty()),
        base_version: f.base_version.clone().filter(|s| !s.is_empty()),
        tags: (!tags.is_empty()).then_some(tags),
        app_name: None,
    };
    let note_id = params.note_id.clone();
    let result = blocking(&app, move |linkly| {
        // The person's own note: any Markdown (the agents' whitelist is for agents).
        let saved = linkly.note_save_by_person(params);
        match saved {
            Ok(s) => Ok(s.note_id),
            Err(e) => {
                // The note as it is now, for the conflict panel (or the editor after an error).
                let now = note_id.as_deref().and_then(|id| linkly.note(id).ok());
                Err(Box::new((e, now)))
            }
        }
    })
    .await;
    match result {
        Ok(id) => see_other(&format!("/notes/edit/{id}?done=saved")),
        Err(failed) if failed.0.code == ErrorCode::NoteVersionConflict && failed.1.is_some() => {
            let now = failed.1.unwrap_or_else(|| unreachable!());
            editor(
                &ctx,
                Editor {
                    note: Some(&now),
                    body: &content,
                    base_version: Some(&now.version),
                    error: None,
                    conflict: Some(&now),
                    flash: None,
                },
            )
        }
        Err(failed) => {
            let (e, now) = *failed;
            editor(
                &ctx,
                Editor {
                    note: now.as_ref(),
                    body: &content,
                    base_version: f.base_version.as_deref(),
                    error: Some(&e.message),
                    conflict: None,
                    flash: None,
                },
            )
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct DeleteForm {
    note_id: String,
    base_version: String,
}

/// `POST /notes/delete`: into the trash; the list then offers to undo.
pub(crate) async fn delete(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<DeleteForm>,
) -> Response {
    let result = blocking(&app, move |linkly| {
        linkly.note_delete(&f.note_id, &f.base_version)
    })
    .await;
    match result {
        Ok(d) => see_other(&format!("/notes?deleted={}", enc(&d.trash_name))),
        Err(e) => failure(&ctx, StatusCode::CONFLICT, &e.message),
    }
}

/// `GET /notes/trash`.
pub(crate) async fn trash(State(app): State<App>, Extension(ctx): Extension<Ctx>) -> Response {
    let l = ctx.lang;
    let items = blocking(&app, |linkly| linkly.trashed_notes()).await;
    let items = match items {
        Ok(i) => i,
        Err(e) => return failure(&ctx, StatusCode::INTERNAL_SERVER_ERROR, &e.message),
    };
    let main = html! {
        header.page-head {
            h1 { (l.t("trash.title")) }
            a.button href="/notes" { "← " (l.t("notes.title")) }
        }
        p.muted { (l.t("trash.body")) }
        @if items.is_empty() { p.empty { (l.t("trash.empty")) } }
        ul.note-list {
            @for t in &items {
                li.note-item data-testid="trashed-note" {
                    span.note-title { (t.title) }
                    span.muted.date { (l.tf("trash.deleted_at", &[("when", &l.datetime(t.deleted_at))])) }
                    form.inline method="post" action="/notes/restore" {
                        (csrf_field(&ctx))
                        input type="hidden" name="name" value=(t.name);
                        button type="submit" data-testid="note-restore" { (l.t("trash.restore")) }
                    }
                }
            }
        }
    };
    page(&ctx, Nav::Notes, l.t("trash.title"), main)
}

#[derive(Deserialize)]
pub(crate) struct RestoreForm {
    name: String,
}

/// `POST /notes/restore`.
pub(crate) async fn restore(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<RestoreForm>,
) -> Response {
    let result = blocking(&app, move |linkly| linkly.note_restore(&f.name)).await;
    match result {
        Ok(n) if !n.note_id.is_empty() => {
            see_other(&format!("/notes/edit/{}?done=restored", n.note_id))
        }
        Ok(_) => see_other("/notes"),
        Err(e) => failure(&ctx, StatusCode::NOT_FOUND, &e.message),
    }
}
