//! Libraries: named sets of folders (and optionally a tag filter over notes) that the user
//! defines in `config.toml`, addressed by name or by `local://<id>`.
//!
//! A library's folders always lie inside the watched folders: adding a folder that is not
//! watched yet watches it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Config, LibraryError, Result, normalise_tags};

/// One library as the config file stores it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Library {
    /// The stable number behind `local://<id>`: it never changes while the library exists
    /// (renaming keeps it).
    pub id: u64,
    /// The unique name (`research`).
    pub name: String,
    /// What the library holds, for agents choosing one. Default: empty.
    #[serde(default)]
    pub description: String,
    /// Absolute, canonical folders, each inside a watched folder. Default: none.
    #[serde(default)]
    pub folders: Vec<PathBuf>,
    /// Notes carrying all these tags belong to the library (normalised: no `#`, lower case).
    /// Default: none.
    #[serde(default)]
    pub tags: Vec<String>,
}

impl Library {
    /// The prefix of every local library id.
    pub const PREFIX: &'static str = "local://";

    /// `local://<id>`.
    pub fn address(&self) -> String {
        format!("{}{}", Self::PREFIX, self.id)
    }

    /// True when `path` lies in one of the library's folders (component-wise).
    pub fn contains(&self, path: &Path) -> bool {
        self.folders.iter().any(|f| path.starts_with(f))
    }
}

/// How a `library` argument resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryRef<'a> {
    /// A library of this config.
    Local(&'a Library),
    /// A `cloud://owner/slug` address: served by a remote gateway only.
    Cloud,
    /// Nothing of that name or id.
    Unknown,
}

impl Config {
    /// Resolves a library name or `local://<id>` (names compare exactly, then ignoring ASCII
    /// case).
    pub fn library(&self, reference: &str) -> LibraryRef<'_> {
        let r = reference.trim();
        if r.starts_with("cloud://") {
            return LibraryRef::Cloud;
        }
        let found = match r.strip_prefix(Library::PREFIX) {
            Some(id) => id
                .parse::<u64>()
                .ok()
                .and_then(|id| self.libraries.iter().find(|l| l.id == id)),
            None => self.libraries.iter().find(|l| l.name == r).or_else(|| {
                self.libraries
                    .iter()
                    .find(|l| l.name.eq_ignore_ascii_case(r))
            }),
        };
        found.map_or(LibraryRef::Unknown, LibraryRef::Local)
    }

    fn library_index(&self, reference: &str) -> Result<usize> {
        match self.library(reference) {
            LibraryRef::Local(lib) => Ok(self
                .libraries
                .iter()
                .position(|l| l.id == lib.id)
                .unwrap_or_default()),
            _ => Err(LibraryError::NotFound(reference.to_string()).into()),
        }
    }

    /// Makes a folder canonical and watches it unless a watched folder already holds it.
    fn library_folder(&mut self, folder: &Path) -> Result<PathBuf> {
        let canonical = fs_err::canonicalize(folder)?;
        if !canonical.is_dir() {
            return Err(LibraryError::NotADirectory(canonical).into());
        }
        if !self.folders.iter().any(|w| canonical.starts_with(w)) {
            self.add_folder(&canonical)?;
        }
        Ok(canonical)
    }

    /// Defines a library; its folders are watched if they were not. Returns its id.
    pub fn add_library(
        &mut self,
        name: &str,
        description: &str,
        folders: &[PathBuf],
        tags: &[String],
    ) -> Result<u64> {
        let name = name.trim();
        if name.is_empty() || name.starts_with(Library::PREFIX) || name.starts_with("cloud://") {
            return Err(LibraryError::InvalidName(name.to_string()).into());
        }
        if self
            .libraries
            .iter()
            .any(|l| l.name.eq_ignore_ascii_case(name))
        {
            return Err(LibraryError::NameTaken(name.to_string()).into());
        }
        let tags = normalise_tags(tags);
        if folders.is_empty() && tags.is_empty() {
            return Err(LibraryError::Empty.into());
        }
        let mut canonical = Vec::new();
        for f in folders {
            let c = self.library_folder(f)?;
            if !canonical.contains(&c) {
                canonical.push(c);
            }
        }
        let id = self.libraries.iter().map(|l| l.id).max().unwrap_or(0) + 1;
        self.libraries.push(Library {
            id,
            name: name.to_string(),
            description: description.trim().to_string(),
            folders: canonical,
            tags,
        });
        Ok(id)
    }

    /// Removes a library (its folders stay watched) and returns it.
    pub fn remove_library(&mut self, reference: &str) -> Result<Library> {
        let i = self.library_index(reference)?;
        let gone = self.libraries.remove(i);
        // A library made later under the same name is not shared by this one's choice.
        self.lan_shared_libraries.retain(|n| n != &gone.name);
        Ok(gone)
    }

    /// Changes a library: a new name or description, folders added or removed, tags replaced.
    pub fn edit_library(&mut self, reference: &str, edit: &LibraryEdit) -> Result<&Library> {
        let i = self.library_index(reference)?;
        if let Some(name) = &edit.name {
            let name = name.trim();
            if name.is_empty() || name.contains("://") {
                return Err(LibraryError::InvalidName(name.to_string()).into());
            }
            if self
                .libraries
                .iter()
                .enumerate()
                .any(|(j, l)| j != i && l.name.eq_ignore_ascii_case(name))
            {
                return Err(LibraryError::NameTaken(name.to_string()).into());
            }
            let old = std::mem::replace(&mut self.libraries[i].name, name.to_string());
            // Shared on the LAN under its new name as under its old one.
            for shared in &mut self.lan_shared_libraries {
                if *shared == old {
                    *shared = name.to_string();
                }
            }
        }
        if let Some(d) = &edit.description {
            self.libraries[i].description = d.trim().to_string();
        }
        for f in &edit.add_folders {
            let c = self.library_folder(f)?;
            if !self.libraries[i].folders.contains(&c) {
                self.libraries[i].folders.push(c);
            }
        }
        for f in &edit.remove_folders {
            let c = fs_err::canonicalize(f).unwrap_or_else(|_| f.clone());
            let lib = &mut self.libraries[i];
            let before = lib.folders.len();
            lib.folders.retain(|x| x != &c && x != f);
            if lib.folders.len() == before {
                return Err(LibraryError::NotAFolder {
                    folder: f.clone(),
                    library: lib.name.clone(),
                }
                .into());
            }
        }
        if let Some(tags) = &edit.tags {
            self.libraries[i].tags = normalise_tags(tags);
        }
        Ok(&self.libraries[i])
    }
}

