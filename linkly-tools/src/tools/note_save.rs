//! `note_save`: create a note or edit one with compare-and-swap versions. The only tool that
//! writes; it writes only in the notes folder (see `notes::store` for the concurrency
//! contract).

use linkly_core::ErrorCode;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::notes::store::{self, SaveRequest};
use crate::notes::{tags, versions};
use crate::tools::kit::{Reach, Rendered, ToolSpec, parse_args, schema_of};
use crate::{Linkly, Result, ToolError};

pub(crate) const SPEC: ToolSpec = ToolSpec {
    name: "note_save",
    title: "Save a note",
    description: "Create or edit one of the user's Markdown notes (the only tool that writes; it \
        writes only in the notes folder and cannot delete). Send the body only: the server writes \
        the front matter. The body may contain only paragraphs, line breaks, **bold**, \
        ~~strikethrough~~, ordered and bullet lists and plain text; headings, italics, quotes, \
        code, links, images, tables, task lists, footnotes, rules and HTML are refused with \
        NOTE_INVALID_INPUT. #tag tokens in the body are the note's tags; `tags` only adds (the \
        server appends the missing tokens); to remove a tag delete its token. Edit loop: read the \
        note (its header gives note_id and version; its lines without their numbers are the full \
        body, front matter excluded) or list scope=\"notes\", then note_save mode=\"edit\" with \
        note_id, base_version=version and the full revised body (never rewrite a note from its \
        snippet). On NOTE_VERSION_CONFLICT the note changed meanwhile: re-read, merge, retry \
        with the actual version; never overwrite blindly. Later edits start from the content and \
        version this tool returns, not from what you sent.",
    read_only: false,
    input_schema: schema_of::<NoteSaveParams>,
    output_schema: Some(output_schema),
    reach: Reach::Notes,
    idempotent: false,
    run,
};

crate::choice::choice! {
    /// What `note_save` does (`mode`).
    #[derive(Default)]
    pub enum NoteMode {
        /// Write a new note.
        #[default]
        Create = "create",
        /// Replace a note's body, from its last read version.
        Edit = "edit",
    }
}

crate::tools::kit::tool_params! {
    /// Parameters of `note_save`.
    pub struct NoteSaveParams {
        /// `create` (a new note) or `edit` (replace an existing note's body).
        #[cfg_attr(feature = "clap", arg(long))]
        pub mode: NoteMode,
        /// The Markdown body without front matter; on edit, the full revised body. At most 10 MiB;
        /// blank is refused.
        #[cfg_attr(feature = "clap", arg(long, allow_hyphen_values = true))]
        pub content: String,
        /// The note's UUID: required for edit (from read or list scope="notes"); optional on create
        /// (an id that exists already is NOTE_DUPLICATE_ID).
        pub note_id: Option<String>,
        /// Required for edit: the `version` last read (read, list scope="notes" or the last
        /// note_save).
        pub base_version: Option<String>,
        /// Tags to add; the server appends the missing `#tag` tokens to the body. Cannot remove.
        pub tags: Option<Vec<String>>,
        /// Display name of the host app (e.g. `Cursor`), at most 64 characters, shown as the note's
        /// source. Never the model name.
        pub app_name: Option<String>,
    }
}

/// What `note_save` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NoteSaveResponse {
    /// The note's UUID.
    pub note_id: String,
    /// The new version: base later edits on it.
    pub version: String,
    /// The note file's absolute path.
    pub path: String,
    /// The effective body (with any appended `#tag` tokens): base later edits on it.
    pub content: String,
    /// The note's tags (its body's `#tag` tokens), normalised.
    pub tags: Vec<String>,
    /// `local://<n>` once the note is indexed at this version; null until then.
    pub doc_id: Option<String>,
}

/// Bodies longer than this are not echoed in the tool's answer: a client would receive the
/// note it just sent as one large message (the official Python SDK refuses SSE events over
/// 1 MiB, and a client that retries then creates the note twice).
pub(crate) const ECHO_LIMIT: usize = 128 * 1024;

/// The answer's schema: [`NoteSaveResponse`], whose `content` is null and `content_omitted`
/// set for a body over [`ECHO_LIMIT`].
fn output_schema() -> Value {
    let mut schema = schema_of::<NoteSaveResponse>();
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert(
            "content_omitted".into(),
            serde_json::json!({
                "type": "object",
                "description": format!(
                    "Present instead of `content` for a body over {} KiB: `bytes` (the body's size) and `reason`; base the next edit on `version`.",
                    ECHO_LIMIT / 1024
                ),
                "properties": {
                    "bytes": {"type": "integer", "description": "The body's size in bytes."},
                    "reason": {"type": "string", "description": "Why the body is not echoed."},
                },
            }),
        );
    }
    schema
}

