//! Settings: what `config.toml` holds, changed from the window and put in effect at once
//! (the server's keep-fresh engine follows the file): watched folders and exclusions, OCR and
//! its languages, the audio and video transcription switches (off by default, with how many
//! media files wait), the models on disk, and rebuilding or re-extracting the index.
//!
//! Every change is one `POST /settings/change` (`key`, `op`, `value`, `version`) through
//! `Linkly::change_setting`, the same checks as `linkly config set`: a bad value is refused
//! with what to do and nothing is saved; a `version` older than the setting's (another window
//! saved it meanwhile) is refused with the value now shown. Changes are the person's own: a
//! visitor signed in over the LAN is refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use linkly_core::{Config, SettingError, SettingOp, SkipReason};
use maud::{Markup, html};
use serde::Deserialize;

use crate::layout::{Nav, csrf_field, page};
use crate::pages::overview::model_status;
use crate::pages::{blocking, failure, see_other};
use crate::{App, Ctx, Lang};

/// The media skip codes that wait for transcription.
const MEDIA_WAITING: [&str; 2] = [
    SkipReason::TRANSCRIPTION_OFF,
    SkipReason::TRANSCRIPTION_UNAVAILABLE,
];

/// The page's data, read in one blocking call.
struct Data {
    config: Arc<Config>,
    /// Each shown setting's version.
    versions: BTreeMap<&'static str, String>,
    skipped: BTreeMap<String, u64>,
    ocr_installed: Vec<String>,
    model: String,
    speech_ready: bool,
    models: linkly_tools::ModelsOnDisk,
}

fn load(linkly: &linkly_tools::Linkly) -> Result<Data, String> {
    // What config.toml holds now (another program's change included, before the engine put it
    // in effect), so that the versions are the ones a change is checked against.
    let config = Config::load(linkly.data_dir())
        .map(Arc::new)
        .unwrap_or_else(|_| linkly.config());
    let mut versions = BTreeMap::new();
    for s in linkly_core::SETTINGS {
        if let Ok(v) = config.setting_version(s.key) {
            versions.insert(s.key, v);
        }
    }
    let cov = linkly.coverage().map_err(|e| e.to_string())?;
    Ok(Data {
        config,
        versions,
        skipped: cov.skipped,
        ocr_installed: linkly.ocr_languages(),
        model: cov.model,
        speech_ready: linkly.speech_model_ready(),
        models: linkly.models_on_disk(),
    })
}

/// A refusal to show beside the setting it concerns: the key, the message, the value tried.
pub(crate) struct Refusal {
    key: String,
    message: String,
    value: String,
}

/// A setting's refusal in the page's language.
fn refusal_text(l: Lang, e: &SettingError, installed: &[String]) -> String {
    match e {
        SettingError::Changed { .. } => l.t("settings.err_changed").to_string(),
        SettingError::BadValue { key, value, .. } if key == "ocr.languages" => {
            if installed.is_empty() {
                l.tf("settings.err_no_tesseract", &[("value", value)])
            } else {
                l.tf(
                    "settings.err_language",
                    &[("value", value), ("installed", &installed.join(", "))],
                )
            }
        }
        SettingError::BadValue {
            key,
            value,
            expected,
        } if key == "exclude" => l.tf(
            "settings.err_glob",
            &[
                ("value", value),
                (
                    "why",
                    expected
                        .rsplit('(')
                        .next()
                        .unwrap_or("")
                        .trim_end_matches(')'),
                ),
            ],
        ),
        SettingError::BadValue { key, value, .. } if key == "folders" => {
            let path = std::path::Path::new(value.trim());
            let k = if value.trim().is_empty() {
                "folders.err_empty"
            } else if !path.is_absolute() {
                "folders.err_relative"
            } else if !path.exists() {
                "folders.err_missing"
            } else if !path.is_dir() {
                "folders.err_not_dir"
            } else {
                "folders.err_unreadable"
            };
            l.t(k).to_string()
        }
        SettingError::BadValue { .. } if e.to_string().contains("at least one language") => {
            l.t("settings.err_no_language").to_string()
        }
        other => other.to_string(),
    }
}

/// A hidden form that changes one setting.
fn change_form(ctx: &Ctx, d: &Data, key: &str, op: &str, value: &str, button: Markup) -> Markup {
    html! {
        form.inline method="post" action="/settings/change" {
            (csrf_field(ctx))
            input type="hidden" name="key" value=(key);
            input type="hidden" name="op" value=(op);
            input type="hidden" name="value" value=(value);
            input type="hidden" name="version" value=(d.versions.get(key).map(String::as_str).unwrap_or(""));
            (button)
        }
    }
}

