//! Document: the `read` text with line numbers, a page of lines at a time; the outline beside
//! it; landing on a hit's lines (`?line=120#L120-124`); find-in-document with `grep` (regex or
//! plain text, case), its match count and next/previous; the original file downloaded by id.

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use linkly_core::{DocId, OutlineNode};
use linkly_tools::{GrepParams, GrepResponse, ReadParams, ReadResponse};
use maud::{Markup, PreEscaped, html};

use crate::layout::{Nav, enc, escape, first, page, parse_query};
use crate::pages::{blocking, blocking_for, failure};
use crate::{App, Ctx, Lang};

/// Lines per page: the `read` tool's largest `limit`.
pub(crate) const PAGE: u32 = 500;
/// Outline entries shown at most.
const MAX_OUTLINE: usize = 400;
/// Matches fetched per `grep` call.
const GREP_WINDOW: usize = 100;

/// The find box's values.
#[derive(Debug, Default, Clone)]
struct Find {
    text: String,
    case: bool,
    regex: bool,
    /// The current match, 0-based.
    m: usize,
}

impl Find {
    fn pattern(&self) -> String {
        if self.regex {
            self.text.clone()
        } else {
            regex_escape(&self.text)
        }
    }

    fn href(&self, id: u64, m: usize) -> String {
        format!(
            "/doc/{id}?find={}{}{}&m={m}",
            enc(&self.text),
            if self.case { "&case=1" } else { "" },
            if self.regex { "&re=1" } else { "" }
        )
    }
}

/// Escapes the characters a Rust regex gives a meaning to.
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The first line of the page holding `line`.
fn page_start(line: u32) -> u32 {
    (line.max(1) - 1) / PAGE * PAGE + 1
}

struct Loaded {
    title: String,
    path: String,
    doc_type: String,
    size: u64,
    modified_at: i64,
    skip_reason: Option<String>,
    outline: Vec<OutlineNode>,
    read: ReadResponse,
    grep: Option<Result<GrepResponse, String>>,
    /// The line of the current match.
    current: Option<u32>,
}

enum Outcome {
    Found(Box<Loaded>),
    Missing,
    Failed(String),
}

