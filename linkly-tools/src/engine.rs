//! The engine handle and the name + JSON entry point shared by the front ends.

use std::sync::{Arc, RwLock};

use linkly_core::{Config, DataDir};
use linkly_index::{Corpus, Index};
use serde_json::Value;

use crate::Result;
use crate::tools::TOOLS;

/// The text a tool call produced, as a front end shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Markdown or JSON, footer included on success; `[CODE] message` (or the JSON error
    /// object) on failure.
    pub text: String,
    /// True when the call failed.
    pub is_error: bool,
    /// What a successful answer of a tool that finds things counted (`search` and `list`:
    /// `total`; `grep`: `total_matches`; `find_paths`: the folders), in every output format:
    /// `--exit-code` reads it instead of asking again for JSON. `None` for the other tools and
    /// for errors.
    pub matched: Option<u64>,
}

impl ToolOutput {
    /// A successful answer's text.
    pub fn success(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: false,
            matched: None,
        }
    }

    /// A failed call's text (`[CODE] message` or the JSON error object).
    pub fn failure(text: impl Into<String>) -> ToolOutput {
        ToolOutput {
            text: text.into(),
            is_error: true,
            matched: None,
        }
    }

    /// The same answer with what it counted.
    pub fn with_matched(mut self, matched: Option<u64>) -> ToolOutput {
        self.matched = matched;
        self
    }
}

/// A call named a tool that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool {name:?}; available tools: {available}")]
pub struct UnknownTool {
    /// The name that was asked for.
    pub name: String,
    /// The tool names, comma-separated.
    pub available: String,
}

/// Linkly's tools over one data directory's index.
///
/// Cheap to share: wrap it in an `Arc` and call it from any thread.
#[derive(Debug)]
pub struct Linkly {
    /// The local index, for tools over a data directory; `None` over documents extracted
    /// elsewhere ([`Linkly::over`]).
    index: Option<Arc<Index>>,
    /// What the tools read: the local index, or another store.
    corpus: Arc<dyn Corpus>,
    data_dir: DataDir,
    /// The configuration in effect: replaced whole by [`Linkly::update_config`].
    config: RwLock<Arc<Config>>,
    /// What the keep-fresh engine of this process knows (see `upkeep`).
    pub(crate) fresh: Arc<crate::upkeep::Freshness>,
    /// How documents are named, and whether they are files of this machine.
    docs: DocSource,
}

/// Where a [`Linkly`]'s documents come from.
#[derive(Debug, Clone)]
struct DocSource {
    /// The prefix of document ids: `local://`, or `cloud://<owner>/<slug>/` on a gateway.
    prefix: String,
    /// True when every document is a file of this machine, checked against it before it is
    /// served; false for documents extracted elsewhere (a gateway's published libraries).
    files: bool,
    /// Why search is keyword-only here, when the caller knows better than the model's status
    /// (a gateway: the library was published without vectors, or with another model's).
    keyword_notice: Option<String>,
    /// How far the ingestion of documents extracted elsewhere is behind (a gateway's library
    /// right after a publish): search answers say that they cover what is indexed so far.
    behind: Option<Arc<Behind>>,
}

/// How many changes an ingested index has still to apply, shared between whoever applies
/// them (a gateway's catch-up of a published library) and the [`Linkly`] that answers
/// meanwhile ([`Linkly::with_behind`]). Zero: caught up.
#[derive(Debug, Default)]
pub struct Behind(std::sync::atomic::AtomicU64);

