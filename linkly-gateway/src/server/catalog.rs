//! The gateway's own tools, `library_search` and `library_link`, as functions the MCP server
//! calls with the signed-in user. Their answers look like the nine document tools' (see
//! `linkly_tools`): Markdown ending with the `[meta] now=…` footer or one JSON object with
//! `_meta.now`; errors `[CODE] message` or `{"error":{"code","message","details"}}`.
//!
//! `library_link`'s refusals are statuses the tool answers, not errors: `invite_required`,
//! `slot_exhausted`, `already_linked` and `already_unlinked` are successful results carrying
//! their `status`; only `not_found` is an error (`LIBRARY_NOT_FOUND`), like an unknown library
//! in the other tools.

use linkly_core::{CodedError, ErrorCode};
use linkly_tools::{
    OutputFormat, Reach, Rendered, ToolError, ToolOutput, ToolParams, ToolSpec, parse_params,
    schema_of,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::model::{
    CATEGORIES, CatalogEntry, CatalogPage, CatalogQuery, LibraryKey, Limits, LinkOutcome,
    UnlinkOutcome, User, parse_category,
};
use crate::server::db::Db;

/// The name of the catalogue search tool.
pub const LIBRARY_SEARCH: &str = "library_search";
/// The name of the link tool.
pub const LIBRARY_LINK: &str = "library_link";

const SEARCH_TITLE: &str = "Search cloud libraries";
const LINK_TITLE: &str = "Link a cloud library";

const SEARCH_DESCRIPTION: &str = "Search the catalogue of cloud knowledge libraries, including \
    those you have not linked yet, by title, description or owner user name. It finds \
    libraries; to search documents use search. To see what is already searchable use \
    list_libraries. Each entry carries the exact cloud://<owner>/<slug> id to pass to the other \
    tools, is_linked (already searchable: no need to link again) and can_link (with \
    cannot_link_reason invite_required for a showcase library you were not invited to). Public \
    and showcase libraries are always listed; private ones only to their owner and invited \
    readers. Newest update first; page with offset while has_more is true. The answer starts \
    with \"You are signed in as @<user>\": pass that name as owner to list your own libraries, \
    private ones included. This tool links, stars and changes nothing.";

const LINK_DESCRIPTION: &str = "Link a cloud library to the user's account so it becomes \
    searchable: it shows in list_libraries at once and search, explore, list and the other tools \
    accept its cloud://<owner>/<slug>. Public libraries: anyone signed in may link. Showcase and \
    private ones: only the owner and invited readers (status invite_required, or not found for \
    a private library you cannot see). Linking twice is harmless (already_linked, no extra \
    slot). Each link uses a slot (Free 1, Pro 99); when they are all used the answer is \
    slot_exhausted with the count, the limit and an upgrade link: never choose a library to \
    unlink yourself; list the linked libraries, ask the user which one to free, call \
    library_link with action \"unlink\" on it, then link again. action \"unlink\" removes a \
    library from the account's linked set (for every client of the account) and frees its \
    slot; nothing else changes. Only unlink a library the user named.";

/// How the gateway runs one of its own tools: over the catalogue, for the signed-in caller.
pub type CatalogueRun = fn(&Caller<'_>, Value) -> Result<Rendered, ToolError>;

/// Who calls one of the catalogue's tools, and with what.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The catalogue.
    pub db: &'a Db,
    /// The signed-in user.
    pub user: &'a User,
    /// The slots each plan has.
    pub limits: &'a Limits,
}

/// The gateway's own two tools, declared as the document tools are (`linkly_tools::ToolSpec`):
/// `library_search` (read-only) and `library_link` (writes; destructive and idempotent).
pub static SPECS: [ToolSpec<CatalogueRun>; 2] = [
    ToolSpec {
        name: LIBRARY_SEARCH,
        title: SEARCH_TITLE,
        description: SEARCH_DESCRIPTION,
        read_only: true,
        idempotent: true,
        input_schema: schema_of::<LibrarySearchParams>,
        output_schema: Some(schema_of::<LibrarySearchAnswer>),
        reach: Reach::Libraries,
        run: run_search,
    },
    ToolSpec {
        name: LIBRARY_LINK,
        title: LINK_TITLE,
        description: LINK_DESCRIPTION,
        read_only: false,
        idempotent: true,
        input_schema: schema_of::<LibraryLinkParams>,
        output_schema: Some(schema_of::<LibraryLinkAnswer>),
        reach: Reach::Libraries,
        run: run_link,
    },
];

/// Runs one of [`SPECS`] for `caller`, answering as every tool does.
pub fn call(spec: &ToolSpec<CatalogueRun>, caller: &Caller<'_>, args: Value) -> ToolOutput {
    let on_error = linkly_tools::error_format(&args);
    let args = if args.is_null() {
        Value::Object(Map::new())
    } else {
        args
    };
    linkly_tools::finish((spec.run)(caller, args), on_error)
}

// ----- parameters -----

/// A catalogue category, as `library_search` takes it: one of [`CATEGORIES`], in any case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Category(&'static str);

impl<'de> Deserialize<'de> for Category {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Category, D::Error> {
        let raw = String::deserialize(d)?;
        parse_category(&raw)
            .map(Category)
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Category {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Category".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "enum": CATEGORIES})
    }
}

/// What `library_link` does (`link` or `unlink`, in any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkAction {
    /// Link the library (the default).
    #[default]
    Link,
    /// Unlink it and free its slot.
    Unlink,
}

impl<'de> Deserialize<'de> for LinkAction {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<LinkAction, D::Error> {
        let raw = String::deserialize(d)?;
        match raw.trim().to_ascii_lowercase().as_str() {
            "link" => Ok(LinkAction::Link),
            "unlink" => Ok(LinkAction::Unlink),
            _ => Err(serde::de::Error::unknown_variant(&raw, &["link", "unlink"])),
        }
    }
}

impl JsonSchema for LinkAction {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LinkAction".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "enum": ["link", "unlink"]})
    }
}