/// `GET /doc/{id}`.
pub(crate) async fn page_handler(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Response {
    let l = ctx.lang;
    let Ok(n) = id.parse::<u64>() else {
        return failure(&ctx, StatusCode::NOT_FOUND, l.t("doc.missing"));
    };
    let p = parse_query(raw.as_deref());
    let num = |k: &str| first(&p, k).and_then(|v| v.parse::<u32>().ok());
    let find = first(&p, "find").filter(|f| !f.is_empty()).map(|f| Find {
        text: f.to_string(),
        case: first(&p, "case") == Some("1"),
        regex: first(&p, "re") == Some("1"),
        m: first(&p, "m").and_then(|v| v.parse().ok()).unwrap_or(0),
    });
    let from_param = num("from");
    let line_param = num("line");
    let find2 = find.clone();
    let outcome = blocking_for(&app, &ctx, move |linkly| {
        let rec = match linkly.fresh_doc(DocId(n)) {
            Ok(Some(r)) => r,
            Ok(None) => return Outcome::Missing,
            Err(e) => return Outcome::Failed(e.message),
        };
        let doc_id = linkly.doc_address(DocId(n));
        // Find first: the current match decides the page.
        let mut current = None;
        let grep = find2.as_ref().map(|f| {
            let window = f.m / GREP_WINDOW * GREP_WINDOW;
            linkly
                .grep(GrepParams {
                    pattern: f.pattern(),
                    doc_id: doc_id.clone(),
                    case_insensitive: Some(!f.case),
                    context: Some(0),
                    limit: Some(GREP_WINDOW as i64),
                    offset: Some(window as i64),
                    fuzzy_whitespace: Some(false),
                    ..GrepParams::default()
                })
                .map_err(|e| e.message)
        });
        if let (Some(f), Some(Ok(g))) = (&find2, &grep) {
            let window = f.m / GREP_WINDOW * GREP_WINDOW;
            current = g.matches.get(f.m - window).map(|m| m.line_number);
        }
        let from = match (current, line_param, from_param) {
            (Some(line), _, _) => page_start(line),
            (None, Some(line), _) => page_start(line),
            (None, None, Some(from)) => page_start(from),
            _ => 1,
        };
        let read = match linkly.read(ReadParams {
            doc_id,
            offset: Some(i64::from(from)),
            limit: Some(i64::from(PAGE)),
            image_text: Some(linkly_tools::ImageText::Abstract),
            ..ReadParams::default()
        }) {
            Ok(r) => r,
            Err(e) => return Outcome::Failed(e.message),
        };
        Outcome::Found(Box::new(Loaded {
            title: rec.display_title(),
            path: rec.path.clone(),
            doc_type: rec.doc_type.as_str().to_string(),
            size: rec.size,
            modified_at: rec.modified_at,
            skip_reason: rec.skip_reason.clone(),
            outline: rec.outline,
            read,
            grep,
            current,
        }))
    })
    .await;
    let d = match outcome {
        Outcome::Found(d) => d,
        Outcome::Missing => return failure(&ctx, StatusCode::NOT_FOUND, l.t("doc.missing")),
        Outcome::Failed(m) => return failure(&ctx, StatusCode::UNPROCESSABLE_ENTITY, &m),
    };
    render(&ctx, n, &d, find.as_ref())
}

fn render(ctx: &Ctx, n: u64, d: &Loaded, find: Option<&Find>) -> Response {
    let l = ctx.lang;
    let r = &d.read;
    let hits: std::collections::HashSet<u32> = match &d.grep {
        Some(Ok(g)) => g.matches.iter().map(|m| m.line_number).collect(),
        _ => Default::default(),
    };
    let find_error = match &d.grep {
        Some(Err(m)) => Some(m.as_str()),
        _ => None,
    };
    let total_matches = match &d.grep {
        Some(Ok(g)) => Some(g.total_matches),
        _ => None,
    };
    let literal: Vec<String> = find
        .filter(|f| !f.regex)
        .map(|f| vec![f.text.clone()])
        .unwrap_or_default();
    let page_href = |from: u32| format!("/doc/{n}?from={from}");
    let main = html! {
        div.doc-layout {
            aside #outline.outline aria-label=(l.t("doc.outline")) {
                h2 { (l.t("doc.outline")) }
                @if d.outline.is_empty() { p.muted { (l.t("doc.no_outline")) } }
                ul { (outline_items(&d.outline, n, r.shown_from, r.shown_to, &mut 0)) }
            }
            article.doc {
                header.doc-head {
                    h1 #doc-title { (d.title) }
                    div.doc-meta {
                        span.type-badge { (d.doc_type) }
                        span.path { (d.path) }
                        span { (l.bytes(d.size)) }
                        span { (l.date(d.modified_at)) }
                        span { (l.tf("doc.lines_total", &[("n", &l.num(r.total_lines.into()))])) }
                    }
                    div.doc-actions {
                        a #doc-download.button href={ "/doc/" (n) "/file" } download { (l.t("doc.download")) }
                        @if let Some(note) = &r.note {
                            @if let Some(id) = &note.note_id {
                                a #doc-edit-note.button href={ "/notes/edit/" (id) } { (l.t("doc.edit_note")) }
                            }
                        }
                    }
                    @if let Some(s) = &d.skip_reason { p.notice { (l.t("doc.name_only")) " " (s) } }
                }
                form #find-form.find method="get" action={ "/doc/" (n) } role="search" {
                    label.sr for="find" { (l.t("find.label")) }
                    input #find type="search" name="find" value=[find.map(|f| f.text.as_str())]
                        placeholder=(l.t("find.placeholder"));
                    label.check { input #find-case type="checkbox" name="case" value="1" checked[find.is_some_and(|f| f.case)]; " " (l.t("find.case")) }
                    label.check { input #find-regex type="checkbox" name="re" value="1" checked[find.is_some_and(|f| f.regex)]; " " (l.t("find.regex")) }
                    button #find-submit type="submit" { (l.t("find.submit")) }
                    @if let (Some(f), Some(total)) = (find, total_matches) {
                        span #find-count.muted data-total=(total) data-current=(f.m) {
                            @if total == 0 { (l.t("find.none")) }
                            @else { (l.tf("find.count", &[("i", &l.num((f.m + 1).min(total) as u64)), ("n", &l.num(total as u64))])) }
                        }
                        @if total > 0 {
                            a #find-prev.button href=(f.href(n, if f.m == 0 { total - 1 } else { f.m - 1 })) aria-label=(l.t("find.prev")) { "↑" }
                            a #find-next.button href=(f.href(n, (f.m + 1) % total)) aria-label=(l.t("find.next")) { "↓" }
                        }
                    }
                }
                @if let Some(m) = find_error { p #find-error.error role="alert" { (m) } }
                (pager(l, r, &page_href, "doc-prev-page", "doc-next-page"))
                @if r.content.is_empty() && r.total_lines == 0 {
                    p.muted { (l.t("doc.empty")) }
                }
                div #doc-lines.lines data-current=[d.current] {
                    @for (i, text) in r.content.split('\n').enumerate() {
                        @let line = r.shown_from + i as u32;
                        @if r.shown_from > 0 {
                            div class={ "line" @if hits.contains(&line) { " hit" } @if d.current == Some(line) { " cur" } } id={ "L" (line) } {
                                a.ln href={ "#L" (line) } { (line) }
                                span.lt { (mark_text(text, &literal, find.is_some_and(|f| f.case))) }
                            }
                        }
                    }
                }
                @if !r.images.is_empty() {
                    section.images {
                        h2 { (l.t("doc.images")) }
                        ul {
                            @for img in &r.images {
                                li {
                                    span.muted { "L" (img.line) " " }
                                    @match &img.doc_id {
                                        Some(id) => a href=(crate::pages::overview::doc_href(id)) { (img.file) },
                                        None => span { (img.file) },
                                    }
                                    @if let Some(x) = &img.excerpt { " — " (x) }
                                }
                            }
                        }
                    }
                }
                (pager(l, r, &page_href, "doc-prev-page-bottom", "doc-next-page-bottom"))
            }
        }
    };
    page(ctx, Nav::Search, &d.title, main)
}