/// The changes of [`Config::edit_library`]; `None` and empty lists change nothing.
#[derive(Debug, Clone, Default)]
pub struct LibraryEdit {
    /// A new name.
    pub name: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// Folders to add (watched if they were not).
    pub add_folders: Vec<PathBuf>,
    /// Folders to remove.
    pub remove_folders: Vec<PathBuf>,
    /// The new tag filter (replaces the old one).
    pub tags: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataDir;

    #[test]
    fn add_resolve_edit_remove_round_trip() {
        let tmp = tempfile::tempdir().unwrap();
        let watched = tmp.path().join("docs");
        let inside = watched.join("papers");
        let outside = tmp.path().join("elsewhere");
        for d in [&inside, &outside] {
            fs_err::create_dir_all(d).unwrap();
        }
        let mut cfg = Config::default();
        cfg.add_folder(&watched).unwrap();
        let id = cfg
            .add_library(
                "Research",
                "AI papers",
                std::slice::from_ref(&inside),
                &["#ML".into(), " ml ".into()],
            )
            .unwrap();
        assert_eq!(id, 1);
        assert_eq!(
            cfg.folders.len(),
            1,
            "a folder inside a watched one is not re-watched"
        );
        // A folder outside the watched ones becomes watched.
        cfg.add_library("misc", "", std::slice::from_ref(&outside), &[])
            .unwrap();
        assert_eq!(cfg.folders.len(), 2);
        assert!(cfg.add_library("research", "", &[], &["x".into()]).is_err());
        assert!(cfg.add_library("empty", "", &[], &[]).is_err());

        let LibraryRef::Local(lib) = cfg.library("local://1") else {
            panic!("local://1 resolves")
        };
        assert_eq!(lib.tags, ["ml"]);
        assert_eq!(cfg.library("research"), cfg.library("Research"));
        assert_eq!(cfg.library("cloud://me/x"), LibraryRef::Cloud);
        assert_eq!(cfg.library("local://9"), LibraryRef::Unknown);

        let edit = LibraryEdit {
            description: Some("Papers".into()),
            remove_folders: vec![inside.clone()],
            ..Default::default()
        };
        assert!(
            cfg.edit_library("research", &edit)
                .unwrap()
                .folders
                .is_empty()
        );

        let dir = DataDir::new(tmp.path().join("home"));
        cfg.save(&dir).unwrap();
        assert_eq!(Config::load(&dir).unwrap(), cfg);
        assert_eq!(cfg.remove_library("local://2").unwrap().name, "misc");
        assert_eq!(cfg.add_library("b", "", &[], &["t".into()]).unwrap(), 2);
        let LibraryRef::Local(lib) = cfg.library("local://1") else {
            panic!("local://1 still resolves")
        };
        assert_eq!(lib.description, "Papers");
    }
}
