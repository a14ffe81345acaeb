//! Overview: the index at a glance (documents by type, what waits, skipped files by reason
//! with what to do), live progress, the watched folders (add, remove) and the model.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::{Extension, Form};
use linkly_tools::{Linkly, Overview};
use maud::html;
use serde::Deserialize;

use crate::layout::{Nav, csrf_field, error_box, page};
use crate::pages::{blocking, failure, see_other};
use crate::{App, Ctx, Lang};

/// What to say about a skip reason, and what to do about it.
fn skip_texts(l: Lang, code: &str) -> (&'static str, &'static str) {
    match code {
        "empty" => (l.t("skip.empty"), l.t("advice.empty")),
        "too_large" => (l.t("skip.too_large"), l.t("advice.too_large")),
        "encoding_unknown" => (l.t("skip.encoding_unknown"), l.t("advice.encoding_unknown")),
        "corrupt" => (l.t("skip.corrupt"), l.t("advice.corrupt")),
        "encrypted" => (l.t("skip.encrypted"), l.t("advice.encrypted")),
        "unsupported_format" => (l.t("skip.unsupported_format"), l.t("advice.unsupported")),
        "unsupported_variant" => (l.t("skip.unsupported_variant"), l.t("advice.unsupported")),
        "no_text_layer" => (l.t("skip.no_text_layer"), l.t("advice.no_text_layer")),
        "ocr_unavailable" => (l.t("skip.ocr_unavailable"), l.t("advice.ocr_unavailable")),
        "ocr_found_nothing" => (
            l.t("skip.ocr_found_nothing"),
            l.t("advice.ocr_found_nothing"),
        ),
        "timeout" => (l.t("skip.timeout"), l.t("advice.timeout")),
        "extractor_failed" => (l.t("skip.extractor_failed"), l.t("advice.extractor_failed")),
        "non_utf8_path" => (l.t("skip.non_utf8_path"), l.t("advice.non_utf8_path")),
        "transcription_off" => (
            l.t("skip.transcription_off"),
            l.t("advice.transcription_off"),
        ),
        "transcription_unavailable" => (
            l.t("skip.transcription_unavailable"),
            l.t("advice.transcription_unavailable"),
        ),
        "no_speech" => (l.t("skip.no_speech"), l.t("advice.no_speech")),
        "no_sound_track" => (l.t("skip.no_sound_track"), l.t("advice.no_sound_track")),
        "codec_unsupported" => (
            l.t("skip.codec_unsupported"),
            l.t("advice.codec_unsupported"),
        ),
        _ => (l.t("skip.other"), l.t("advice.extractor_failed")),
    }
}

fn state_text(l: Lang, state: &str) -> &'static str {
    match state {
        "scanning" => l.t("state.scanning"),
        "indexing" => l.t("state.indexing"),
        "watching" => l.t("state.watching"),
        "idle" => l.t("state.idle"),
        "rebuilding" => l.t("state.rebuilding"),
        _ => l.t("state.error"),
    }
}

/// The overview's data, read in one blocking call.
struct Data {
    overview: Overview,
    folders: Vec<String>,
    notes_dir: String,
}

fn load(linkly: &Linkly) -> Result<Data, String> {
    let overview = linkly.overview().map_err(|e| e.to_string())?;
    let config = linkly.config();
    Ok(Data {
        overview,
        folders: config
            .folders
            .iter()
            .map(|f| f.to_string_lossy().into_owned())
            .collect(),
        notes_dir: linkly.notes_dir().to_string_lossy().into_owned(),
    })
}

