//! Search: the `search` tool's box and filters, results with title, path, type, date and the
//! snippet (matched words highlighted, its line range), paged; `/` focuses the box, arrows
//! move between results, Enter opens one (the script).

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use linkly_core::DocType;
use linkly_tools::{SearchParams, SearchResponse};
use maud::html;

use crate::layout::{Nav, enc, first, highlight, page, parse_query};
use crate::pages::blocking_for;
use crate::pages::overview::doc_href;
use crate::{App, Ctx, Lang};

/// Results per page; the tool returns 50 at most, so five pages.
const PER_PAGE: usize = 10;
/// The tool's largest `limit`.
const MAX_RESULTS: usize = 50;

/// The search form's values, as the query string gave them.
#[derive(Debug, Default, Clone)]
struct Query {
    q: String,
    types: Vec<String>,
    library: String,
    path: String,
    after: String,
    before: String,
    sort: String,
    notes: bool,
    page: usize,
}

impl Query {
    fn parse(raw: Option<&str>) -> Query {
        let p = parse_query(raw);
        let get = |k: &str| first(&p, k).unwrap_or("").trim().to_string();
        Query {
            q: first(&p, "q").unwrap_or("").to_string(),
            types: p
                .iter()
                .filter(|(k, v)| k == "type" && !v.is_empty())
                .map(|(_, v)| v.clone())
                .collect(),
            library: get("library"),
            path: get("path"),
            after: get("after"),
            before: get("before"),
            sort: get("sort"),
            notes: get("scope") == "notes",
            page: get("page")
                .parse()
                .unwrap_or(1)
                .clamp(1, MAX_RESULTS / PER_PAGE),
        }
    }

    /// This query's URL at another page.
    fn href(&self, page: usize) -> String {
        let mut s = format!("/search?q={}", enc(&self.q));
        for t in &self.types {
            s.push_str(&format!("&type={}", enc(t)));
        }
        for (k, v) in [
            ("library", &self.library),
            ("path", &self.path),
            ("after", &self.after),
            ("before", &self.before),
            ("sort", &self.sort),
        ] {
            if !v.is_empty() {
                s.push_str(&format!("&{k}={}", enc(v)));
            }
        }
        if self.notes {
            s.push_str("&scope=notes");
        }
        s.push_str(&format!("&page={page}"));
        s
    }

    /// The `search` call this query makes; the tools' refusal when a type is unknown (a typed
    /// address: the form only offers the known ones).
    fn params(&self) -> Result<SearchParams, String> {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let doc_types = (!self.types.is_empty())
            .then(|| linkly_tools::parse_doc_types("doc_types", &self.types))
            .transpose()
            .map_err(|e| e.message)?;
        Ok(SearchParams {
            query: self.q.clone(),
            limit: Some((self.page * PER_PAGE).min(MAX_RESULTS) as i64),
            doc_types,
            library: opt(&self.library),
            path_glob: opt(&self.path),
            scope: self.notes.then_some(linkly_tools::SearchScope::Notes),
            modified_after: opt(&self.after),
            modified_before: opt(&self.before),
            time_sort: linkly_tools::TimeSort::from_token(&self.sort)
                .filter(|s| *s != linkly_tools::TimeSort::Default),
            ..SearchParams::default()
        })
    }
}

