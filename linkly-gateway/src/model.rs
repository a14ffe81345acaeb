//! The gateway's vocabulary: users and plans, cloud libraries and their visibility, published
//! documents, and what a link or an unlink did.

use serde::{Deserialize, Serialize};

use crate::{GatewayError, Result};

/// A user's plan: how many libraries they may link at once (see [`Limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    /// The free plan (1 slot by default).
    Free,
    /// The paid plan (99 slots by default).
    Pro,
}

impl Plan {
    /// `free` or `pro`.
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Free => "free",
            Plan::Pro => "pro",
        }
    }

    /// Parses `free` or `pro` (ASCII case-insensitive).
    pub fn parse(s: &str) -> Result<Plan> {
        match s.trim().to_ascii_lowercase().as_str() {
            "free" => Ok(Plan::Free),
            "pro" => Ok(Plan::Pro),
            _ => Err(GatewayError::invalid(format!(
                "unknown plan {s:?}: use free or pro"
            ))),
        }
    }
}

/// Slots per plan and where to upgrade, configurable per gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Slots of the free plan (default 1).
    pub free_slots: u32,
    /// Slots of the pro plan (default 99).
    pub pro_slots: u32,
    /// Shown with `slot_exhausted`.
    pub upgrade_url: String,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            free_slots: 1,
            pro_slots: 99,
            upgrade_url: "https://linkly.ai/pricing".to_string(),
        }
    }
}

impl Limits {
    /// The slots of a plan.
    pub fn slots(&self, plan: Plan) -> u32 {
        match plan {
            Plan::Free => self.free_slots,
            Plan::Pro => self.pro_slots,
        }
    }
}

/// A signed-in user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The database's number for the user.
    pub id: i64,
    /// The user name (`alice`): lowercase ASCII letters, digits, `-` and `_`.
    pub name: String,
    /// Their plan.
    pub plan: Plan,
    /// Unix milliseconds.
    pub created_at: i64,
}

/// Who may see and link a library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// Listed to everyone; anyone signed in may link it.
    Public,
    /// Listed to everyone; only the owner and invited readers may link it.
    Showcase,
    /// Listed and linkable only by the owner and invited readers; invisible to anyone else.
    Private,
}

impl Visibility {
    /// `public`, `showcase` or `private`.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Showcase => "showcase",
            Visibility::Private => "private",
        }
    }

    /// Parses a visibility (ASCII case-insensitive).
    pub fn parse(s: &str) -> Result<Visibility> {
        match s.trim().to_ascii_lowercase().as_str() {
            "public" => Ok(Visibility::Public),
            "showcase" => Ok(Visibility::Showcase),
            "private" => Ok(Visibility::Private),
            _ => Err(GatewayError::invalid(format!(
                "unknown visibility {s:?}: use public, showcase or private"
            ))),
        }
    }
}

/// The catalogue's categories, as the seed lists them.
pub const CATEGORIES: &[&str] = &[
    "ai-ml",
    "programming",
    "design",
    "science",
    "business",
    "lifestyle",
    "education",
    "other",
];

/// Checks a category against [`CATEGORIES`] (ASCII case-insensitive), returning its canonical
/// form.
pub fn parse_category(s: &str) -> Result<&'static str> {
    let t = s.trim().to_ascii_lowercase();
    CATEGORIES
        .iter()
        .find(|c| **c == t)
        .copied()
        .ok_or_else(|| {
            GatewayError::invalid(format!(
                "unknown category {s:?}: use one of {}",
                CATEGORIES.join(", ")
            ))
        })
}

/// A cloud library's address: `cloud://<owner>/<slug>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LibraryKey {
    /// The owner's user name.
    pub owner: String,
    /// The library's slug, unique per owner.
    pub slug: String,
}

impl LibraryKey {
    /// The prefix of every cloud address.
    pub const PREFIX: &'static str = "cloud://";

    /// Parses exactly `cloud://<owner>/<slug>` (no document part).
    pub fn parse(s: &str) -> Result<LibraryKey> {
        let t = s.trim();
        let rest = t.strip_prefix(Self::PREFIX).ok_or_else(|| {
            GatewayError::invalid(format!(
                "library {s:?} is not a cloud library: use the full cloud://<owner>/<slug> that library_search returns"
            ))
        })?;
        let mut parts = rest.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(owner), Some(slug), None) if valid_name(owner) && valid_name(slug) => {
                Ok(LibraryKey {
                    owner: owner.to_string(),
                    slug: slug.to_string(),
                })
            }
            _ => Err(GatewayError::invalid(format!(
                "library {s:?} is not a cloud library address: use the full cloud://<owner>/<slug> that library_search returns"
            ))),
        }
    }

    /// `cloud://<owner>/<slug>`.
    pub fn address(&self) -> String {
        format!("{}{}/{}", Self::PREFIX, self.owner, self.slug)
    }

    /// The prefix of its documents' ids: `cloud://<owner>/<slug>/`.
    pub fn doc_prefix(&self) -> String {
        format!("{}/", self.address())
    }
}

