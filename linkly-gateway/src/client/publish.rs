//! The publish client: sends a local library's extracted documents to a gateway
//! (`linkly publish`), and takes a published library down (`linkly publish --unpublish`).
//!
//! Only what the local index extracted travels (text, outline, metadata), never the files. A
//! document is addressed by `<root>/<relative path>`, where `<root>` is the base name of the
//! library folder that holds it (suffixed `-<6 hex>` of the folder's SHA-256 when two folders
//! share a base name), so the publisher's absolute paths stay home. The client first sends the
//! manifest (path and hash of every document), which opens a staged publish; the gateway names
//! what it needs, only those documents follow, in batches of at most [`MAX_BATCH_BYTES`], and a
//! last request commits the publish: the gateway then drops what is gone and shows what came
//! in one transaction, so a publish cut off halfway changes nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use linkly_core::{DocId, LibraryRef};
use linkly_index::DocFilter;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::model::{
    LibraryMeta, ManifestEntry, PublishedDoc, PublishedVectors, VectorModel, valid_name,
};
use crate::{GatewayError, Result};

/// The most JSON one documents request carries (the server accepts twice as much).
pub const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Where and how to publish.
#[derive(Debug, Clone, Default)]
pub struct PublishOptions {
    /// The gateway's base URL (`https://cloud.example.org`).
    pub gateway: String,
    /// The publisher's bearer token.
    pub token: String,
    /// The slug to publish under (default: from the library's name).
    pub slug: Option<String>,
    /// Title, description, category and visibility (empty fields: the gateway's defaults for
    /// a new library, unchanged for an existing one; an empty title defaults to the library's
    /// name and an empty description to its description).
    pub meta: LibraryMeta,
}

/// What a publish did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PublishReport {
    /// The library's address: `cloud://<owner>/<slug>`.
    pub library: String,
    /// True when the gateway created the library now.
    pub created: bool,
    /// Documents sent (new or changed).
    pub sent: u64,
    /// Documents the gateway already had, unchanged.
    pub unchanged: u64,
    /// Documents the gateway removed (no longer in the library).
    pub removed: u64,
    /// Documents left out because their content could not be extracted (`skip_reason`).
    pub skipped: u64,
    /// The model of the chunk vectors sent with the documents (`None`: the local index has
    /// none, and the library is searched by keyword on the gateway).
    pub vector_model: Option<String>,
    /// Documents sent with their chunk vectors.
    pub sent_with_vectors: u64,
}

/// A slug made from a library name: lowercase ASCII letters and digits, other runs as `-`.
pub fn slug_from_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches(|c| c == '-' || c == '.').to_string();
    let mut out: String = out.chars().take(64).collect();
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "library".to_string()
    } else {
        out
    }
}

