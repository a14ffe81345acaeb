//! What the `library` and `path` parameters resolve to: a library of the config, the
//! directories a tool covers, and the check that keeps `path` inside the watched folders.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use linkly_core::{ErrorCode, Library, LibraryRef};
use linkly_index::{CatalogFilter, PathPredicate};

use crate::{Linkly, PathGlob, Result, ToolError};

/// Resolves a `library` argument (name or `local://<id>`), or says why it cannot be served.
pub(crate) fn resolve<'a>(linkly: &'a Linkly, reference: &str) -> Result<&'a Library> {
    match linkly.config().library(reference) {
        LibraryRef::Local(lib) => Ok(lib),
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

/// The catalog filter of an optional library: every document, or the library's folders.
pub(crate) fn scope_filter(linkly: &Linkly, library: Option<&str>) -> Result<CatalogFilter> {
    Ok(CatalogFilter {
        dirs: library
            .map(|l| resolve(linkly, l).map(library_dirs))
            .transpose()?,
        ..Default::default()
    })
}

/// The path predicate of `search`: inside the library's folders (when given) and matching
/// `path_glob` (when given).
pub(crate) fn path_predicate(
    glob: Option<PathGlob>,
    library_dirs: Option<Vec<String>>,
) -> Option<PathPredicate> {
    if glob.is_none() && library_dirs.is_none() {
        return None;
    }
    let prefixes: Option<Vec<String>> = library_dirs.map(|dirs| {
        dirs.into_iter()
            .map(|d| if d.ends_with('/') { d } else { d + "/" })
            .collect()
    });
    Some(Arc::new(move |path: &str| {
        prefixes
            .as_ref()
            .is_none_or(|p| p.iter().any(|d| path.starts_with(d.as_str())))
            && glob.as_ref().is_none_or(|g| g.matches(path))
    }))
}

/// Checks a `path` argument: absolute, existing, a directory, and — once `..` and symlinks are
/// resolved — inside one of `roots`. Returns the resolved directory.
pub(crate) fn allowed_dir(raw: &str, roots: &[PathBuf], roots_name: &str) -> Result<String> {
    let given = Path::new(raw);
    if !given.is_absolute() {
        return Err(ToolError::invalid(format!(
            "path must be an absolute directory, not a pattern or relative path (got {raw:?}); use find_paths to locate a folder"
        )));
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
    let resolved = fs_err::canonicalize(given).map_err(|_| {
        ToolError::new(
            ErrorCode::PathNotAllowed,
            format!(
                "path {raw:?} does not exist or cannot be read; give an existing directory inside the {roots_name} ({})",
                shown_roots()
            ),
        )
    })?;
    if !roots.iter().any(|r| resolved.starts_with(r)) {
        let via = if resolved != given {
            format!(" (it resolves to {})", resolved.display())
        } else {
            String::new()
        };
        return Err(ToolError::new(
            ErrorCode::PathNotAllowed,
            format!(
                "path {raw:?} is outside the {roots_name}{via}; allowed: {}",
                shown_roots()
            ),
        ));
    }
    if !resolved.is_dir() {
        return Err(ToolError::invalid(format!(
            "path must be a directory (got the file {raw:?}); use search or outline for one document"
        )));
    }
    Ok(path_key(&resolved))
}