fn pager(
    l: Lang,
    r: &ReadResponse,
    href: &dyn Fn(u32) -> String,
    prev_id: &str,
    next_id: &str,
) -> Markup {
    html! {
        @if r.total_lines > PAGE {
            nav.pager aria-label=(l.t("pager.label")) {
                @if r.shown_from > 1 { a id=(prev_id) href=(href(r.shown_from.saturating_sub(PAGE).max(1))) { "← " (l.t("pager.prev")) } }
                span.muted { (l.tf("doc.showing", &[("from", &l.num(r.shown_from.into())), ("to", &l.num(r.shown_to.into())), ("n", &l.num(r.total_lines.into()))])) }
                @if r.shown_to < r.total_lines { a id=(next_id) href=(href(r.shown_to + 1)) { (l.t("pager.next")) " →" } }
            }
        }
    }
}

/// A line's text, escaped, with the literal find text marked (ASCII case ignored unless `case`).
fn mark_text(text: &str, terms: &[String], case: bool) -> Markup {
    if terms.is_empty() || terms.iter().all(|t| t.is_empty()) {
        return PreEscaped(escape(text));
    }
    if !case {
        return crate::layout::highlight(text, terms);
    }
    let t = &terms[0];
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(t.as_str()) {
        out.push_str(&escape(&rest[..i]));
        out.push_str("<mark>");
        out.push_str(&escape(t));
        out.push_str("</mark>");
        rest = &rest[i + t.len()..];
    }
    out.push_str(&escape(rest));
    PreEscaped(out)
}

/// The outline as nested lists; each entry links to its lines (on this page when they are on
/// it, else on the page holding them).
fn outline_items(nodes: &[OutlineNode], n: u64, from: u32, to: u32, count: &mut usize) -> Markup {
    html! {
        @for node in nodes {
            @if bump(count) {
                @let anchor = format!("#L{}-{}", node.start_line, node.end_line);
                @let href = if node.start_line >= from && node.start_line <= to {
                    anchor
                } else {
                    format!("/doc/{n}?line={}{anchor}", node.start_line)
                };
                li {
                    a data-testid="outline-entry" href=(href) { (node.title) }
                    @if !node.children.is_empty() {
                        ul { (outline_items(&node.children, n, from, to, count)) }
                    }
                }
            }
        }
    }
}

/// Counts one more outline entry; false once [`MAX_OUTLINE`] are shown.
fn bump(count: &mut usize) -> bool {
    *count += 1;
    *count <= MAX_OUTLINE
}

/// `GET /doc/{id}/file`: the original file, found by the document's id (never by a path from
/// the URL), as an attachment, streamed from the disk (a multi-gigabyte video never sits in
/// memory).
pub(crate) async fn file(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
) -> Response {
    let l = ctx.lang;
    let Ok(n) = id.parse::<u64>() else {
        return failure(&ctx, StatusCode::NOT_FOUND, l.t("doc.missing"));
    };
    let found = blocking(&app, move |linkly| {
        let rec = linkly.fresh_doc(DocId(n)).ok().flatten()?;
        if !linkly.documents_are_files() {
            return None;
        }
        let file = std::fs::File::open(&rec.path).ok()?;
        let len = file.metadata().ok().filter(|m| m.is_file())?.len();
        let name = std::path::Path::new(&rec.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "document".into());
        Some((name, file, len))
    })
    .await;
    let Some((name, file, len)) = found else {
        return failure(&ctx, StatusCode::NOT_FOUND, l.t("doc.missing"));
    };
    let stream =
        tokio_util::io::ReaderStream::with_capacity(tokio::fs::File::from_std(file), 64 * 1024);
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_ ".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let disposition = format!(
        "attachment; filename=\"{ascii}\"; filename*=UTF-8''{}",
        enc(&name)
    );
    let mut res = axum::body::Body::from_stream(stream).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    if let Ok(v) = HeaderValue::from_str(&disposition) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_start_at_multiples() {
        assert_eq!(page_start(1), 1);
        assert_eq!(page_start(500), 1);
        assert_eq!(page_start(501), 501);
        assert_eq!(page_start(12_345), 12_001);
        assert_eq!(page_start(0), 1);
    }

    #[test]
    fn plain_text_is_escaped_for_grep() {
        assert_eq!(regex_escape("a.b (c)"), "a\\.b \\(c\\)");
    }
}