/// `GET /`.
pub(crate) async fn page_get(
    app: App,
    ctx: Ctx,
    folder_error: Option<(String, String)>,
) -> Response {
    // The overview is the person's machine (folders, skipped files); a visitor searches what
    // is shared.
    if ctx.lan {
        return super::see_other("/search");
    }
    let data = blocking(&app, load).await;
    let data = match data {
        Ok(d) => d,
        Err(m) => return failure(&ctx, StatusCode::INTERNAL_SERVER_ERROR, &m),
    };
    let l = ctx.lang;
    let snap = app.live.snapshot();
    let cov = &data.overview.coverage;
    let state = cov.state.as_str();
    let skipped_total: u64 = cov.skipped.values().sum();
    let main = html! {
        header.page-head {
            h1 { (l.t("overview.title")) }
            span.badge data-testid="index-state" data-live="state" data-state=(state) { (state_text(l, state)) }
        }
        section.cards {
            div.card { div.card-label { (l.t("overview.documents")) } div.card-value data-testid="doc-count" data-live="documents" { (l.num(cov.documents)) } }
            div.card { div.card-label { (l.t("overview.indexed")) } div.card-value data-testid="indexed-count" data-live="indexed" { (l.num(cov.indexed)) } }
            div.card { div.card-label { (l.t("overview.skipped")) } div.card-value data-testid="skipped-count" data-live="skipped" { (l.num(skipped_total)) } }
            div.card { div.card-label { (l.t("overview.waiting_embed")) } div.card-value data-testid="waiting-count" data-live="waiting" {
                @match cov.waiting_for_embedding { Some(n) => (l.num(n)), None => "—" }
            } }
        }
        div #progress.progress hidden[snap.phase.is_none()] {
            div.progress-bar { div.progress-fill data-live="progress-fill" {} }
            span data-testid="progress-text" data-live="progress-text" {
                @if let Some(p) = &snap.phase { (progress_text(l, p, snap.done, snap.total)) }
            }
        }
        @if let Some(f) = &snap.failure { p.error role="alert" { (f) } }
        div.grid2 {
            section.panel {
                h2 { (l.t("overview.folders")) }
                ul.folders {
                    @for f in &data.folders {
                        li data-testid="folder" {
                            span.path { (f) }
                            form method="post" action="/folders/remove" data-confirm=(l.t("folders.remove_confirm")) {
                                (csrf_field(&ctx))
                                input type="hidden" name="path" value=(f);
                                button.link-danger type="submit" data-testid="folder-remove" { (l.t("folders.remove")) }
                            }
                        }
                    }
                    li.muted { span.path { (data.notes_dir) } span.tag { (l.t("folders.notes")) } }
                }
                @if data.folders.is_empty() { p.muted { (l.t("folders.none")) } }
                form #folder-add-form.inline-form method="post" action="/folders/add" {
                    (csrf_field(&ctx))
                    label.sr for="folder-path" { (l.t("folders.path")) }
                    input #folder-path type="text" name="path" required
                        placeholder=(l.t("folders.placeholder"))
                        value=[folder_error.as_ref().map(|(p, _)| p.as_str())];
                    button #folder-add.primary type="submit" { (l.t("folders.add")) }
                }
                (error_box("folder-error", folder_error.as_ref().map(|(_, m)| m.as_str())))
            }
            section.panel {
                h2 { (l.t("overview.by_type")) }
                @if data.overview.by_type.is_empty() { p.muted { (l.t("overview.empty")) } }
                @let most = data.overview.by_type.iter().map(|(_, n)| *n).max().unwrap_or(0);
                table.types {
                    @for (t, n) in &data.overview.by_type {
                        tr data-testid="type-count" data-type=(t) {
                            td { span.type-badge { (t) } }
                            td.num { (l.num(*n)) }
                            td.barcell { div class={ "bar " (bar_pct(*n, most)) } {} }
                        }
                    }
                }
                h2 { (l.t("overview.model")) }
                p data-testid="model-status" {
                    (model_status(l, &cov.model)) " · " (l.t("overview.search_mode")) " "
                    strong { (if cov.search_mode == "hybrid" { l.t("mode.hybrid") } else { l.t("mode.keyword") }) }
                }
                @if let Some((done, total)) = snap.download {
                    p data-testid="model-download" { (l.t("overview.downloading")) " " (l.bytes(done)) " / " (l.bytes(total)) }
                } @else if cov.search_mode != "hybrid" && !ctx.lan {
                    form #model-form method="post" action="/model/download" {
                        (csrf_field(&ctx))
                        button #model-download-button type="submit" { (l.t("overview.download_model")) }
                    }
                }
                @if let Some(t) = cov.last_sync.as_deref().and_then(|t| linkly_core::parse_time(t).ok()) {
                    p.muted { (l.t("overview.last_sync")) " " (l.datetime(t)) }
                }
            }
        }
        section #skipped.panel {
            h2 { (l.t("overview.skipped_title")) }
            @if cov.skipped.is_empty() { p.muted { (l.t("overview.no_skipped")) } }
            @for (media, code, count) in skip_order(&cov.skipped) {
                @if media.is_some() { h3.skip-heading data-testid="skip-media-heading" { (l.t("overview.media_group")) } }
                @let (what, todo) = skip_texts(l, code);
                @let files: Vec<_> = data.overview.skipped.iter().filter(|s| &s.code == code).collect();
                details.skip-group data-testid="skip-group" data-code=(code) open[cov.skipped.len() <= 3] {
                    summary { strong { (what) } " " span.count { (l.num(*count)) } " " code.muted { (code) } }
                    p.advice data-testid="skip-advice" { (todo) }
                    ul.skipped-files {
                        @for f in &files {
                            li data-testid="skipped-file" {
                                a href=(doc_href(&f.doc_id)) { (f.path) }
                                @if !f.detail.is_empty() { " " span.muted { "— " (f.detail) } }
                            }
                        }
                    }
                    @if (*count as usize) > files.len() {
                        p.muted { (l.tf("overview.more_skipped", &[("n", &l.num(*count - files.len() as u64))])) }
                    }
                }
            }
        }
    };
    page(&ctx, Nav::Overview, l.t("overview.title"), main)
}