impl std::fmt::Display for LibraryKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.address())
    }
}

/// A user name or a slug: 1–64 of lowercase ASCII letters, digits, `-`, `_` and `.`, not
/// starting with `.` or `-`.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && !s.starts_with(['.', '-'])
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
}

/// What a publisher says of a library.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryMeta {
    /// The title (default: the slug).
    pub title: String,
    /// What it holds.
    pub description: String,
    /// One of [`CATEGORIES`].
    pub category: String,
    /// Who may see and link it.
    pub visibility: Option<Visibility>,
}

/// A library of the catalogue, as the database holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryInfo {
    /// The database's number for the library.
    pub id: i64,
    /// Its address.
    pub key: LibraryKey,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Category (one of [`CATEGORIES`]).
    pub category: String,
    /// Visibility.
    pub visibility: Visibility,
    /// Published documents.
    pub doc_count: u64,
    /// Stars (kept for the catalogue; no tool stars).
    pub stars: u64,
    /// Users who link it now.
    pub links: u64,
    /// Unix milliseconds: publication.
    pub created_at: i64,
    /// Unix milliseconds: the last publish that changed it.
    pub updated_at: i64,
    /// The change counter of its documents: grows with every publish that changed a document.
    pub content_seq: i64,
}

/// One published document: what `linkly publish` sends (extracted text, outline and metadata,
/// never the raw file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedDoc {
    /// The path inside the library: `<root>/<relative path>` with `/` separators, where
    /// `<root>` names one of the publisher's library folders (its base name).
    pub path: String,
    /// The `DocType` token (`pdf`, `md`, ...).
    pub doc_type: String,
    /// The SHA-256 of the source file's bytes (as the local index has it).
    pub hash: String,
    /// The source file's size in bytes.
    pub size: u64,
    /// The source file's mtime, Unix milliseconds.
    pub modified_at: i64,
    /// The document's title, when it declares one.
    pub title: Option<String>,
    /// The extracted text, lines separated by `\n`.
    pub text: String,
    /// The outline as `linkly_core::OutlineNode` JSON (an array; empty when none).
    pub outline: serde_json::Value,
    /// The chunk vectors the publisher's index made from this text, when it has them: the
    /// gateway searches by meaning with them instead of embedding the library again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<PublishedVectors>,
}

/// The most values a published vector may have.
pub const MAX_VECTOR_DIM: usize = 8192;

/// A published document's chunk vectors and the model that made them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedVectors {
    /// The model's name, as the publisher's index records it
    /// (`sentence-transformers/all-MiniLM-L6-v2`).
    pub model: String,
    /// The values per vector.
    pub dim: usize,
    /// The chunks, in line order.
    pub chunks: Vec<PublishedChunk>,
}

/// One chunk's vector: the lines it covers and its values, little-endian `f32`s in base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublishedChunk {
    /// First line (1-based).
    pub start_line: u32,
    /// Last line (inclusive).
    pub end_line: u32,
    /// `dim` little-endian `f32`s, base64 (standard alphabet, padded).
    pub vector: String,
}

/// The model of a publish: what the manifest's header says the documents' vectors are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorModel {
    /// As [`PublishedVectors::model`].
    pub model: String,
    /// As [`PublishedVectors::dim`].
    pub dim: usize,
}

impl PublishedVectors {
    /// Encodes chunks `(first line, last line, values)` made by `model`; the width is the
    /// first chunk's.
    pub fn encode(model: &str, chunks: &[(u32, u32, &[f32])]) -> PublishedVectors {
        use base64::Engine as _;
        PublishedVectors {
            model: model.to_string(),
            dim: chunks.first().map_or(0, |c| c.2.len()),
            chunks: chunks
                .iter()
                .map(|(start, end, v)| {
                    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                    PublishedChunk {
                        start_line: *start,
                        end_line: *end,
                        vector: base64::engine::general_purpose::STANDARD.encode(bytes),
                    }
                })
                .collect(),
        }
    }