/// The refusal for `key`, when there is one.
fn refusal_box(refusal: Option<&Refusal>, keys: &[&str]) -> Markup {
    html! {
        @if let Some(r) = refusal.filter(|r| keys.contains(&r.key.as_str())) {
            p.error data-testid="setting-error" data-key=(r.key) role="alert" { (r.message) }
        }
    }
}

/// A switch: its state and the button that flips it.
fn switch(ctx: &Ctx, d: &Data, id: &str, key: &str, on: bool) -> Markup {
    let l = ctx.lang;
    html! {
        span.badge data-testid="switch-state" data-on=(on) { (if on { l.t("settings.on") } else { l.t("settings.off") }) }
        " "
        (change_form(ctx, d, key, "set", if on { "false" } else { "true" }, html! {
            button id=(id) class=(if on { "link-danger" } else { "primary" }) type="submit" data-on=(on) {
                (if on { l.t("settings.turn_off") } else { l.t("settings.turn_on") })
            }
        }))
    }
}

async fn render(app: App, ctx: Ctx, refusal: Option<Refusal>) -> Response {
    let data = match blocking(&app, load).await {
        Ok(d) => d,
        Err(m) => return failure(&ctx, StatusCode::INTERNAL_SERVER_ERROR, &m),
    };
    let l = ctx.lang;
    let d = &data;
    let c = &d.config;
    let refusal = refusal.as_ref();
    let tried = |key: &str| refusal.filter(|r| r.key == key).map(|r| r.value.clone());
    let waiting: u64 = MEDIA_WAITING
        .iter()
        .filter_map(|code| d.skipped.get(*code))
        .sum();
    let off = d
        .skipped
        .get(SkipReason::TRANSCRIPTION_OFF)
        .copied()
        .unwrap_or(0);
    let no_model = d
        .skipped
        .get(SkipReason::TRANSCRIPTION_UNAVAILABLE)
        .copied()
        .unwrap_or(0);
    let person = !ctx.lan;
    let main = html! {
        header.page-head { h1 { (l.t("settings.title")) } }
        @if !person { p.notice role="status" { (l.t("settings.local_only")) } }
        section #settings-folders.panel {
            h2 { (l.t("overview.folders")) }
            p.muted { (l.t("settings.folders_help")) }
            ul.folders {
                @for f in &c.folders {
                    @let f = f.to_string_lossy();
                    li data-testid="setting-folder" {
                        span.path { (f) }
                        @if person {
                            form.inline method="post" action="/settings/change" data-confirm=(l.t("folders.remove_confirm")) {
                                (csrf_field(&ctx))
                                input type="hidden" name="key" value="folders";
                                input type="hidden" name="op" value="remove";
                                input type="hidden" name="value" value=(f);
                                input type="hidden" name="version" value=(d.versions.get("folders").map(String::as_str).unwrap_or(""));
                                button.link-danger type="submit" data-testid="setting-folder-remove" { (l.t("folders.remove")) }
                            }
                        }
                    }
                }
            }
            @if c.folders.is_empty() { p.muted { (l.t("folders.none")) } }
            @if person {
                form.inline-form method="post" action="/settings/change" {
                    (csrf_field(&ctx))
                    input type="hidden" name="key" value="folders";
                    input type="hidden" name="op" value="add";
                    input type="hidden" name="version" value=(d.versions.get("folders").map(String::as_str).unwrap_or(""));
                    label.sr for="settings-folder-path" { (l.t("folders.path")) }
                    input #settings-folder-path type="text" name="value" required
                        placeholder=(l.t("folders.placeholder")) value=[tried("folders")];
                    button #settings-folder-add.primary type="submit" { (l.t("folders.add")) }
                }
            }
            (refusal_box(refusal, &["folders"]))
        }
        section #settings-exclude.panel {
            h2 { (l.t("settings.exclude")) }
            p.muted { (l.t("settings.exclude_help")) }
            ul.folders {
                @for p in &c.exclude {
                    li data-testid="exclusion" {
                        code.path { (p) }
                        @if person {
                            (change_form(&ctx, d, "exclude", "remove", p, html! {
                                button.link-danger type="submit" data-testid="exclusion-remove" { (l.t("settings.remove")) }
                            }))
                        }
                    }
                }
            }
            @if c.exclude.is_empty() { p.muted { (l.t("settings.exclude_none")) } }
            @if person {
                form.inline-form method="post" action="/settings/change" {
                    (csrf_field(&ctx))
                    input type="hidden" name="key" value="exclude";
                    input type="hidden" name="op" value="add";
                    input type="hidden" name="version" value=(d.versions.get("exclude").map(String::as_str).unwrap_or(""));
                    label.sr for="exclude-pattern" { (l.t("settings.exclude_pattern")) }
                    input #exclude-pattern type="text" name="value" required
                        placeholder="drafts/**" value=[tried("exclude")];
                    button #exclude-add.primary type="submit" { (l.t("settings.exclude_add")) }
                }
            }
            (refusal_box(refusal, &["exclude"]))
        }
        div.grid2 {
            section #settings-ocr.panel {
                h2 { (l.t("settings.ocr")) }
                p.muted { (l.t("settings.ocr_help")) }
                div.setting-row { (l.t("settings.ocr_enabled")) " " @if person { (switch(&ctx, d, "ocr-toggle", "ocr.enabled", c.ocr.enabled)) } @else { (if c.ocr.enabled { l.t("settings.on") } else { l.t("settings.off") }) } }
                @if person {
                    form.stack method="post" action="/settings/change" {
                        (csrf_field(&ctx))
                        input type="hidden" name="key" value="ocr.languages";
                        input type="hidden" name="op" value="set";
                        input type="hidden" name="version" value=(d.versions.get("ocr.languages").map(String::as_str).unwrap_or(""));
                        label for="ocr-languages" { (l.t("settings.ocr_languages")) }
                        input #ocr-languages type="text" name="value"
                            value=(tried("ocr.languages").unwrap_or_else(|| c.ocr.languages.join(", ")));
                        button #ocr-languages-save type="submit" { (l.t("settings.save")) }
                    }
                } @else {
                    p { (c.ocr.languages.join(", ")) }
                }
                p.muted data-testid="ocr-installed" {
                    @if d.ocr_installed.is_empty() { (l.t("settings.ocr_missing")) }
                    @else { (l.t("settings.ocr_installed")) " " (d.ocr_installed.join(", ")) }
                }
                (refusal_box(refusal, &["ocr.enabled", "ocr.languages"]))
            }
            section #settings-transcription.panel {
                h2 { (l.t("settings.transcription")) }
                p.muted { (l.t("settings.transcription_help")) }
                div.setting-row { (l.t("settings.audio")) " " @if person { (switch(&ctx, d, "transcribe-audio", "transcription.audio", c.transcription.audio)) } }
                div.setting-row { (l.t("settings.video")) " " @if person { (switch(&ctx, d, "transcribe-video", "transcription.video", c.transcription.video)) } }
                p data-testid="media-waiting" data-count=(waiting) {
                    (l.plural("settings.media_waiting", waiting))
                }
                @if off > 0 { p.muted { (l.plural("settings.media_off", off)) } }
                @if no_model > 0 && !d.speech_ready { p.muted { (l.plural("settings.media_no_model", no_model)) } }
                (refusal_box(refusal, &["transcription.audio", "transcription.video"]))
            }
        }
        section #settings-models.panel {
            h2 { (l.t("settings.models")) }
            p data-testid="embedding-model" { strong { (l.t("overview.model")) } (l.t("settings.colon")) (model_status(l, &d.model)) }
            ul.folders {
                @for m in &d.models.embedding {
                    li data-testid="model-on-disk" data-kind="embedding" {
                        span.path { (m.name) }
                        " " span.muted { (l.bytes(m.bytes)) }
                        @if m.selected { " " span.tag { (l.t("settings.model_selected")) } }
                        @else if person {
                            form.inline method="post" action="/settings/model/remove" data-confirm=(l.t("settings.model_remove_confirm")) {
                                (csrf_field(&ctx))
                                input type="hidden" name="kind" value="embedding";
                                input type="hidden" name="name" value=(m.name);
                                button.link-danger type="submit" data-testid="model-remove" { (l.t("settings.remove")) }
                            }
                        }
                    }
                }
            }
            @if person && !d.models.embedding.iter().any(|m| m.selected) {
                form.setting-row method="post" action="/model/download" {
                    (csrf_field(&ctx))
                    button #settings-model-download type="submit" { (l.t("overview.download_model")) }
                }
            }
            div data-testid="speech-model" {
                strong { (l.t("settings.speech_model")) } (l.t("settings.colon"))
                @match &d.models.speech {
                    Some(sp) => {
                        (sp.about) " " span.muted { (l.bytes(sp.bytes)) }
                        @if let Some((chosen, paths)) = &sp.engine {
                            br;
                            span data-testid="speech-engine" {
                                (l.tf("settings.speech_engine", &[("engine", chosen)])) " "
                                span.muted { "(" (paths.iter().map(|(p, ms)| format!("{p} {ms:.0} ms")).collect::<Vec<_>>().join(", ")) ")" }
                            }
                        }
                    }
                    None => (l.t("settings.speech_none")),
                }
            }
            @if person && d.models.speech.is_some() {
                form.inline method="post" action="/settings/model/remove" data-confirm=(l.t("settings.model_remove_confirm")) {
                    (csrf_field(&ctx))
                    input type="hidden" name="kind" value="speech";
                    input type="hidden" name="name" value="";
                    button.link-danger type="submit" #speech-model-remove { (l.t("settings.speech_remove")) }
                }
            }
            @if person {
                form.inline-form method="post" action="/settings/model/import" {
                    (csrf_field(&ctx))
                    label.sr for="model-import-path" { (l.t("settings.model_import_path")) }
                    input #model-import-path type="text" name="path" required
                        placeholder=(l.t("settings.model_import_placeholder")) value=[tried("model")];
                    button #model-import.primary type="submit" { (l.t("settings.model_import")) }
                }
                p.muted { (l.t("settings.model_import_help")) }
            }
            (refusal_box(refusal, &["model"]))
        }
        @if person {
            section #settings-index.panel {
                h2 { (l.t("settings.index")) }
                div.actions {
                    form.inline method="post" action="/settings/reindex" data-confirm=(l.t("settings.rebuild_confirm")) {
                        (csrf_field(&ctx))
                        input type="hidden" name="what" value="rebuild";
                        button #reindex-rebuild type="submit" { (l.t("settings.rebuild")) }
                    }
                    " "
                    form.inline method="post" action="/settings/reindex" data-confirm=(l.t("settings.reextract_confirm")) {
                        (csrf_field(&ctx))
                        input type="hidden" name="what" value="reextract";
                        button #reindex-reextract type="submit" { (l.t("settings.reextract")) }
                    }
                }
                p.muted { (l.t("settings.index_help")) }
            }
        }
    };
    page(&ctx, Nav::Settings, l.t("settings.title"), main)
}

