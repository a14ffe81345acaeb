//! Libraries: create, edit (name, description, folders, note-tag filter) and delete, with
//! their document counts (`list_libraries`); the changes go through the configuration.

use std::path::PathBuf;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::{Extension, Form};
use linkly_core::LibraryEdit;
use linkly_tools::LibraryInfo;
use maud::html;
use serde::Deserialize;

use crate::layout::{Nav, csrf_field, error_box, page};
use crate::pages::{blocking, see_other};
use crate::{App, Ctx};

fn lines(s: &str) -> Vec<PathBuf> {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect()
}

fn tags(s: &str) -> Vec<String> {
    s.split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

async fn render(app: App, ctx: Ctx, error: Option<String>, status: StatusCode) -> Response {
    let l = ctx.lang;
    let libs: Result<Vec<LibraryInfo>, String> = blocking(&app, |linkly| {
        linkly
            .list_libraries()
            .map(|r| r.libraries)
            .map_err(|e| e.message)
    })
    .await;
    let (libs, load_error) = match libs {
        Ok(v) => (v, None),
        Err(m) => (Vec::new(), Some(m)),
    };
    let main = html! {
        header.page-head { h1 { (l.t("libraries.title")) } }
        p.muted { (l.t("libraries.intro")) }
        @if let Some(m) = &load_error { p.error role="alert" { (m) } }
        @if libs.is_empty() { p.empty { (l.t("libraries.none")) } }
        div.library-list {
            @for lib in &libs {
                section.panel data-testid="library" data-name=(lib.name) {
                    header.lib-head {
                        h2 { (lib.name) }
                        span.count { (l.tf("libraries.docs", &[("n", &l.num(lib.doc_count))])) }
                        code.muted { (lib.id) }
                    }
                    @if !lib.description.is_empty() { p { (lib.description) } }
                    ul.folders { @for f in &lib.folders { li { span.path { (f) } } } }
                    @if !lib.tags.is_empty() {
                        div.tags { @for t in &lib.tags { a.tag href={ "/notes?tag=" (crate::layout::enc(t)) } { "#" (t) } } }
                    }
                    details {
                        summary { (l.t("libraries.edit")) }
                        form.stack method="post" action="/libraries/edit" {
                            (csrf_field(&ctx))
                            input type="hidden" name="id" value=(lib.id);
                            label { span { (l.t("libraries.name")) } input type="text" name="name" value=(lib.name) required; }
                            label { span { (l.t("libraries.description")) } input type="text" name="description" value=(lib.description); }
                            label { span { (l.t("libraries.folders")) } textarea name="folders" rows="3" { (lib.folders.join("\n")) } }
                            label { span { (l.t("libraries.tags")) } input type="text" name="tags" value=(lib.tags.join(", ")); }
                            button.primary type="submit" { (l.t("libraries.save")) }
                        }
                    }
                    form.inline method="post" action="/libraries/delete" data-confirm=(l.t("libraries.delete_confirm")) {
                        (csrf_field(&ctx))
                        input type="hidden" name="id" value=(lib.id);
                        button.link-danger type="submit" data-testid="library-delete" { (l.t("libraries.delete")) }
                    }
                }
            }
        }
        section.panel {
            h2 { (l.t("libraries.new")) }
            form #library-new-form.stack method="post" action="/libraries/create" {
                (csrf_field(&ctx))
                label { span { (l.t("libraries.name")) } input #library-name type="text" name="name" required; }
                label { span { (l.t("libraries.description")) } input #library-description type="text" name="description"; }
                label { span { (l.t("libraries.folders")) } textarea #library-folders name="folders" rows="3" placeholder="/home/me/Documents/Work" {} }
                label { span { (l.t("libraries.tags")) } input #library-tags type="text" name="tags" placeholder="work"; }
                button #library-create.primary type="submit" { (l.t("libraries.create")) }
            }
            (error_box("library-error", error.as_deref()))
        }
    };
    let mut res = page(&ctx, Nav::Libraries, l.t("libraries.title"), main);
    *res.status_mut() = status;
    res
}

/// `GET /libraries`.
pub(crate) async fn page_handler(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
) -> Response {
    render(app, ctx, None, StatusCode::OK).await
}

#[derive(Deserialize)]
pub(crate) struct LibraryForm {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    folders: String,
    #[serde(default)]
    tags: String,
}

/// Applies a change to the libraries (saved with the configuration), then back to the list;
/// a refused change shows the list again with its message.
async fn change_libraries(
    app: App,
    ctx: Ctx,
    change: impl FnOnce(&mut linkly_core::Config) -> linkly_core::Result<()> + Send + 'static,
) -> Response {
    let r = blocking(&app, move |linkly| {
        linkly.update_config(change).map_err(|e| e.message)
    })
    .await;
    match r {
        Ok(()) => see_other("/libraries"),
        Err(m) => render(app, ctx, Some(m), StatusCode::UNPROCESSABLE_ENTITY).await,
    }
}

/// `POST /libraries/create`.
pub(crate) async fn create(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<LibraryForm>,
) -> Response {
    change_libraries(app, ctx, move |c| {
        c.add_library(&f.name, &f.description, &lines(&f.folders), &tags(&f.tags))
            .map(|_| ())
    })
    .await
}

/// `POST /libraries/edit`: the folders box is the whole new list (added and removed folders are
/// worked out against the library as saved).
pub(crate) async fn edit(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<LibraryForm>,
) -> Response {
    change_libraries(app, ctx, move |c| {
        let wanted = lines(&f.folders);
        let current: Vec<PathBuf> = match c.library(&f.id) {
            linkly_core::LibraryRef::Local(lib) => lib.folders.clone(),
            _ => Vec::new(),
        };
        let edit = LibraryEdit {
            name: Some(f.name.clone()),
            description: Some(f.description.clone()),
            add_folders: wanted
                .iter()
                .filter(|w| !current.contains(w))
                .cloned()
                .collect(),
            remove_folders: current
                .iter()
                .filter(|c| !wanted.contains(c))
                .cloned()
                .collect(),
            tags: Some(tags(&f.tags)),
        };
        c.edit_library(&f.id, &edit).map(|_| ())
    })
    .await
}

/// `POST /libraries/delete`: the library goes, its folders stay watched.
pub(crate) async fn delete(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Form(f): Form<LibraryForm>,
) -> Response {
    change_libraries(app, ctx, move |c| c.remove_library(&f.id).map(|_| ())).await
}