/// Parameters of `library_search`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LibrarySearchParams {
    /// Words matched against the title, description and owner user name (case-insensitive
    /// substring). Omit to browse the catalogue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Only libraries of this category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    /// Exact owner user name. Pass your own (from "You are signed in as @…") to list your
    /// libraries, private ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Entries per page (1-50).
    #[schemars(range(min = 1, max = 50), extend("default" = 10))]
    #[serde(
        default,
        deserialize_with = "linkly_tools::lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub limit: Option<i64>,
    /// Entries to skip; continue while has_more is true.
    #[schemars(range(min = 0), extend("default" = 0))]
    #[serde(
        default,
        deserialize_with = "linkly_tools::lenient_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub offset: Option<i64>,
    /// markdown (default) or json.
    #[schemars(extend("default" = "markdown"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<OutputFormat>,
}

impl ToolParams for LibrarySearchParams {
    const NAME: &'static str = LIBRARY_SEARCH;
}

/// Parameters of `library_link`.
// The field docs are the schema's descriptions, written for models (`cloud://<owner>/<slug>`).
#[allow(rustdoc::invalid_html_tags)]
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LibraryLinkParams {
    /// The full cloud://<owner>/<slug>, exactly as library_search returns it.
    #[schemars(required)]
    pub library: Option<String>,
    /// link (default; null also links) or unlink.
    #[schemars(extend("default" = "link"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<LinkAction>,
    /// markdown (default) or json.
    #[schemars(extend("default" = "markdown"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_format: Option<OutputFormat>,
}

impl ToolParams for LibraryLinkParams {
    const NAME: &'static str = LIBRARY_LINK;
}

// ----- answers -----

/// An answer in the format asked: the Markdown, or the JSON object.
fn rendered(
    format: Option<OutputFormat>,
    markdown: String,
    json: impl Serialize,
) -> Result<Rendered, ToolError> {
    Ok(match format.unwrap_or_default() {
        OutputFormat::Markdown => Rendered::markdown(markdown),
        OutputFormat::Json => {
            Rendered::json(serde_json::to_value(json).map_err(ToolError::internal)?)
        }
    })
}

/// `err` as a failed answer in `format`: `[CODE] message`, or the JSON error object, as every
/// tool answers its errors.
pub(crate) fn error_output(format: OutputFormat, err: &ToolError) -> ToolOutput {
    linkly_tools::finish(Err(err.clone()), format)
}

/// A store failure as a tool error, keeping its code.
fn db_error(err: crate::GatewayError) -> ToolError {
    let code = err.error_code();
    if code.is_internal() {
        ToolError::internal(err)
    } else {
        ToolError::new(code, err.to_string())
    }
}

// ----- library_search -----

/// Runs `library_search` for the signed-in viewer: a page of the catalogue as they see it.
pub fn library_search(db: &Db, viewer: &User, args: Value) -> ToolOutput {
    let limits = Limits::default();
    call(
        &SPECS[0],
        &Caller {
            db,
            user: viewer,
            limits: &limits,
        },
        args,
    )
}

