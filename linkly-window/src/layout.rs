//! The page shell (sidebar, language switch, the offline banner), the embedded assets under
//! hashed URLs, and the small pieces every page uses (query strings, highlighted text).

use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use sha2::{Digest, Sha256};

use crate::Ctx;
use crate::i18n::Lang;

const CSS: &str = include_str!("../assets/app.css");
const JS: &str = include_str!("../assets/app.js");

/// The pages of the sidebar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Overview,
    Search,
    Notes,
    Libraries,
    Agents,
    Settings,
    None,
}

fn short_hash(s: &str) -> String {
    Sha256::digest(s.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `app.<hash>.css` and `app.<hash>.js`: a new build gets new names, so they are cached for a year.
fn asset_names() -> &'static (String, String) {
    static NAMES: OnceLock<(String, String)> = OnceLock::new();
    NAMES.get_or_init(|| {
        (
            format!("app.{}.css", short_hash(CSS)),
            format!("app.{}.js", short_hash(JS)),
        )
    })
}

/// `GET /assets/{name}`: the two embedded files, by their hashed names only.
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    let (css, js) = asset_names();
    let (body, kind) = if name == *css {
        (CSS, "text/css; charset=utf-8")
    } else if name == *js {
        (JS, "text/javascript; charset=utf-8")
    } else {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    };
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    res
}

/// A page: the shell around `main`.
pub(crate) fn page(ctx: &Ctx, nav: Nav, title: &str, main: Markup) -> Response {
    let l = ctx.lang;
    let (css, js) = asset_names();
    let item = |id: &str, href: &str, key: &'static str, icon: &str, this: Nav| {
        html! {
            a id=(id) href=(href) class={ "nav-item" @if nav == this { " active" } }
                aria-current=[(nav == this).then_some("page")] {
                span.icon aria-hidden="true" { (icon) } span { (l.t(key)) }
            }
        }
    };
    let markup = html! {
        (DOCTYPE)
        html lang=(l.html_lang()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                meta name="csrf-token" content=(ctx.csrf);
                title { (title) " · Linkly" }
                link rel="stylesheet" href={ "/assets/" (css) };
                script src={ "/assets/" (js) } defer {}
            }
            body data-lang=(l.code()) {
                div #offline.banner hidden role="alert" { (l.t("offline")) }
                div.shell {
                    nav.sidebar aria-label=(l.t("nav.label")) {
                        a.brand href=(if ctx.lan { "/search" } else { "/" }) { span.logo aria-hidden="true" { "◆" } " Linkly" }
                        @if let linkly_tools::Audience::Shared(names) = &ctx.audience {
                            // A LAN visitor sees the one page open to them, and what is shared.
                            (item("nav-search", "/search", "nav.search", "⌕", Nav::Search))
                            @if !names.is_empty() { div #nav-shared.shared {
                                span.muted { (l.t("nav.shared")) }
                                ul { @for name in names { li { (name) } } }
                            } }
                        } @else {
                            (item("nav-overview", "/", "nav.overview", "▦", Nav::Overview))
                            (item("nav-search", "/search", "nav.search", "⌕", Nav::Search))
                            (item("nav-notes", "/notes", "nav.notes", "✎", Nav::Notes))
                            (item("nav-libraries", "/libraries", "nav.libraries", "▤", Nav::Libraries))
                            (item("nav-agents", "/agents", "nav.agents", "⚇", Nav::Agents))
                            (item("nav-settings", "/settings", "nav.settings", "⚙", Nav::Settings))
                        }
                        div.spacer {}
                        form #lang-form.lang method="post" action="/lang" {
                            (csrf_field(ctx))
                            input type="hidden" name="back" value=(ctx.here);
                            label for="lang-select" { (l.t("lang.label")) }
                            select #lang-select name="lang" {
                                @for other in Lang::ALL {
                                    option value=(other.code()) selected[other == l] { (other.name()) }
                                }
                            }
                            button #lang-apply type="submit" { (l.t("lang.apply")) }
                        }
                    }
                    main.content { (main) }
                }
            }
        }
    };
    Html(markup.into_string()).into_response()
}

/// The hidden CSRF field of every form.
pub(crate) fn csrf_field(ctx: &Ctx) -> Markup {
    html! { input type="hidden" name=(crate::security::CSRF_FIELD) value=(ctx.csrf); }
}

/// Percent-encodes a query-string value.
pub(crate) fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `text` with every occurrence of `terms` (ASCII case ignored) in `<mark>`, escaped.
pub(crate) fn highlight(text: &str, terms: &[String]) -> Markup {
    let terms: Vec<&str> = terms
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = String::with_capacity(text.len() + 32);
    let mut plain_from = 0;
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < bytes.len() {
        if !text.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let found = terms
            .iter()
            .filter(|t| {
                text.len() - i >= t.len()
                    && text.is_char_boundary(i + t.len())
                    && text[i..i + t.len()].eq_ignore_ascii_case(t)
            })
            .map(|t| t.len())
            .max();
        match found {
            Some(n) => {
                out.push_str(&escape(&text[plain_from..i]));
                out.push_str("<mark>");
                out.push_str(&escape(&text[i..i + n]));
                out.push_str("</mark>");
                i += n;
                plain_from = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&escape(&text[plain_from..]));
    PreEscaped(out)
}

/// HTML-escapes text (what maud does for every `(value)`).
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A tool's refusal, shown next to the field it concerns.
pub(crate) fn error_box(id: &str, message: Option<&str>) -> Markup {
    html! {
        @if let Some(m) = message {
            p.error id=(id) role="alert" { (m) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlight_escapes_and_marks() {
        let m = highlight("<b>Budget</b> & budget", &["budget".into()]);
        assert_eq!(
            m.into_string(),
            "&lt;b&gt;<mark>Budget</mark>&lt;/b&gt; &amp; <mark>budget</mark>"
        );
        let m = highlight("日本語のテキスト", &["テキスト".into()]);
        assert_eq!(m.into_string(), "日本語の<mark>テキスト</mark>");
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(enc("a b/&é"), "a%20b%2F%26%C3%A9");
    }

    #[test]
    fn lang_is_not_a_nav_target() {
        assert_ne!(Nav::None, Nav::Overview);
    }
}

/// The pairs of a query string, decoded (`+` is a space), repeated keys kept in order.
pub(crate) fn parse_query(q: Option<&str>) -> Vec<(String, String)> {
    let Some(q) = q else { return Vec::new() };
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() && s.is_char_boundary(i + 1) && s.is_char_boundary(i + 3) => {
                match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first value of a key.
pub(crate) fn first<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod query_tests {
    use super::*;

    #[test]
    fn query_strings_decode() {
        let p = parse_query(Some("q=a+b%26c&t=pdf&t=md&x=%zz&e=%C3%A9"));
        assert_eq!(first(&p, "q"), Some("a b&c"));
        assert_eq!(p.iter().filter(|(k, _)| k == "t").count(), 2);
        assert_eq!(first(&p, "x"), Some("%zz"));
        assert_eq!(first(&p, "e"), Some("é"));
    }
}
