//! What the `library` and `path` parameters resolve to: a library of the config, the
//! directories a tool covers, and the check that keeps `path` inside the watched folders.

use std::path::{Path, PathBuf};

use linkly_core::{ErrorCode, Library, LibraryRef};
use linkly_index::DocFilter;

use crate::{Linkly, Result, ToolError};

/// Resolves a `library` argument (name or `local://<id>`), or says why it cannot be served.
/// A visitor (see [`crate::audience`]) resolves only the libraries the person shares.
pub(crate) fn resolve(linkly: &Linkly, reference: &str) -> Result<Library> {
    let shared = crate::audience::current();
    match linkly.config().library(reference) {
        LibraryRef::Local(lib) => match &shared {
            Some(names) if !names.iter().any(|n| n == &lib.name) => Err(ToolError::new(
                ErrorCode::LibraryNotFound,
                format!(
                    "library {reference:?} not found among the libraries shared on the local network: {}",
                    crate::audience::shared_names(names)
                ),
            )),
            _ => Ok(lib.clone()),
        },
        LibraryRef::Unknown if shared.is_some() => Err(ToolError::new(
            ErrorCode::LibraryNotFound,
            format!(
                "library {reference:?} not found among the libraries shared on the local network: {}",
                crate::audience::shared_names(shared.as_deref().unwrap_or_default())
            ),
        )),
        LibraryRef::Cloud => Err(ToolError::invalid(format!(
            "library {reference:?} is a cloud library: cloud libraries are served by a remote gateway, not by this local server; use a local library (see list_libraries) or omit library"
        ))),
        LibraryRef::Unknown => {
            let known: Vec<String> = linkly
                .config()
                .libraries
                .iter()
                .map(|l| format!("{:?} ({})", l.name, l.address()))
                .collect();
            Err(ToolError::new(
                ErrorCode::LibraryNotFound,
                if known.is_empty() {
                    format!(
                        "library {reference:?} not found: no libraries are defined; omit library to cover all indexed content"
                    )
                } else {
                    format!(
                        "library {reference:?} not found; the libraries are {} (call list_libraries)",
                        known.join(", ")
                    )
                },
            ))
        }
    }
}

/// A path as the index stores it.
pub(crate) fn path_key(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The directories of a library, without those inside another of its folders.
pub(crate) fn library_dirs(lib: &Library) -> Vec<String> {
    top_level_dirs(&lib.folders)
}

/// Folders as index paths, without those inside another of them.
pub(crate) fn top_level_dirs(folders: &[PathBuf]) -> Vec<String> {
    folders
        .iter()
        .filter(|f| !folders.iter().any(|o| o != *f && f.starts_with(o)))
        .map(|f| path_key(f))
        .collect()
}

/// What a library covers: the documents of its folders, plus exactly the notes that carry all
/// the tags of its note-tag filter (`list_libraries`: "+ notes tagged #wildlife"). `search`,
/// `list`, `explore`, `find_paths` and the counts of `list_libraries` all apply it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LibraryScope {
    /// Its folders as index paths, without those inside another of them.
    pub(crate) dirs: Vec<String>,
    /// The paths of the notes its tag filter takes in (none without a filter).
    pub(crate) notes: Vec<String>,
}

impl LibraryScope {
    /// The scope of a library, its tagged notes read from the notes folder now.
    pub(crate) fn of(linkly: &Linkly, lib: &Library) -> Result<LibraryScope> {
        let notes = if lib.tags.is_empty() {
            Vec::new()
        } else {
            crate::notes::tagged_paths(linkly, &lib.tags)?
        };
        Ok(LibraryScope {
            dirs: library_dirs(lib),
            notes,
        })
    }

    /// Whether a document path lies in the scope.
    pub(crate) fn covers(&self, path: &str) -> bool {
        let sep = std::path::MAIN_SEPARATOR;
        self.dirs.iter().any(|d| {
            path.strip_prefix(d.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(sep) || d.ends_with(sep))
        }) || self.notes.iter().any(|n| n == path)
    }

    /// The document filter of the scope (other criteria left open).
    pub(crate) fn filter(&self) -> DocFilter {
        let mut filter = DocFilter::default();
        self.restrict(&mut filter);
        filter
    }

    /// Narrows a filter to the scope: its folders, or its tagged notes.
    pub(crate) fn restrict(&self, filter: &mut DocFilter) {
        filter.dirs = Some(self.dirs.clone());
        filter.paths = self.notes.clone();
    }
}

/// The scope of an optional `library` argument: `None` (everything) without one; a cloud or
/// unknown library is refused.
///
/// For a visitor (see [`crate::audience`]), no library means all the shared ones.
pub(crate) fn scope_of(linkly: &Linkly, library: Option<&str>) -> Result<Option<LibraryScope>> {
    if library.is_none()
        && let Some(shared) = crate::audience::current()
    {
        return Ok(Some(shared_scope(linkly, &shared)?));
    }
    library
        .map(|l| LibraryScope::of(linkly, &resolve(linkly, l)?))
        .transpose()
}

/// The union of the shared libraries' scopes (a visitor's "everything").
pub(crate) fn shared_scope(linkly: &Linkly, shared: &[String]) -> Result<LibraryScope> {
    let config = linkly.config();
    let mut union = LibraryScope::default();
    for lib in config.libraries.iter().filter(|l| shared.contains(&l.name)) {
        let scope = LibraryScope::of(linkly, lib)?;
        union.dirs.extend(scope.dirs);
        union.notes.extend(scope.notes);
    }
    Ok(union)
}