fn run_search(caller: &Caller<'_>, args: Value) -> Result<Rendered, ToolError> {
    let p: LibrarySearchParams = parse_params(args)?;
    let query = p
        .query
        .map(|q| q.trim().to_string())
        .filter(|q| !q.is_empty());
    let owner = p
        .owner
        .map(|o| o.trim().trim_start_matches('@').to_string())
        .filter(|o| !o.is_empty());
    let limit = linkly_tools::check_range("limit", p.limit.unwrap_or(10), 1, 50)?;
    let offset = p.offset.unwrap_or(0);
    if offset < 0 {
        return Err(
            ToolError::invalid(format!("offset must be ≥ 0 (got {offset})"))
                .with_details(json!({"parameter": "offset", "minimum": 0, "received": offset})),
        );
    }
    let q = CatalogQuery {
        query,
        category: p.category.map(|c| c.0.to_string()),
        owner,
        limit: limit as u32,
        offset: offset as u64,
    };
    let page = caller
        .db
        .search_libraries(caller.user, &q)
        .map_err(db_error)?;
    rendered(
        p.output_format,
        search_markdown(caller.user, &q, &page),
        search_json(caller.user, &q, &page),
    )
}

/// One library of a `library_search` answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CatalogEntryAnswer {
    /// `cloud://<owner>/<slug>`: the id the other tools take.
    pub id: String,
    /// The library's title.
    pub title: String,
    /// What it holds.
    pub description: String,
    /// The owner's user name.
    pub owner: String,
    /// Its category.
    pub category: String,
    /// `public`, `showcase` or `private`.
    pub visibility: &'static str,
    /// Published documents.
    pub document_count: u64,
    /// Stars.
    pub star_count: u64,
    /// Accounts that linked it.
    pub link_count: u64,
    /// Whether the signed-in user owns it.
    pub is_owner: bool,
    /// Already linked to the account: searchable, no need to link again.
    pub is_linked: bool,
    /// Whether the signed-in user may link it.
    pub can_link: bool,
    /// `invite_required` when `can_link` is false; null otherwise.
    pub cannot_link_reason: Option<&'static str>,
    /// The last update (RFC 3339 UTC).
    pub updated_at: String,
}

impl CatalogEntryAnswer {
    fn of(e: &CatalogEntry) -> CatalogEntryAnswer {
        let l = &e.library;
        CatalogEntryAnswer {
            id: l.key.address(),
            title: l.title.clone(),
            description: l.description.clone(),
            owner: l.key.owner.clone(),
            category: l.category.clone(),
            visibility: l.visibility.as_str(),
            document_count: l.doc_count,
            star_count: l.stars,
            link_count: l.links,
            is_owner: e.is_owner,
            is_linked: e.is_linked,
            can_link: e.can_link,
            cannot_link_reason: (!e.can_link).then_some("invite_required"),
            updated_at: linkly_core::format_rfc3339(l.updated_at),
        }
    }
}

/// The JSON answer of `library_search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LibrarySearchAnswer {
    /// The signed-in user's name: pass it as `owner` to list your own libraries.
    pub signed_in_as: String,
    /// The page, newest update first.
    pub libraries: Vec<CatalogEntryAnswer>,
    /// Libraries matching in all.
    pub total: u64,
    /// Entries skipped.
    pub offset: u64,
    /// Entries per page.
    pub limit: u32,
    /// Whether more entries follow: continue with `offset`.
    pub has_more: bool,
    /// With an empty page: why, and what to try.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The JSON answer of `library_link` (an unknown library is a `LIBRARY_NOT_FOUND` error
/// instead, its `details` `{"status": "not_found", "library"}`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LibraryLinkAnswer {
    /// `linked`, `already_linked`, `invite_required`, `slot_exhausted`, `unlinked` or
    /// `already_unlinked`.
    pub status: &'static str,
    /// The library's `cloud://<owner>/<slug>`.
    pub library: String,
    /// Slots the account uses after the call.
    pub slots_used: u32,
    /// The account's slots.
    pub slot_limit: u32,
    /// What happened and what to do next, in words.
    pub message: String,
    /// With `slot_exhausted`: where to upgrade for more slots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade_url: Option<String>,
}

fn has_more(q: &CatalogQuery, page: &CatalogPage) -> bool {
    q.offset + (page.entries.len() as u64) < page.total
}