fn run(linkly: &Linkly, args: Value) -> Result<Rendered> {
    // A mode outside create and edit is the notes store's refusal, as every bad note request.
    let params: NoteSaveParams = parse_args(args).map_err(|e| {
        if e.parameter() == Some("mode") {
            ToolError {
                code: ErrorCode::NoteInvalidInput,
                ..e
            }
        } else {
            e
        }
    })?;
    let response = linkly.note_save(params)?;
    let mut value = serde_json::to_value(&response).map_err(ToolError::internal)?;
    if response.content.len() > ECHO_LIMIT {
        // The version identifies the bytes written; `read` shows them when needed.
        value["content"] = Value::Null;
        value["content_omitted"] = serde_json::json!({
            "bytes": response.content.len(),
            "reason": format!(
                "bodies over {} KiB are not echoed; the note holds exactly what was sent{}; base the next edit on `version`",
                ECHO_LIMIT / 1024,
                if response.tags.is_empty() { "" } else { " plus any missing #tag tokens at its end" }
            ),
        });
    }
    Ok(Rendered::json(value))
}

/// How long a saved note waits for another process's index writer before it is left to that
/// process's watcher.
const NOTE_INDEX_PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::NoteInvalidInput, message)
}

impl Linkly {
    /// Runs `note_save`.
    pub fn note_save(&self, p: NoteSaveParams) -> Result<NoteSaveResponse> {
        self.save_note(p, false)
    }

    /// `note_save` for the person in their own window: the same CAS versions, tags and
    /// indexing, with any Markdown (headings, links, code, tables: the agents' whitelist is
    /// for agents only) and no `app_name` (the note's source badge says "you"). Never an MCP
    /// tool.
    pub fn note_save_by_person(&self, mut p: NoteSaveParams) -> Result<NoteSaveResponse> {
        p.app_name = None;
        self.save_note(p, true)
    }

    fn save_note(&self, p: NoteSaveParams, person: bool) -> Result<NoteSaveResponse> {
        crate::audience::person_only("note_save")?;
        let mode = p.mode;
        // Arguments that need no file first, so a bad call never waits for the lock.
        let note_id = p.note_id.as_deref().map(store::parse_note_id).transpose()?;
        if mode == NoteMode::Edit {
            let missing: Vec<&str> = [
                ("note_id", p.note_id.is_none()),
                ("base_version", p.base_version.is_none()),
            ]
            .into_iter()
            .filter_map(|(name, absent)| absent.then_some(name))
            .collect();
            if !missing.is_empty() {
                return Err(invalid(format!(
                    "mode=\"edit\" requires {}: take note_id and version from list scope=\"notes\", e.g. {{\"mode\":\"edit\",\"note_id\":\"3f2c8e1a-5b6d-4c7e-9f80-123456789abc\",\"base_version\":\"<version>\",\"content\":\"<full revised body>\"}}",
                    missing.join(", ")
                )));
            }
        } else if p.base_version.is_some() {
            return Err(invalid(
                "base_version is for mode=\"edit\" only; omit it when creating a note",
            ));
        }
        let base_version = p
            .base_version
            .as_deref()
            .map(|v| {
                versions::parse(v).ok_or_else(|| {
                    invalid(format!(
                        "base_version must be a note version (64 hexadecimal characters, as list scope=\"notes\" gives it); got {:?}",
                        linkly_core::stdx::truncate_chars(v, 80)
                    ))
                })
            })
            .transpose()?;
        let body = store::prepare_body(&p.content)?;
        let mut add_tags = Vec::new();
        for t in linkly_core::normalise_tags(p.tags.as_deref().unwrap_or_default()) {
            if !tags::is_writable(&t) {
                return Err(invalid(format!(
                    "tag {t:?} cannot be written as a #tag token: use letters, digits, `_`, `-` or `/`, with at least one non-digit"
                )));
            }
            add_tags.push(t);
        }
        let source = p
            .app_name
            .as_deref()
            .map(store::sanitise_app_name)
            .transpose()?
            .flatten();
        let request = SaveRequest {
            body,
            add_tags,
            source,
            person,
        };
        let store = self.note_store();
        let saved = match (note_id, base_version) {
            (Some(id), Some(base)) if mode == NoteMode::Edit => store.edit(&id, &base, request)?,
            (id, _) => store.create(id, request)?,
        };
        // The note is indexed before the answer, so that search, list and read see it in the
        // next call. Another process holding the index writer (a gateway process that has just
        // saved a note keeps it 1.5 s) is waited for a little; past that, the watcher of the
        // process that writes indexes it.
        let started = std::time::Instant::now();
        let refreshed = loop {
            match self.refresh_paths(std::slice::from_ref(&saved.path)) {
                Err(e)
                    if e.code == ErrorCode::IndexBusy
                        && started.elapsed() < NOTE_INDEX_PATIENCE =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                other => break other,
            }
        };
        let doc_id = match refreshed {
            Ok(_) => saved
                .path
                .to_str()
                .map(|p| self.corpus().doc_by_path(p))
                .transpose()?
                .flatten()
                .map(|rec| self.doc_address(rec.id)),
            Err(e) => {
                tracing::warn!(path = %saved.path.display(), error = %e.message, "the note was saved but not indexed now");
                None
            }
        };
        Ok(NoteSaveResponse {
            note_id: saved.note_id,
            version: saved.version,
            path: saved.path.to_string_lossy().into_owned(),
            content: saved.body,
            tags: saved.tags,
            doc_id,
        })
    }
}