/// `GET /settings`.
pub(crate) async fn page_handler(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    render(app, ctx, None).await
}

#[derive(Deserialize)]
pub(crate) struct ChangeForm {
    key: String,
    op: String,
    #[serde(default)]
    value: String,
    #[serde(default)]
    version: String,
}

/// `POST /settings/change`: one setting changed and saved (`config.toml`), or refused with
/// what to do (422), or refused because it changed since the page was read (409). The
/// server's engine applies a saved change within a second: a folder added is watched and
/// indexed, an exclusion's documents leave the index, a switch turned on transcribes what
/// waited. Person-only.
pub(crate) async fn change(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<ChangeForm>,
) -> Response {
    if ctx.lan {
        return failure(
            &ctx,
            StatusCode::FORBIDDEN,
            ctx.lang.t("settings.local_only"),
        );
    }
    let op = match f.op.as_str() {
        "set" => SettingOp::Set(f.value.clone()),
        "add" => SettingOp::Add(f.value.clone()),
        "remove" => SettingOp::Remove((!f.value.is_empty()).then(|| f.value.clone())),
        _ => return failure(&ctx, StatusCode::BAD_REQUEST, ctx.lang.t("error.title")),
    };
    let key = f.key.clone();
    let version = (!f.version.is_empty()).then(|| f.version.clone());
    let result = blocking(&app, move |linkly| {
        let r = linkly.change_setting(&key, op, version.as_deref());
        // Without an engine in this process (none follows the file), sync here.
        if matches!(r, Ok(Ok(()))) && !linkly.keeps_fresh() {
            let _ = linkly.index_now(&mut |_| {});
        }
        (r, linkly.ocr_languages())
    })
    .await;
    match result {
        (Ok(Ok(())), _) if f.key == "lan_shared_libraries" => see_other("/agents#lan"),
        (Ok(Ok(())), _) => see_other(&format!("/settings#{}", anchor(&f.key))),
        // Shared libraries are chosen on the Agents page, which has no place for a refusal.
        (Ok(Err(e)), installed) if f.key == "lan_shared_libraries" => failure(
            &ctx,
            StatusCode::CONFLICT,
            &refusal_text(ctx.lang, &e, &installed),
        ),
        (Ok(Err(e)), installed) => {
            let status = if matches!(e, SettingError::Changed { .. }) {
                StatusCode::CONFLICT
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            let refusal = Refusal {
                key: f.key.clone(),
                message: refusal_text(ctx.lang, &e, &installed),
                value: f.value.clone(),
            };
            let mut res = render(app, ctx, Some(refusal)).await;
            *res.status_mut() = status;
            res
        }
        (Err(e), _) => failure(&ctx, StatusCode::INTERNAL_SERVER_ERROR, &e.message),
    }
}

/// The page section of a key.
fn anchor(key: &str) -> &'static str {
    match key {
        "folders" => "settings-folders",
        "exclude" => "settings-exclude",
        "ocr.enabled" | "ocr.languages" => "settings-ocr",
        "transcription.audio" | "transcription.video" => "settings-transcription",
        _ => "settings-index",
    }
}