/// The skip reasons of audio and video files: a group of their own on the page.
const MEDIA_CODES: [&str; 5] = [
    "transcription_off",
    "transcription_unavailable",
    "no_speech",
    "no_sound_track",
    "codec_unsupported",
];

/// The skip groups in the page's order: the other reasons, then the media ones (the first of
/// which carries `Some(())`, where the media heading goes).
fn skip_order(
    skipped: &std::collections::BTreeMap<String, u64>,
) -> Vec<(Option<()>, &String, &u64)> {
    let mut out: Vec<(Option<()>, &String, &u64)> = skipped
        .iter()
        .filter(|(c, _)| !MEDIA_CODES.contains(&c.as_str()))
        .map(|(c, n)| (None, c, n))
        .collect();
    let mut first = true;
    for (c, n) in skipped
        .iter()
        .filter(|(c, _)| MEDIA_CODES.contains(&c.as_str()))
    {
        out.push((first.then_some(()), c, n));
        first = false;
    }
    out
}

/// The document page of a `local://N` id.
pub(crate) fn doc_href(doc_id: &str) -> String {
    format!("/doc/{}", doc_id.rsplit('/').next().unwrap_or(doc_id))
}

fn bar_pct(n: u64, total: u64) -> String {
    let pct = if total == 0 {
        0
    } else {
        (n * 100).div_ceil(total).min(100)
    };
    format!("w{}", (pct / 5) * 5)
}

fn progress_text(l: Lang, phase: &str, done: u64, total: u64) -> String {
    let phase = match phase {
        "scanning" => l.t("phase.scanning"),
        "removing" => l.t("phase.removing"),
        "rebuilding" => l.t("phase.rebuilding"),
        _ => l.t("phase.indexing"),
    };
    if total > 0 {
        format!("{phase} {} / {}", l.num(done), l.num(total))
    } else {
        format!("{phase} {}", l.num(done))
    }
}

/// `GET /`.
pub(crate) async fn page_handler(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    page_get(app, ctx, None).await
}

#[derive(Deserialize)]
pub(crate) struct FolderForm {
    path: String,
}

/// Starts a sync of every folder in the background (after a folder was added or removed); its
/// progress goes to the page through [`crate::Live`].
fn sync_in_background(app: &App) {
    // A server's keep-fresh engine follows config.toml and syncs after the change itself.
    if app.linkly.keeps_fresh() {
        return;
    }
    let linkly = app.linkly.clone();
    let live = app.live.clone();
    let _ = std::thread::Builder::new()
        .name("linkly-window-sync".into())
        .spawn(move || {
            if let Err(e) = linkly.index_now(&mut |ev| live.record(ev)) {
                live.record(&linkly_tools::FreshEvent::Failed(e.message));
            }
        });
}