/// The library a tool that walks folders (`list`, `explore`) covers when the call names none:
/// none for the person (every watched folder); for a visitor, the one shared library, and a
/// refusal naming them when there are several (or none).
pub(crate) fn walked_library(library: Option<&str>) -> Result<Option<String>> {
    match (library, crate::audience::current()) {
        (Some(l), _) => Ok(Some(l.to_string())),
        (None, None) => Ok(None),
        (None, Some(shared)) if shared.len() == 1 => Ok(Some(shared[0].clone())),
        (None, Some(shared)) => Err(ToolError::invalid(format!(
            "library is required for a visitor signed in over the local network: one of {}",
            crate::audience::shared_names(&shared)
        ))),
    }
}

/// The document filter of an optional library: every document, or the library's folders and
/// tagged notes.
pub(crate) fn scope_filter(linkly: &Linkly, library: Option<&str>) -> Result<DocFilter> {
    Ok(scope_of(linkly, library)?
        .map(|s| s.filter())
        .unwrap_or_default())
}

/// Resolves `list`'s `path` inside a library: a directory in its folders, or — when the library
/// has a note-tag filter — in the notes folder. Returns the subtrees to list (the directory
/// when it lies in the library's folders), the tagged notes under it, and the directory.
pub(crate) fn dir_in_library(
    linkly: &Linkly,
    lib: &Library,
    raw: &str,
) -> Result<(Vec<String>, Vec<String>, String)> {
    let scope = LibraryScope::of(linkly, lib)?;
    let notes_dir = linkly.notes_dir();
    let notes_real = if linkly.documents_are_files() {
        fs_err::canonicalize(&notes_dir).ok()
    } else {
        None
    };
    let mut roots = lib.folders.clone();
    let mut name = format!("folders of library {:?}", lib.name);
    if !lib.tags.is_empty()
        && let Some(real) = &notes_real
    {
        roots.push(real.clone());
        name.push_str(" and the notes folder (its notes tagged ");
        name.push_str(
            &lib.tags
                .iter()
                .map(|t| format!("#{t}"))
                .collect::<Vec<_>>()
                .join(" "),
        );
        name.push(')');
    }
    let dir = allowed_dir(linkly, raw, &roots, &name)?;
    let dir_path = Path::new(&dir);
    let dirs = if lib.folders.iter().any(|f| dir_path.starts_with(f)) {
        vec![dir.clone()]
    } else {
        Vec::new()
    };
    // The tagged notes under the directory, with paths spelt as the index spells them.
    let notes = match notes_real
        .as_ref()
        .and_then(|r| dir_path.strip_prefix(r).ok())
    {
        Some(rel) => {
            let under = notes_dir.join(rel);
            scope
                .notes
                .into_iter()
                .filter(|p| Path::new(p).starts_with(&under))
                .collect()
        }
        None => Vec::new(),
    };
    Ok((dirs, notes, dir))
}

/// Checks a `path` argument: absolute, inside one of `roots` once `..` is resolved without the
/// disk (checked before anything is read), then existing, a directory, and still inside once
/// symlinks are resolved. Returns the resolved directory. When the documents are not files of
/// this machine (a gateway's library), a directory no document lies in is simply empty.
pub(crate) fn allowed_dir(
    linkly: &Linkly,
    raw: &str,
    roots: &[PathBuf],
    roots_name: &str,
) -> Result<String> {
    let given = Path::new(raw);
    if !given.is_absolute() {
        return Err(ToolError::invalid(format!(
            "path must be an absolute directory, not a pattern or relative path (got {raw:?}); use find_paths to locate a folder"
        )));
    }
    // `..` resolved without the disk, and the roots checked, before the file system is
    // touched: a refusal tells nothing of whether a path outside exists or where a link points.
    let mut lexical = PathBuf::from("/");
    for c in given.components() {
        match c {
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            std::path::Component::Normal(n) => lexical.push(n),
            _ => {}
        }
    }
    let shown_roots = || {
        if roots.is_empty() {
            "none".to_string()
        } else {
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let outside = || {
        ToolError::new(
            ErrorCode::PathNotAllowed,
            format!(
                "path {raw:?} is outside the {roots_name}; allowed: {}",
                shown_roots()
            ),
        )
    };
    if !roots.iter().any(|r| lexical.starts_with(r)) {
        return Err(outside());
    }
    if !linkly.documents_are_files() {
        return Ok(path_key(&lexical));
    }
    let resolved = fs_err::canonicalize(&lexical).map_err(|_| {
        ToolError::new(
            ErrorCode::PathNotAllowed,
            format!(
                "path {raw:?} does not exist or cannot be read; give an existing directory inside the {roots_name} ({})",
                shown_roots()
            ),
        )
    })?;
    // A link inside that leads out: the same refusal, without saying where it leads.
    if !roots.iter().any(|r| resolved.starts_with(r)) {
        return Err(outside());
    }
    if !resolved.is_dir() {
        return Err(ToolError::invalid(format!(
            "path must be a directory (got the file {raw:?}); use search or outline for one document"
        )));
    }
    Ok(path_key(&resolved))
}