    /// The chunks decoded and checked: a named model, a width of 1 to [`MAX_VECTOR_DIM`],
    /// every vector exactly `dim` finite values and every line range ordered; the error
    /// names the document (`path`), the chunk and what was expected.
    pub fn decode(&self, path: &str) -> Result<Vec<(u32, u32, Vec<f32>)>> {
        use base64::Engine as _;
        if self.model.trim().is_empty() {
            return Err(GatewayError::invalid(format!(
                "the vectors of {path:?} name no model: expected the model's name and dimension"
            )));
        }
        if self.dim == 0 || self.dim > MAX_VECTOR_DIM {
            return Err(GatewayError::invalid(format!(
                "the vectors of {path:?} have dimension {}: expected 1 to {MAX_VECTOR_DIM}",
                self.dim
            )));
        }
        let mut out = Vec::with_capacity(self.chunks.len());
        for (i, c) in self.chunks.iter().enumerate() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(c.vector.as_bytes())
                .map_err(|e| {
                    GatewayError::invalid(format!(
                        "chunk {} of {path:?}: the vector is not base64 ({e})",
                        i + 1
                    ))
                })?;
            if bytes.len() != self.dim * 4 {
                return Err(GatewayError::invalid(format!(
                    "chunk {} of {path:?} has a vector of {} values: expected {} ({}'s dimension)",
                    i + 1,
                    bytes.len() as f64 / 4.0,
                    self.dim,
                    self.model
                )));
            }
            let v: Vec<f32> = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            if v.iter().any(|x| !x.is_finite()) {
                return Err(GatewayError::invalid(format!(
                    "chunk {} of {path:?} has a value that is not a finite number",
                    i + 1
                )));
            }
            if c.start_line == 0 || c.end_line < c.start_line {
                return Err(GatewayError::invalid(format!(
                    "chunk {} of {path:?} covers lines {}-{}: expected 1-based, first <= last",
                    i + 1,
                    c.start_line,
                    c.end_line
                )));
            }
            out.push((c.start_line, c.end_line, v));
        }
        Ok(out)
    }
}

/// One line of a publish manifest: a document the publisher has, by path and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// As [`PublishedDoc::path`].
    pub path: String,
    /// As [`PublishedDoc::hash`].
    pub hash: String,
    /// The model of the vectors the gateway holds for it (in the gateway's manifest only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_model: Option<String>,
}

/// What `library_link` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LinkOutcome {
    /// Linked now; one more slot used.
    Linked {
        /// Slots in use after the link.
        used: u32,
        /// The plan's slots.
        limit: u32,
    },
    /// Already linked: nothing changed, no slot used.
    AlreadyLinked {
        /// Slots in use.
        used: u32,
        /// The plan's slots.
        limit: u32,
    },
    /// A showcase or private library the user is not invited to (and does not own).
    InviteRequired,
    /// Every slot is in use.
    SlotExhausted {
        /// Slots in use.
        used: u32,
        /// The plan's slots.
        limit: u32,
    },
    /// No library of that address is visible to the user.
    NotFound,
}

/// What `library_link action="unlink"` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum UnlinkOutcome {
    /// Unlinked now; its slot is free.
    Unlinked {
        /// Slots in use after the unlink.
        used: u32,
        /// The plan's slots.
        limit: u32,
    },
    /// It was not linked: nothing changed.
    AlreadyUnlinked {
        /// Slots in use.
        used: u32,
        /// The plan's slots.
        limit: u32,
    },
    /// No library of that address is visible to the user.
    NotFound,
}

/// A `library_search` query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogQuery {
    /// Case-insensitive substring of the title, description or owner name.
    pub query: Option<String>,
    /// One of [`CATEGORIES`].
    pub category: Option<String>,
    /// Exact owner name.
    pub owner: Option<String>,
    /// Page size, 1–50.
    pub limit: u32,
    /// Entries to skip.
    pub offset: u64,
}

/// One entry of a catalogue page, as the viewer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// The library.
    pub library: LibraryInfo,
    /// The viewer owns it.
    pub is_owner: bool,
    /// The viewer has linked it.
    pub is_linked: bool,
    /// The viewer may link it (owner, public, or invited).
    pub can_link: bool,
}

/// A page of the catalogue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogPage {
    /// Entries, newest update first.
    pub entries: Vec<CatalogEntry>,
    /// Every entry the query matches for this viewer.
    pub total: u64,
}