#[derive(Deserialize)]
pub(crate) struct ImportForm {
    path: String,
}

/// `POST /settings/model/import`: a Whisper folder becomes the speech model, an embedding
/// model folder an embedding model; anything else is refused saying what was expected (422).
/// Person-only.
pub(crate) async fn import_model(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<ImportForm>,
) -> Response {
    if ctx.lan {
        return failure(
            &ctx,
            StatusCode::FORBIDDEN,
            ctx.lang.t("settings.local_only"),
        );
    }
    let raw = f.path.trim().to_string();
    let path = std::path::PathBuf::from(&raw);
    let imported = blocking(&app, move |linkly| {
        let r = linkly.import_model(&path);
        if r.is_ok() && !linkly.keeps_fresh() {
            let _ = linkly.index_now(&mut |_| {});
        }
        r
    })
    .await;
    match imported {
        Ok(_) => {
            sync_after_model(&app);
            see_other("/settings#settings-models")
        }
        Err(e) => {
            let refusal = Refusal {
                key: "model".into(),
                message: ctx
                    .lang
                    .tf("settings.model_refused", &[("why", &e.message)]),
                value: raw,
            };
            let mut res = render(app, ctx, Some(refusal)).await;
            *res.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
            res
        }
    }
}

/// After a model arrived: the media files that waited for it are transcribed, and an
/// embedding model is loaded, by a sync in the background.
fn sync_after_model(app: &App) {
    let linkly = app.linkly.clone();
    let live = app.live.clone();
    let _ = std::thread::Builder::new()
        .name("linkly-window-model-sync".into())
        .spawn(move || {
            if let Err(e) = linkly.index_now(&mut |ev| live.record(ev)) {
                live.record(&linkly_tools::FreshEvent::Failed(e.message));
            }
        });
}