/// The root name of each folder: its base name, suffixed `-<6 hex of the SHA-256 of its full
/// path>` when another folder of the library has the same base name.
pub fn folder_roots(folders: &[PathBuf]) -> Vec<(PathBuf, String)> {
    let base = |f: &Path| {
        f.file_name()
            .map(|n| n.to_string_lossy().replace('/', "_"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "root".to_string())
    };
    let mut counts: HashMap<String, usize> = HashMap::new();
    for f in folders {
        *counts.entry(base(f)).or_default() += 1;
    }
    folders
        .iter()
        .map(|f| {
            let b = base(f);
            let root = if counts[&b] > 1 {
                let digest = Sha256::digest(f.to_string_lossy().as_bytes());
                let hex: String = digest.iter().take(3).map(|b| format!("{b:02x}")).collect();
                format!("{b}-{hex}")
            } else {
                b
            };
            (f.clone(), root)
        })
        .collect()
}

/// The published path of an absolute path: `<root>/<relative>` for the first folder holding
/// it, `None` when none does.
pub fn published_path(roots: &[(PathBuf, String)], path: &str) -> Option<String> {
    let p = Path::new(path);
    roots.iter().find_map(|(folder, root)| {
        let rel = p.strip_prefix(folder).ok()?;
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        (!parts.is_empty()).then(|| format!("{root}/{}", parts.join("/")))
    })
}

/// The JSON client of a gateway's publish API.
struct Api {
    agent: ureq::Agent,
    base: String,
    token: String,
}

#[derive(Deserialize)]
struct PutAnswer {
    library: String,
    #[serde(default)]
    created: bool,
}

#[derive(Deserialize)]
struct ManifestAnswer {
    /// The staged publish the manifest opened.
    publish: i64,
    needed: Vec<String>,
}

#[derive(Deserialize)]
struct CommitAnswer {
    removed: u64,
}

#[derive(Deserialize)]
struct DeleteAnswer {
    deleted: bool,
}

impl Api {
    fn new(gateway: &str, token: &str) -> Result<Api> {
        let base = gateway.trim().trim_end_matches('/');
        let base = base.strip_suffix("/mcp").unwrap_or(base).to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(GatewayError::invalid(format!(
                "the gateway {gateway:?} is not an http:// or https:// URL"
            )));
        }
        if token.trim().is_empty() {
            return Err(GatewayError::invalid(
                "no token: give the one `linkly gateway user add` printed (--token or LINKLY_GATEWAY_TOKEN)",
            ));
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(15))
            .timeout(Duration::from_secs(600))
            .build();
        Ok(Api {
            agent,
            base,
            token: token.trim().to_string(),
        })
    }

    fn url(&self, slug: &str, tail: &str) -> String {
        format!("{}/api/v1/libraries/{slug}{tail}", self.base)
    }

    /// Sends a request with a JSON body (raw bytes) and parses the JSON answer.
    fn send<T: for<'de> Deserialize<'de>>(
        &self,
        method: &str,
        url: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T> {
        let request = self
            .agent
            .request(method, url)
            .set("Authorization", &format!("Bearer {}", self.token))
            .set("Accept", "application/json");
        let response = match body {
            Some(b) => request
                .set("Content-Type", "application/json")
                .send_bytes(&b),
            None => request.call(),
        };
        match response {
            Ok(r) => {
                let text = r.into_string()?;
                serde_json::from_str(&text).map_err(|e| {
                    GatewayError::invalid(format!(
                        "the gateway at {} gave an answer that is not the publish API's ({e}): is it a Linkly gateway?",
                        self.base
                    ))
                })
            }
            Err(ureq::Error::Status(code, r)) => {
                let text = r.into_string().unwrap_or_default();
                let message = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
                    .unwrap_or_else(|| text.trim().chars().take(300).collect());
                Err(status_error(&self.base, code, &message))
            }
            Err(ureq::Error::Transport(t)) => Err(GatewayError::Io(std::io::Error::other(
                format!("cannot reach the gateway at {}: {t}", self.base),
            ))),
        }
    }
}

/// The error of an HTTP status the gateway answered.
fn status_error(base: &str, code: u16, message: &str) -> GatewayError {
    let said = if message.is_empty() {
        String::new()
    } else {
        format!(": {message}")
    };
    match code {
        401 | 403 => GatewayError::Unauthorized(format!(
            "the gateway at {base} refused the token (HTTP {code}){said}: check --token (the one `linkly gateway user add` printed)"
        )),
        // The gateway's own 404s say what is missing; an empty one is a route it lacks.
        404 if message.is_empty() => GatewayError::not_found(format!(
            "the gateway at {base} answered 404 without a message: it is probably older than this linkly (the all-or-nothing publish, POST /api/v1/libraries/<slug>/publish, came later): update the gateway"
        )),
        404 => GatewayError::not_found(format!("the gateway at {base} answered 404{said}")),
        413 => GatewayError::invalid(format!(
            "the gateway at {base} refused a request as too large (HTTP 413){said}"
        )),
        409 => GatewayError::Conflict(format!("the gateway at {base} answered 409{said}")),
        // A per-user limit: the request rate, or the bytes published per day (its message says
        // the quota, the day's use and when it resets).
        429 => GatewayError::Limit(format!(
            "the gateway at {base} refused the request (HTTP 429, a per-user limit){said}"
        )),
        _ => GatewayError::invalid(format!("the gateway at {base} answered HTTP {code}{said}")),
    }
}

/// Documents (each already JSON) gathered into `{"documents": [...]}` bodies of at most `max`
/// bytes (a single larger document goes alone).
struct Batch {
    max: usize,
    docs: Vec<Vec<u8>>,
    bytes: usize,
}

impl Batch {
    /// The JSON around the documents: `{"documents":[` and `]}`.
    const FRAME: usize = 16;

    fn new(max: usize) -> Batch {
        Batch {
            max,
            docs: Vec::new(),
            bytes: Batch::FRAME,
        }
    }

    /// Adds a document; returns the batch to send first when it would not fit.
    fn push(&mut self, doc: Vec<u8>) -> Option<(Vec<u8>, u64)> {
        let full = !self.docs.is_empty() && self.bytes + doc.len() + 1 > self.max;
        let out = if full { self.finish() } else { None };
        self.bytes += doc.len() + 1;
        self.docs.push(doc);
        out
    }

    /// The body of the documents gathered, and how many; `None` when there are none.
    fn finish(&mut self) -> Option<(Vec<u8>, u64)> {
        if self.docs.is_empty() {
            return None;
        }
        let mut body = Vec::with_capacity(self.bytes);
        body.extend_from_slice(b"{\"documents\":[");
        for (i, d) in self.docs.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(d);
        }
        body.extend_from_slice(b"]}");
        let n = self.docs.len() as u64;
        self.docs.clear();
        self.bytes = Batch::FRAME;
        Some((body, n))
    }
}