fn search_json(viewer: &User, q: &CatalogQuery, page: &CatalogPage) -> LibrarySearchAnswer {
    LibrarySearchAnswer {
        signed_in_as: viewer.name.clone(),
        libraries: page.entries.iter().map(CatalogEntryAnswer::of).collect(),
        total: page.total,
        offset: q.offset,
        limit: q.limit,
        has_more: has_more(q, page),
        hint: page.entries.is_empty().then(|| empty_hint(q, page)),
    }
}

/// The filters of a query, as words: `matching "rust", category science, owner @bob`.
fn filters(q: &CatalogQuery) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &q.query {
        parts.push(format!("matching {t:?}"));
    }
    if let Some(c) = &q.category {
        parts.push(format!("in category {c}"));
    }
    if let Some(o) = &q.owner {
        parts.push(format!("owned by @{o}"));
    }
    parts.join(", ")
}

/// Why a page is empty and what to try.
fn empty_hint(q: &CatalogQuery, page: &CatalogPage) -> String {
    if page.total > 0 {
        return format!(
            "offset {} is past the end: {} matching {} in all. Use an offset below {}, or offset 0 to start again.",
            q.offset,
            page.total,
            if page.total == 1 {
                "library"
            } else {
                "libraries"
            },
            page.total
        );
    }
    let f = filters(q);
    if f.is_empty() {
        "The catalogue has no library you can see yet: libraries appear here once someone publishes them (linkly publish).".to_string()
    } else {
        let mut tries = Vec::new();
        if q.query.is_some() {
            tries.push("other or fewer words");
        }
        if q.category.is_some() {
            tries.push("no category filter");
        }
        if q.owner.is_some() {
            tries.push("no owner filter (it is an exact user name)");
        }
        format!(
            "No library {f}. Try {}, or omit every parameter to browse the whole catalogue.",
            tries.join(", ")
        )
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn search_markdown(viewer: &User, q: &CatalogQuery, page: &CatalogPage) -> String {
    let mut md = format!("You are signed in as @{}.\n\n", viewer.name);
    if page.entries.is_empty() {
        md.push_str(&empty_hint(q, page));
        md.push('\n');
        return md;
    }
    let f = filters(q);
    let first = q.offset + 1;
    let last = q.offset + page.entries.len() as u64;
    md.push_str(&format!(
        "{}{} (showing {first}–{last}, newest update first):\n\n",
        plural(page.total, "library", "libraries"),
        if f.is_empty() {
            String::new()
        } else {
            format!(" {f}")
        },
    ));
    for (i, e) in page.entries.iter().enumerate() {
        let l = &e.library;
        md.push_str(&format!(
            "{}. **{}** — `{}`\n",
            q.offset + i as u64 + 1,
            one_line(&l.title),
            l.key.address()
        ));
        if !l.description.trim().is_empty() {
            md.push_str(&format!("   {}\n", one_line(&l.description)));
        }
        md.push_str(&format!(
            "   owner @{}{} · {} · {} · {} · {} · {} · updated {}\n",
            l.key.owner,
            if e.is_owner { " (you)" } else { "" },
            l.category,
            l.visibility.as_str(),
            plural(l.doc_count, "document", "documents"),
            plural(l.stars, "star", "stars"),
            plural(l.links, "link", "links"),
            linkly_core::format_rfc3339(l.updated_at),
        ));
        let status = if e.is_linked {
            format!("linked: search it now with library=\"{}\"", l.key.address())
        } else if e.can_link {
            format!(
                "not linked: library_link library=\"{}\" to make it searchable",
                l.key.address()
            )
        } else {
            "cannot link: invite_required (a showcase library: only its owner and invited readers may link it)".to_string()
        };
        md.push_str(&format!("   {status}\n"));
    }
    md.push('\n');
    if has_more(q, page) {
        md.push_str(&format!(
            "More results: call library_search again with offset={}.\n",
            last
        ));
    }
    md.push_str(
        "Next: link a library with library_link(library=\"cloud://…\"), then search it with search(library=\"cloud://…\"); a linked one is searchable already.\n",
    );
    md
}

/// Text on one line (newlines and runs of spaces folded).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// ----- library_link -----

/// Runs `library_link` for the signed-in user: links (the default) or unlinks a library.
/// `not_found` is a `LIBRARY_NOT_FOUND` error; the other statuses are successful answers.
pub fn library_link(db: &Db, user: &User, limits: &Limits, args: Value) -> ToolOutput {
    call(&SPECS[1], &Caller { db, user, limits }, args)
}

fn parse_library(raw: &str) -> Result<LibraryKey, ToolError> {
    let t = raw.trim();
    let details = json!({"parameter": "library", "received": raw});
    if t.starts_with("local://") || t.parse::<u64>().is_ok() {
        return Err(ToolError::invalid(format!(
            "library {raw:?} is a local library or document id: library_link takes a cloud library, the full cloud://<owner>/<slug> that library_search returns"
        ))
        .with_details(details));
    }
    if let Some(rest) = t.strip_prefix(LibraryKey::PREFIX)
        && rest.split('/').count() > 2
    {
        return Err(ToolError::invalid(format!(
            "library {raw:?} is a document id, not a library: pass only cloud://<owner>/<slug>"
        ))
        .with_details(details));
    }
    LibraryKey::parse(t).map_err(|e| ToolError::invalid(e.to_string()).with_details(details))
}

fn run_link(caller: &Caller<'_>, args: Value) -> Result<Rendered, ToolError> {
    let Caller { db, user, limits } = *caller;
    let p: LibraryLinkParams = parse_params(args)?;
    let Some(raw) = p.library else {
        return Err(ToolError::invalid(
            "library is required: the full cloud://<owner>/<slug> that library_search returns",
        )
        .with_details(json!({"parameter": "library"})));
    };
    let key = parse_library(&raw)?;
    let unlink = p.action == Some(LinkAction::Unlink);
    let address = key.address();
    let not_found = || {
        ToolError::new(
            ErrorCode::LibraryNotFound,
            format!(
                "no library {address} is visible to your account: check the address with library_search (pass it exactly as listed)"
            ),
        )
        .with_details(json!({"status": "not_found", "library": address}))
    };
    let answer = |status: &'static str, used: u32, limit: u32, message: String| LibraryLinkAnswer {
        status,
        library: address.clone(),
        slots_used: used,
        slot_limit: limit,
        message,
        upgrade_url: None,
    };
    let (value, markdown) = if unlink {
        match db.unlink(user, &key, limits).map_err(db_error)? {
            UnlinkOutcome::NotFound => return Err(not_found()),
            UnlinkOutcome::Unlinked { used, limit } => {
                let m = format!(
                    "Unlinked {address}: it is no longer searchable from any client of your account and its slot is free ({used} of {limit} slots used). Your access, invitation and star stay; link it again any time."
                );
                (answer("unlinked", used, limit, m.clone()), m)
            }
            UnlinkOutcome::AlreadyUnlinked { used, limit } => {
                let m = format!(
                    "{address} was not linked: nothing changed ({used} of {limit} slots used)."
                );
                (answer("already_unlinked", used, limit, m.clone()), m)
            }
        }
    } else {
        match db.link(user, &key, limits).map_err(db_error)? {
            LinkOutcome::NotFound => return Err(not_found()),
            LinkOutcome::Linked { used, limit } => {
                let m = format!(
                    "Linked {address} ({used} of {limit} slots used). It is searchable now: search with library=\"{address}\" (explore, list and the other tools take it too)."
                );
                (answer("linked", used, limit, m.clone()), m)
            }
            LinkOutcome::AlreadyLinked { used, limit } => {
                let m = format!(
                    "{address} is already linked: nothing changed and no extra slot was used ({used} of {limit} slots used). Search it with library=\"{address}\"."
                );
                (answer("already_linked", used, limit, m.clone()), m)
            }
            LinkOutcome::InviteRequired => {
                let used = db.slots_used(user).map_err(db_error)?;
                let limit = limits.slots(user.plan);
                let m = format!(
                    "{address} is a showcase or private library: only its owner (@{}) and invited readers may link it. Nothing was linked; ask the owner for an invitation, or pick another library with library_search.",
                    key.owner
                );
                (answer("invite_required", used, limit, m.clone()), m)
            }
            LinkOutcome::SlotExhausted { used, limit } => {
                let m = format!(
                    "Cannot link {address}: all your slots are in use ({used} of {limit}). Upgrade for more slots: {url}. Or free one: ask the user which library to unlink; never choose one yourself. List the linked libraries (list_libraries), unlink the one the user names with library_link action=\"unlink\", then link {address} again.",
                    url = limits.upgrade_url
                );
                let mut v = answer("slot_exhausted", used, limit, m.clone());
                v.upgrade_url = Some(limits.upgrade_url.clone());
                (v, m)
            }
        }
    };
    rendered(p.output_format, markdown, value)
}