#[derive(Deserialize)]
pub(crate) struct RemoveModelForm {
    kind: String,
    #[serde(default)]
    name: String,
}

/// `POST /settings/model/remove`: deletes the speech model's folder, or an embedding model's
/// that is not the selected one. Person-only.
pub(crate) async fn remove_model(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<RemoveModelForm>,
) -> Response {
    if ctx.lan {
        return failure(
            &ctx,
            StatusCode::FORBIDDEN,
            ctx.lang.t("settings.local_only"),
        );
    }
    let speech = f.kind == "speech";
    let name = f.name.clone();
    match blocking(&app, move |linkly| linkly.remove_model(speech, &name)).await {
        Ok(()) => see_other("/settings#settings-models"),
        Err(e) => {
            let refusal = Refusal {
                key: "model".into(),
                message: ctx
                    .lang
                    .tf("settings.model_refused", &[("why", &e.message)]),
                value: String::new(),
            };
            let mut res = render(app, ctx, Some(refusal)).await;
            *res.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
            res
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct ReindexForm {
    what: String,
}

/// `POST /settings/reindex`: `rebuild` (the full-text index from the store, nothing
/// extracted again) or `reextract` (every file read and extracted again), in the background
/// with progress on the overview. Person-only.
pub(crate) async fn reindex(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<ReindexForm>,
) -> Response {
    if ctx.lan {
        return failure(
            &ctx,
            StatusCode::FORBIDDEN,
            ctx.lang.t("settings.local_only"),
        );
    }
    let rebuild = match f.what.as_str() {
        "rebuild" => true,
        "reextract" => false,
        _ => return failure(&ctx, StatusCode::BAD_REQUEST, ctx.lang.t("error.title")),
    };
    let linkly = app.linkly.clone();
    let live = app.live.clone();
    let _ = std::thread::Builder::new()
        .name("linkly-window-reindex".into())
        .spawn(move || {
            let mut record = |ev: &linkly_tools::FreshEvent| live.record(ev);
            let failed = if rebuild {
                linkly.rebuild_search_index(&mut record).err()
            } else {
                linkly.reextract_all(&mut record).err()
            };
            if let Some(e) = failed {
                live.record(&linkly_tools::FreshEvent::Failed(e.message));
            }
        });
    see_other("/")
}