/// The slug to use: the one given (checked), else one made from the library's name.
fn resolve_slug(slug: Option<&str>, name: &str) -> Result<String> {
    match slug {
        Some(s) => {
            let s = s.trim();
            if valid_name(s) {
                Ok(s.to_string())
            } else {
                Err(GatewayError::invalid(format!(
                    "slug {s:?} is not valid: 1-64 lowercase letters, digits, '-', '_' or '.', not starting with '-' or '.'"
                )))
            }
        }
        None => Ok(slug_from_name(name)),
    }
}

/// Publishes the local library `library` (a name or `local://<id>`) to a gateway: creates or
/// updates the library there, then brings its documents up to date (sends new and changed ones,
/// the gateway drops those gone), all at once at the end: a publish cut off halfway leaves the
/// library as it was. Blocking; run it off async threads.
pub fn publish(
    local: &linkly_tools::Linkly,
    library: &str,
    opts: &PublishOptions,
) -> Result<PublishReport> {
    let lib = match local.config().library(library) {
        LibraryRef::Local(l) => l.clone(),
        LibraryRef::Cloud => {
            return Err(GatewayError::invalid(format!(
                "{library:?} is a cloud library: publish a local one (`linkly library list`)"
            )));
        }
        LibraryRef::Unknown => {
            return Err(GatewayError::not_found(format!(
                "no local library {library:?}: `linkly library list` shows them, `linkly library add` defines one"
            )));
        }
    };
    if lib.folders.is_empty() {
        return Err(GatewayError::invalid(format!(
            "library {:?} has no folders: nothing to publish",
            lib.name
        )));
    }
    let api = Api::new(&opts.gateway, &opts.token)?;
    let slug = resolve_slug(opts.slug.as_deref(), &lib.name)?;
    let mut meta = opts.meta.clone();
    if meta.title.trim().is_empty() {
        meta.title = lib.name.clone();
    }
    if meta.description.trim().is_empty() {
        meta.description = lib.description.clone();
    }

    // The manifest, from the local index.
    let roots = folder_roots(&lib.folders);
    let index = local.index();
    let filter = DocFilter {
        dirs: Some(
            lib.folders
                .iter()
                .map(|f| f.to_string_lossy().into_owned())
                .collect(),
        ),
        ..DocFilter::default()
    };
    // One query for the library's documents, then their hashes by id (a page-by-page walk
    // counted and skipped the rows before each page: quadratic, 4 s at 100,000 documents).
    let summaries = index.catalog_summaries(&filter)?;
    let readable: Vec<DocId> = summaries
        .iter()
        .filter(|d| !d.skipped)
        .map(|d| d.id)
        .collect();
    let hashes = index.doc_hashes(&readable)?;
    let mut manifest = Vec::new();
    let mut ids: HashMap<String, DocId> = HashMap::new();
    let mut skipped = 0u64;
    for d in summaries {
        if d.skipped {
            skipped += 1;
            continue;
        }
        let (Some(path), Some(hash)) = (published_path(&roots, &d.path), hashes.get(&d.id)) else {
            continue;
        };
        if ids.insert(path.clone(), d.id).is_none() {
            manifest.push(ManifestEntry {
                path,
                hash: hash.clone(),
                vector_model: None,
            });
        }
    }
    tracing::info!(library = %lib.name, documents = manifest.len(), "publishing");

    let put: PutAnswer = api.send(
        "PUT",
        &api.url(&slug, ""),
        Some(serde_json::to_vec(&meta).map_err(std::io::Error::other)?),
    )?;
    let total = manifest.len() as u64;
    let hashes: HashMap<String, String> = manifest
        .iter()
        .map(|m| (m.path.clone(), m.hash.clone()))
        .collect();
    // The chunk vectors the local index holds travel with the documents, under the model
    // (and width) the manifest's header names.
    let vectors = match index.vector_model()? {
        Some(model) => {
            let mut dim = None;
            for entry in &manifest {
                if let Some(v) = index.doc_vectors(ids[&entry.path])?
                    && let Some(c) = v.chunks.first()
                {
                    dim = Some(c.vector.len());
                    break;
                }
            }
            dim.map(|dim| VectorModel { model, dim })
        }
        None => None,
    };
    let answer: ManifestAnswer = api.send(
        "POST",
        &api.url(&slug, "/publish"),
        Some(
            serde_json::to_vec(&json!({ "documents": manifest, "vectors": vectors }))
                .map_err(std::io::Error::other)?,
        ),
    )?;

    // The documents it needs, in batches. This thread reads and encodes them from the local
    // index while a second one sends the batch before, so the local reads overlap the
    // gateway's staging; one batch waits between them at most.
    let docs_url = api.url(&slug, &format!("/publish/{}/documents", answer.publish));
    let (sent, with_vectors) = std::thread::scope(|scope| -> Result<(u64, u64)> {
        let (batches, received) = std::sync::mpsc::sync_channel::<(Vec<u8>, u64)>(1);
        let (api, docs_url) = (&api, &docs_url);
        let sender = scope.spawn(move || -> Result<u64> {
            let mut sent = 0;
            for (body, n) in received {
                let _: serde_json::Value = api.send("POST", docs_url, Some(body))?;
                sent += n;
            }
            Ok(sent)
        });
        let read = (|| -> Result<u64> {
            let mut with_vectors = 0;
            let mut batch = Batch::new(MAX_BATCH_BYTES);
            for path in &answer.needed {
                let Some(&id) = ids.get(path) else {
                    tracing::warn!(path = %path, "the gateway asked for a document this library lacks");
                    continue;
                };
                let hash = hashes.get(path).cloned().unwrap_or_default();
                let Some((bytes, has_vectors)) =
                    encode_doc(index, id, path, hash, vectors.as_ref())?
                else {
                    continue;
                };
                with_vectors += u64::from(has_vectors);
                if let Some(full) = batch.push(bytes)
                    && batches.send(full).is_err()
                {
                    // The sender stopped on an error, which it returns.
                    return Ok(with_vectors);
                }
            }
            if let Some(last) = batch.finish() {
                let _ = batches.send(last);
            }
            Ok(with_vectors)
        })();
        drop(batches);
        let sent = sender
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        // A failed send stops the reading: its error comes first.
        Ok((sent?, read?))
    })?;
    // Nothing sent is in sight until this: the removals and the documents, in one transaction.
    let commit: CommitAnswer = api.send(
        "POST",
        &api.url(&slug, &format!("/publish/{}/commit", answer.publish)),
        None,
    )?;

    Ok(PublishReport {
        library: put.library,
        created: put.created,
        sent,
        unchanged: total.saturating_sub(answer.needed.len() as u64),
        removed: commit.removed,
        skipped,
        vector_model: vectors.map(|v| v.model),
        sent_with_vectors: with_vectors,
    })
}