impl Behind {
    /// Sets how many changes are still to apply.
    pub fn set(&self, changes: u64) {
        self.0.store(changes, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many changes are still to apply.
    pub fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Linkly {
    /// Opens the index and config of a data directory. The embedding model, when its files
    /// are there, is loaded by the first search (or status) that needs it, not here.
    pub fn open(data_dir: DataDir) -> Result<Linkly> {
        let config = Config::load(&data_dir)?;
        let index = Index::open(&data_dir.index_dir())?;
        // The embedding model, when its files are there (else search stays keyword-only),
        // loaded by the first search or status that needs it: a caller that only reads
        // documents (a CLI `read`) does not wait for it.
        index.attach_selected_model_when_needed(data_dir.root());
        Ok(Linkly::new(Arc::new(index), data_dir, config))
    }

    /// Tools over an index that is already open.
    pub fn new(index: Arc<Index>, data_dir: DataDir, config: Config) -> Linkly {
        Linkly {
            corpus: index.clone(),
            index: Some(index),
            data_dir,
            config: RwLock::new(Arc::new(config)),
            fresh: Arc::default(),
            docs: DocSource {
                prefix: linkly_core::DocId::PREFIX.to_string(),
                files: true,
                keyword_notice: None,
                behind: None,
            },
        }
    }

    /// Tools over documents kept by another store (a gateway's database), named
    /// `<prefix><n>` as [`Linkly::with_doc_prefix`] says; `config`'s folders are their roots
    /// (`/<root>`). There is no local index: the tools that keep one fresh, the overview and
    /// the notes do not apply (they answer an error, and [`Linkly::index`] panics).
    pub fn over(
        corpus: Arc<dyn Corpus>,
        prefix: impl Into<String>,
        data_dir: DataDir,
        config: Config,
    ) -> Linkly {
        Linkly {
            index: None,
            corpus,
            data_dir,
            config: RwLock::new(Arc::new(config)),
            fresh: Arc::default(),
            docs: DocSource {
                prefix: prefix.into(),
                files: false,
                keyword_notice: None,
                behind: None,
            },
        }
    }

    /// Tools over documents that are not files of this machine but were extracted elsewhere
    /// and ingested (`linkly_index::Index::ingest`), as a gateway serves a published library:
    /// document ids are `<prefix><n>` (`cloud://alice/rust/12`) and only that form is accepted;
    /// nothing is checked against or read from the file system (no freshness check, `list`'s
    /// `path` is a prefix of the stored paths, resolved without touching the disk).
    pub fn with_doc_prefix(mut self, prefix: impl Into<String>) -> Linkly {
        self.docs.prefix = prefix.into();
        self.docs.files = false;
        self
    }

    /// The notice a keyword-only search answer gives, instead of the one the embedding model's
    /// status suggests (a gateway says why a published library has no usable vectors).
    pub fn with_keyword_notice(mut self, notice: Option<String>) -> Linkly {
        self.docs.keyword_notice = notice;
        self
    }

    /// Search answers say that they cover only what is indexed so far while `behind` counts
    /// changes still to apply (documents ingested from elsewhere: a gateway's library that
    /// is still catching up with a publish).
    pub fn with_behind(mut self, behind: Arc<Behind>) -> Linkly {
        self.docs.behind = Some(behind);
        self
    }

    /// The notice a search answer gives while the index is behind (see [`Linkly::with_behind`]).
    pub(crate) fn behind_notice(&self) -> Option<String> {
        let n = self.docs.behind.as_ref()?.get();
        (n > 0).then(|| {
            format!(
                "This library is still being indexed after a publish ({} changes to apply): \
                 this answer covers what is indexed so far; search again in a moment for all of it.",
                linkly_core::stdx::thousands(n)
            )
        })
    }

    /// The notice set by [`Linkly::with_keyword_notice`].
    pub(crate) fn keyword_notice(&self) -> Option<&str> {
        self.docs.keyword_notice.as_deref()
    }

    /// A document's id as the tools show it: `local://12`, or under the prefix of
    /// [`Linkly::with_doc_prefix`].
    pub fn doc_address(&self, id: linkly_core::DocId) -> String {
        format!("{}{}", self.docs.prefix, id.0)
    }

    /// Parses a document id as the tools show it (for local documents also a bare number).
    pub fn parse_doc_address(&self, value: &str) -> Option<linkly_core::DocId> {
        if self.docs.files {
            return linkly_core::DocId::parse(value).ok();
        }
        let digits = value.trim().strip_prefix(self.docs.prefix.as_str())?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok().map(linkly_core::DocId)
    }

    /// An example id, for messages.
    pub(crate) fn doc_example(&self) -> String {
        format!("{}12", self.docs.prefix)
    }

    /// True when the documents are files of this machine (the default); false after
    /// [`Linkly::with_doc_prefix`].
    pub fn documents_are_files(&self) -> bool {
        self.docs.files
    }

    /// The local index.
    ///
    /// # Panics
    ///
    /// When the tools were made by [`Linkly::over`] another store, which has no local index;
    /// the tools themselves read through [`Linkly::corpus`] and never call this.
    pub fn index(&self) -> &Arc<Index> {
        self.index
            .as_ref()
            .expect("Linkly::index called on tools over another store (Linkly::over)")
    }

    /// The local index, or an error saying that these tools have none (a gateway's library).
    pub(crate) fn local_index(&self) -> Result<&Arc<Index>> {
        self.index.as_ref().ok_or_else(|| {
            crate::ToolError::invalid(
                "these documents are kept by another store (a gateway's library): there is no local index to keep fresh or summarise here",
            )
        })
    }

    /// What the tools read: the local index, or the store of [`Linkly::over`].
    pub fn corpus(&self) -> &dyn Corpus {
        self.corpus.as_ref()
    }

    /// The data directory.
    pub fn data_dir(&self) -> &DataDir {
        &self.data_dir
    }

    /// The configuration in effect (a snapshot: a later [`Linkly::update_config`] does not
    /// change it).
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Changes the configuration: reads `config.toml` again (so that another program's change
    /// is kept), applies `change`, saves it, and puts it in effect for the next calls. Nothing
    /// is saved when `change` fails. Changes of this process are made one at a time.
    ///
    /// Folders added here are indexed by the next sync ([`Linkly::index_now`]); a watcher
    /// already running follows the folders it was started with.
    pub fn update_config<T>(
        &self,
        change: impl FnOnce(&mut Config) -> Result<T, linkly_core::Error>,
    ) -> Result<T> {
        let mut slot = self.config.write().unwrap_or_else(|e| e.into_inner());
        let mut config = Config::load(&self.data_dir)?;
        let out = change(&mut config)?;
        self.data_dir.ensure()?;
        config.save(&self.data_dir)?;
        *slot = Arc::new(config);
        Ok(out)
    }

    /// Puts a configuration read elsewhere in effect (the keep-fresh engine's reload of
    /// `config.toml`), without saving it.
    pub(crate) fn put_config(&self, config: Config) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }

    /// Changes one setting (see [`linkly_core::SETTINGS`]) and saves `config.toml`, after
    /// checking the value (a folder that exists and can be read, an exclusion glob that parses,
    /// OCR languages that Tesseract has). With `version` (what [`Config::setting_version`] gave
    /// the caller when it showed the value), a setting that changed meanwhile is refused with
    /// [`linkly_core::SettingError::Changed`]. Nothing is saved when anything is refused (the
    /// inner `Err`); the outer one is a failure to read or write `config.toml`. A running
    /// keep-fresh engine applies the change within a second.
    pub fn change_setting(
        &self,
        key: &str,
        op: linkly_core::SettingOp,
        version: Option<&str>,
    ) -> Result<Result<(), linkly_core::SettingError>> {
        let mut refused = None;
        let saved = self.update_config(|c| {
            let checked = (|| {
                if let Some(v) = version
                    && c.setting_version(key)? != v
                {
                    return Err(linkly_core::SettingError::Changed {
                        key: key.to_string(),
                    });
                }
                check_setting(key, &op)?;
                c.change_setting(key, op)
            })();
            if let Err(e) = &checked {
                refused = Some(e.clone());
            }
            checked.map_err(linkly_core::Error::from)
        });
        match (saved, refused) {
            (_, Some(e)) => Ok(Err(e)),
            (Ok(()), None) => Ok(Ok(())),
            (Err(e), None) => Err(e),
        }
    }

    /// Calls a tool with its typed parameters, as [`Linkly::call`] would with them as JSON:
    /// for a front end that routes or adjusts a call on its typed parameters.
    pub fn call_params<P: crate::ToolParams>(&self, params: &P) -> ToolOutput {
        match serde_json::to_value(params) {
            Ok(args) => self
                .call(P::NAME, args)
                .unwrap_or_else(|unknown| ToolOutput::failure(unknown.to_string())),
            Err(e) => ToolOutput::failure(crate::ToolError::internal(e).to_string()),
        }
    }

    /// Calls a tool by name with JSON arguments (`null` = no arguments), as MCP and the CLI do.
    ///
    /// Argument and domain failures come back as a [`ToolOutput`] with `is_error`; only an
    /// unknown tool name is an `Err`.
    pub fn call(&self, name: &str, args: Value) -> Result<ToolOutput, UnknownTool> {
        let Some(spec) = TOOLS.iter().find(|t| t.name == name) else {
            return Err(UnknownTool {
                name: name.to_string(),
                available: TOOLS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "),
            });
        };
        let span = tracing::info_span!("tool", tool = name);
        let _guard = span.enter();
        let started = std::time::Instant::now();
        let error_format = crate::tools::kit::error_format(&args);
        let args = if args.is_null() {
            Value::Object(Default::default())
        } else {
            args
        };
        let output = crate::tools::kit::finish((spec.run)(self, args), error_format);
        tracing::debug!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            is_error = output.is_error,
            "tool call finished"
        );
        Ok(output)
    }
}

/// The checks of a setting's value that need more than the config: the glob syntax of an
/// exclusion, the OCR languages Tesseract has on this machine.
pub fn check_setting(
    key: &str,
    op: &linkly_core::SettingOp,
) -> Result<(), linkly_core::SettingError> {
    use linkly_core::{SettingError, SettingOp};
    let value = match op {
        SettingOp::Set(v) | SettingOp::Add(v) => v.as_str(),
        SettingOp::Remove(_) => return Ok(()),
    };
    let items = || {
        value
            .split([',', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    match key {
        "exclude" => {
            let one = match op {
                SettingOp::Add(v) => vec![v.trim()],
                _ => items().collect(),
            };
            for p in one {
                if let Err(why) = linkly_index::check_exclusion(p) {
                    return Err(SettingError::BadValue {
                        key: key.to_string(),
                        value: p.to_string(),
                        expected: format!(
                            "a glob such as node_modules, *.log or drafts/** ({why})"
                        ),
                    });
                }
            }
        }
        "ocr.languages" => {
            let status = linkly_extract::ocr::status();
            for code in items() {
                if !status.languages.iter().any(|l| l == code) {
                    let expected = if status.languages.is_empty() {
                        "a language Tesseract has, and Tesseract is not installed here: install it (with its language data) first".to_string()
                    } else {
                        format!(
                            "a language Tesseract has here ({}); install its data (tesseract-ocr-{code} on Debian) to use it",
                            status.languages.join(", ")
                        )
                    };
                    return Err(SettingError::BadValue {
                        key: key.to_string(),
                        value: code.to_string(),
                        expected,
                    });
                }
            }
        }
        _ => {}
    }
    Ok(())
}