/// `POST /folders/add`: a folder that does not exist, is not a folder or cannot be read is
/// refused with a message next to the field, and nothing is added.
pub(crate) async fn add_folder(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<FolderForm>,
) -> Response {
    let l = ctx.lang;
    let raw = f.path.trim().to_string();
    let path = std::path::PathBuf::from(&raw);
    let checked: Result<(), String> = if raw.is_empty() {
        Err(l.t("folders.err_empty").to_string())
    } else if !path.is_absolute() {
        Err(l.t("folders.err_relative").to_string())
    } else if !path.exists() {
        Err(l.t("folders.err_missing").to_string())
    } else if !path.is_dir() {
        Err(l.t("folders.err_not_dir").to_string())
    } else if std::fs::read_dir(&path).is_err() {
        Err(l.t("folders.err_unreadable").to_string())
    } else {
        Ok(())
    };
    if let Err(m) = checked {
        let mut res = page_get(app, ctx, Some((raw, m))).await;
        *res.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
        return res;
    }
    let added = blocking(&app, move |linkly| {
        linkly.update_config(|c| c.add_folder(&path))
    })
    .await;
    match added {
        Ok(_) => {
            sync_in_background(&app);
            see_other("/")
        }
        Err(e) => {
            let mut res = page_get(app, ctx, Some((raw, e.message))).await;
            *res.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
            res
        }
    }
}

/// `POST /folders/remove`: the folder leaves the configuration and its documents the index.
pub(crate) async fn remove_folder(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<FolderForm>,
) -> Response {
    let path = std::path::PathBuf::from(f.path.trim());
    let removed = blocking(&app, move |linkly| {
        linkly.update_config(|c| Ok(c.remove_folder(&path)))
    })
    .await;
    match removed {
        Ok(_) => {
            sync_in_background(&app);
            see_other("/")
        }
        Err(e) => failure(&ctx, StatusCode::UNPROCESSABLE_ENTITY, &e.message),
    }
}

/// `GET /api/status`: what the page's script polls (every second while a sync runs).
pub(crate) async fn status(State(app): State<App>, Extension(ctx): Extension<Ctx>) -> Response {
    let l = ctx.lang;
    let cov = blocking(&app, |linkly| linkly.coverage()).await;
    let snap = app.live.snapshot();
    let Ok(cov) = cov else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let skipped: u64 = cov.skipped.values().sum();
    let state = cov.state.as_str();
    let busy = snap.phase.is_some() || matches!(state, "scanning" | "indexing" | "rebuilding");
    Json(serde_json::json!({
        "state": state,
        "state_text": state_text(l, state),
        "busy": busy,
        "documents": cov.documents,
        "documents_text": l.num(cov.documents),
        "indexed_text": l.num(cov.indexed),
        "skipped_text": l.num(skipped),
        "waiting_text": cov.waiting_for_embedding.map(|n| l.num(n)).unwrap_or_else(|| "—".into()),
        "phase": snap.phase,
        "done": snap.done,
        "total": snap.total,
        "progress_text": snap.phase.as_deref().map(|p| progress_text(l, p, snap.done, snap.total)),
        "model": cov.model,
        "download": snap.download,
    }))
    .into_response()
}

/// `POST /model/download`: fetches the embedding model in the background (progress on the
/// overview), then loads it and embeds what waits.
pub(crate) async fn download_model(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    if ctx.lan {
        return failure(&ctx, StatusCode::FORBIDDEN, ctx.lang.t("lan.local_only"));
    }
    let linkly = app.linkly.clone();
    let live = app.live.clone();
    let _ = std::thread::Builder::new()
        .name("linkly-window-model".into())
        .spawn(move || {
            let sink = live.clone();
            if let Err(e) = linkly.download_model(std::sync::Arc::new(move |ev| sink.record(ev))) {
                live.record(&linkly_tools::FreshEvent::Failed(e.message));
            }
        });
    see_other("/")
}

/// The model's line in the page's language: the tools say `name: not downloaded`, `name:
/// loading` or `name: ready (384 dimensions)`; other states (downloading, broken) keep the
/// tools' words, which carry figures and reasons.
pub(crate) fn model_status(l: Lang, line: &str) -> String {
    let Some((name, state)) = line.rsplit_once(": ") else {
        return line.to_string();
    };
    let state = match state {
        "not downloaded" => l.t("model.not_downloaded").to_string(),
        "loading" => l.t("model.loading").to_string(),
        s => match s
            .strip_prefix("ready (")
            .and_then(|r| r.strip_suffix(" dimensions)"))
        {
            Some(dim) => l.tf("model.ready", &[("dim", dim)]),
            None => return line.to_string(),
        },
    };
    format!("{name}: {state}")
}