/// A document of the local index as the publish API sends it (JSON), and whether its chunk
/// vectors go with it (when the library's model is `vectors` and every chunk has its width);
/// `None` when the index no longer holds it.
fn encode_doc(
    index: &linkly_index::Index,
    id: DocId,
    path: &str,
    hash: String,
    vectors: Option<&VectorModel>,
) -> Result<Option<(Vec<u8>, bool)>> {
    let Some(record) = index.doc(id)? else {
        return Ok(None);
    };
    let text = index.content(id)?.unwrap_or_default();
    let doc_vectors = match vectors {
        Some(m) => index
            .doc_vectors(id)?
            .filter(|v| v.chunks.iter().all(|c| c.vector.len() == m.dim) && !v.chunks.is_empty()),
        None => None,
    };
    let published_vectors = match (vectors, doc_vectors) {
        (Some(m), Some(v)) => {
            let chunks: Vec<(u32, u32, &[f32])> = v
                .chunks
                .iter()
                .map(|c| (c.start_line, c.end_line, c.vector.as_slice()))
                .collect();
            Some(PublishedVectors::encode(&m.model, &chunks))
        }
        _ => None,
    };
    let has_vectors = published_vectors.is_some();
    let doc = PublishedDoc {
        path: path.to_string(),
        doc_type: record.doc_type.as_str().to_string(),
        hash,
        size: record.size,
        modified_at: record.modified_at,
        title: record.title,
        text,
        outline: serde_json::to_value(&record.outline).map_err(std::io::Error::other)?,
        vectors: published_vectors,
    };
    let bytes = serde_json::to_vec(&doc).map_err(std::io::Error::other)?;
    Ok(Some((bytes, has_vectors)))
}