/// `GET /search`.
pub(crate) async fn page_handler(
    State(app): State<App>,
    Extension(ctx): Extension<Ctx>,
    RawQuery(raw): RawQuery,
) -> Response {
    let l = ctx.lang;
    let q = Query::parse(raw.as_deref());
    // The page's first result: the search computes snippets from there only.
    let start = (q.page - 1) * PER_PAGE;
    let libraries: Vec<String> = blocking_for(&app, &ctx, |linkly| linkly.library_names()).await;
    let outcome: Option<Result<SearchResponse, String>> = if q.q.trim().is_empty() {
        None
    } else {
        Some(match q.params() {
            Ok(params) => blocking_for(&app, &ctx, move |linkly| linkly.search_page(params, start))
                .await
                .map_err(|e| e.message),
            Err(refused) => Err(refused),
        })
    };
    let error = outcome.as_ref().and_then(|o| o.as_ref().err());
    let filters_open = !q.types.is_empty()
        || !q.library.is_empty()
        || !q.path.is_empty()
        || !q.after.is_empty()
        || !q.before.is_empty()
        || !q.sort.is_empty()
        || q.notes;
    let main = html! {
        header.page-head { h1 { (l.t("search.title")) } }
        form #search-form.search-form method="get" action="/search" role="search" {
            div.search-row {
                label.sr for="q" { (l.t("search.label")) }
                input #q type="search" name="q" value=(q.q) autofocus[q.q.is_empty()]
                    placeholder=(l.t("search.placeholder")) autocomplete="off"
                    aria-invalid=[error.is_some().then_some("true")]
                    aria-describedby=[error.is_some().then_some("search-error")];
                button #search-submit.primary type="submit" { (l.t("search.submit")) }
            }
            @if let Some(m) = error { p #search-error.error role="alert" { (m) } }
            details.filters open[filters_open] {
                summary { (l.t("search.filters")) }
                fieldset.types {
                    legend { (l.t("search.types")) }
                    @for t in DocType::ALL {
                        label.check {
                            input type="checkbox" name="type" value=(t.as_str()) checked[q.types.iter().any(|x| x == t.as_str())];
                            " " (t.as_str())
                        }
                    }
                }
                div.filter-grid {
                    label { span { (l.t("search.library")) }
                        select name="library" {
                            option value="" { (l.t("search.any_library")) }
                            @for name in &libraries {
                                option value=(name) selected[*name == q.library] { (name) }
                            }
                        }
                    }
                    label { span { (l.t("search.path")) } input type="text" name="path" value=(q.path) placeholder="*/reports/*"; }
                    label { span { (l.t("search.after")) } input type="date" name="after" value=(q.after); }
                    label { span { (l.t("search.before")) } input type="date" name="before" value=(q.before); }
                    label { span { (l.t("search.sort")) }
                        select name="sort" {
                            option value="default" selected[q.sort.is_empty() || q.sort == "default"] { (l.t("search.sort_relevance")) }
                            option value="newest" selected[q.sort == "newest"] { (l.t("search.sort_newest")) }
                            option value="oldest" selected[q.sort == "oldest"] { (l.t("search.sort_oldest")) }
                        }
                    }
                    label.check { input type="checkbox" name="scope" value="notes" checked[q.notes]; " " (l.t("search.notes_only")) }
                }
            }
        }
        @if let Some(Ok(r)) = &outcome {
            @let shown: Vec<_> = r.results.iter().take(PER_PAGE).collect();
            p.muted data-testid="result-count" {
                (l.plural("search.count", r.total as u64))
                @if r.mode == "keyword" { " · " (l.t("mode.keyword")) }
            }
            @for (i, n) in r.notices.iter().enumerate() {
                @let key = r.notice_keys.get(i).copied().unwrap_or("");
                p.notice data-testid="search-notice" data-key=(key) {
                    (notice_text(l, key, n))
                    @if key == "keyword_only.missing" && !ctx.lan {
                        " "
                        form.inline method="post" action="/model/download" {
                            (crate::layout::csrf_field(&ctx))
                            button type="submit" data-testid="notice-download" { (l.t("overview.download_model")) }
                        }
                    }
                }
            }
            @if r.results.is_empty() {
                div.empty {
                    p { (l.t("search.none")) }
                    p.muted data-testid="search-guidance" {
                        @match r.unfiltered_total {
                            Some(n) if n > 0 => (l.plural("search.hint_filtered", n as u64)),
                            _ => (l.t("search.hint_none")),
                        }
                    }
                }
            }
            ol #results.results start=(start + 1) {
                @for (i, hit) in shown.iter().enumerate() {
                    @let href = match (hit.snippet_from, hit.snippet_to) {
                        (Some(a), Some(b)) => format!("{}?line={a}#L{a}-{b}", doc_href(&hit.doc_id)),
                        _ => doc_href(&hit.doc_id),
                    };
                    li.result data-testid="result" id={ "r" (i) } {
                        a.result-title data-testid="result-link" href=(href) { (hit.title) }
                        div.result-meta {
                            span.type-badge { (hit.doc_type) }
                            span.path { (hit.path) }
                            span { (l.date(hit.modified_at)) }
                            @if let (Some(a), Some(b)) = (hit.snippet_from, hit.snippet_to) {
                                span.linerange { (l.tf("search.lines", &[("from", &l.num(a.into())), ("to", &l.num(b.into()))])) }
                            }
                        }
                        @if !hit.snippet.is_empty() {
                            p.snippet { (highlight(&hit.snippet, &hit.matched_terms)) }
                        }
                        @if let Some(s) = &hit.skip_reason { p.muted { (l.t("search.name_only")) " " (s) } }
                    }
                }
            }
            @let fetched = start + r.results.len();
            @let more = r.results.len() == PER_PAGE && r.total > fetched && fetched < MAX_RESULTS;
            nav.pager aria-label=(l.t("pager.label")) {
                @if q.page > 1 { a #prev-page href=(q.href(q.page - 1)) { "← " (l.t("pager.prev")) } }
                @if q.page > 1 || more { span.muted { (l.tf("pager.page", &[("n", &q.page.to_string())])) } }
                @if more { a #next-page href=(q.href(q.page + 1)) { (l.t("pager.next")) " →" } }
            }
        }
    };
    let mut res = page(&ctx, Nav::Search, l.t("search.title"), main);
    if error.is_some() {
        *res.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
    }
    res
}

/// A tool's notice in the page's language, by its stable key; a notice without a translation
/// (one a gateway wrote) keeps the tool's words.
fn notice_text(l: Lang, key: &str, tool_text: &str) -> String {
    match key {
        "keyword_only.missing" => l.t("notice.keyword_only.missing").to_string(),
        "keyword_only.loading" => l.t("notice.keyword_only.loading").to_string(),
        "keyword_only.broken" => l.t("notice.keyword_only.broken").to_string(),
        "keyword_only.unembedded" => l.t("notice.keyword_only.unembedded").to_string(),
        "stale" => l.t("notice.stale").to_string(),
        _ => tool_text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use linkly_core::DocType;

    use super::Query;

    #[test]
    fn the_types_of_an_address_are_the_tools_types() {
        let q = Query::parse(Some("q=tide&type=PDF&type=md"));
        let params = q.params().unwrap();
        assert_eq!(params.doc_types, Some(vec![DocType::Pdf, DocType::Md]));
        let refused = Query::parse(Some("q=tide&type=exe&type=md&type=bin"))
            .params()
            .unwrap_err();
        assert!(
            refused.starts_with("doc_types has unknown type(s) \"exe\", \"bin\""),
            "{refused}"
        );
        assert_eq!(
            Query::parse(Some("q=tide")).params().unwrap().doc_types,
            None
        );
    }
}