/// Takes a published library down (its documents, links and invitations go with it). True
/// when it existed.
pub fn unpublish(gateway: &str, token: &str, slug: &str) -> Result<bool> {
    let api = Api::new(gateway, token)?;
    let slug = resolve_slug(Some(slug), slug)?;
    let answer: DeleteAnswer = api.send("DELETE", &api.url(&slug, ""), None)?;
    Ok(answer.deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_come_from_names() {
        assert_eq!(slug_from_name("My Research Notes"), "my-research-notes");
        assert_eq!(slug_from_name("  Été 2024 !"), "t-2024");
        assert_eq!(slug_from_name("***"), "library");
        assert!(valid_name(&slug_from_name("-a.b_c-")));
    }

    #[test]
    fn roots_are_base_names_suffixed_only_when_shared() {
        let folders = vec![
            PathBuf::from("/home/a/docs"),
            PathBuf::from("/home/b/docs"),
            PathBuf::from("/home/a/papers"),
        ];
        let roots = folder_roots(&folders);
        assert_eq!(roots[2].1, "papers");
        assert!(roots[0].1.starts_with("docs-") && roots[0].1.len() == "docs-".len() + 6);
        assert!(roots[1].1.starts_with("docs-"));
        assert_ne!(roots[0].1, roots[1].1);
        assert_eq!(
            published_path(&roots, "/home/a/papers/x/y.pdf").as_deref(),
            Some("papers/x/y.pdf")
        );
        assert_eq!(
            published_path(&roots, "/home/b/docs/z.md"),
            Some(format!("{}/z.md", roots[1].1))
        );
        assert_eq!(published_path(&roots, "/elsewhere/z.md"), None);
        assert_eq!(published_path(&roots, "/home/a/papersx/z.md"), None);
    }

    #[test]
    fn documents_go_in_batches_under_the_limit() {
        let doc = |n: usize| serde_json::to_vec(&json!({"text": "x".repeat(n)})).unwrap();
        let mut batch = Batch::new(100);
        let mut bodies = Vec::new();
        for n in [10, 20, 30, 40, 200, 5] {
            bodies.extend(batch.push(doc(n)));
        }
        bodies.extend(batch.finish());
        assert!(batch.finish().is_none());
        let counts: Vec<u64> = bodies.iter().map(|(_, n)| *n).collect();
        assert_eq!(counts, vec![2, 1, 1, 1, 1], "{counts:?}");
        let mut texts = 0;
        for (body, n) in &bodies {
            let v: serde_json::Value = serde_json::from_slice(body).unwrap();
            assert_eq!(v["documents"].as_array().unwrap().len() as u64, *n);
            texts += v["documents"].as_array().unwrap().len();
            // Only a document larger than the limit by itself goes over it.
            assert!(body.len() <= 100 || *n == 1, "{}", body.len());
        }
        assert_eq!(texts, 6);
    }

    #[test]
    fn a_refused_token_says_so() {
        let e = status_error("http://g", 401, "missing or invalid token");
        assert!(matches!(e, GatewayError::Unauthorized(_)));
        assert!(e.to_string().contains("--token"), "{e}");
        let e = status_error("http://g", 400, "unknown category");
        assert!(e.to_string().contains("unknown category"), "{e}");
    }

    #[test]
    fn a_refused_publish_over_the_quota_says_why() {
        let said = "daily publish quota reached: … resets at 00:00 UTC";
        let e = status_error("http://g", 429, said);
        assert!(matches!(e, GatewayError::Limit(_)), "{e:?}");
        assert!(e.to_string().contains("HTTP 429"), "{e}");
        assert!(e.to_string().contains(said), "{e}");
    }

    #[test]
    fn an_unreachable_gateway_is_a_clear_error() {
        // Port 9 on loopback: nothing listens there.
        let api = Api::new("http://127.0.0.1:9/", "lk_x").unwrap();
        let e = api
            .send::<serde_json::Value>("GET", &api.url("s", ""), None)
            .unwrap_err();
        assert!(e.to_string().contains("cannot reach the gateway"), "{e}");
        assert!(Api::new("ftp://x", "t").is_err());
        assert!(Api::new("http://x", " ").is_err());
    }
}
