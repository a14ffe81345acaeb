//! Every setting of `config.toml` by a dotted key (`folders`, `ocr.languages`,
//! `transcription.audio`, ...): read as text, changed by one operation (set, add, remove) that
//! checks the value first, so that a bad value changes nothing. `linkly config get|set|add|remove`
//! and the window's Settings page both go through [`Config::setting`] and
//! [`Config::change_setting`]; checks that need the machine (installed OCR languages, glob
//! syntax) are added by `linkly-tools`.

use std::path::{Path, PathBuf};

use crate::{Config, ErrorCode};

/// The shape of a setting's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// `true` or `false` (also `on`/`off`, `yes`/`no`, `1`/`0`).
    Bool,
    /// An absolute folder path; removing it restores the default.
    Path,
    /// A list: `add` and `remove` one item, `set` the whole list (comma-separated).
    List,
    /// A text; removing it clears it.
    Text,
    /// A table managed by its own commands (read-only here).
    Table,
}

/// One setting: its key, its shape, and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The dotted key (`ocr.languages`).
    pub key: &'static str,
    /// The value's shape.
    pub kind: SettingKind,
    /// One line on what it does.
    pub doc: &'static str,
}

/// Every setting, in the order of `config.toml`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "folders",
        kind: SettingKind::List,
        doc: "watched folders (absolute paths of existing, readable folders)",
    },
    Setting {
        key: "exclude",
        kind: SettingKind::List,
        doc: "exclusion globs (`node_modules`, `*.log`, `drafts/**`)",
    },
    Setting {
        key: "notes_dir",
        kind: SettingKind::Path,
        doc: "the notes folder (default: <data dir>/notes)",
    },
    Setting {
        key: "lan_enabled",
        kind: SettingKind::Bool,
        doc: "LAN access: other computers sign in with lan_token and read lan_shared_libraries; a running server opens or closes it within a second (default: false; turning it on makes the token)",
    },
    Setting {
        key: "lan_token",
        kind: SettingKind::Text,
        doc: "the token LAN clients send (removing it turns LAN access off)",
    },
    Setting {
        key: "libraries",
        kind: SettingKind::Table,
        doc: "libraries (changed with `linkly library create|edit|delete`)",
    },
    Setting {
        key: "lan_shared_libraries",
        kind: SettingKind::List,
        doc: "the libraries (by name) a LAN visitor may search and read (default: none)",
    },
    Setting {
        key: "ocr.enabled",
        kind: SettingKind::Bool,
        doc: "OCR of images and scanned PDF pages",
    },
    Setting {
        key: "ocr.languages",
        kind: SettingKind::List,
        doc: "Tesseract language codes (`eng`, `fra`, `chi_sim`)",
    },
    Setting {
        key: "transcription.audio",
        kind: SettingKind::Bool,
        doc: "transcribe audio files with the speech model (default: false)",
    },
    Setting {
        key: "transcription.video",
        kind: SettingKind::Bool,
        doc: "transcribe the sound of video files with the speech model (default: false)",
    },
];

/// One change of a setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingOp {
    /// Replaces the value (a list: comma-separated items).
    Set(String),
    /// Adds one item to a list.
    Add(String),
    /// Removes one item from a list; for a path or a text, restores the default.
    Remove(Option<String>),
}

impl SettingOp {
    fn name(&self) -> &'static str {
        match self {
            SettingOp::Set(_) => "set",
            SettingOp::Add(_) => "add",
            SettingOp::Remove(_) => "remove",
        }
    }
}

/// Why a setting cannot be read or changed as asked. Each message names the key and says what
/// is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    /// No such key.
    #[error("unknown setting {key:?}; the settings are: {known}")]
    UnknownKey {
        /// The key asked for.
        key: String,
        /// Every key, comma-separated.
        known: String,
    },
    /// A value the setting does not take.
    #[error("{key}: {value:?} is not allowed: {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What the setting takes, and what to do.
        expected: String,
    },
    /// An operation the setting does not have.
    #[error("{key}: `{op}` is not possible: {hint}")]
    BadOp {
        /// The key.
        key: String,
        /// The operation (`set`, `add`, `remove`).
        op: String,
        /// What to do instead.
        hint: String,
    },
    /// The value changed since the caller read it (another window or program saved it).
    #[error(
        "{key} changed since this page was read (another window or program saved it); its value now is shown: make your change again"
    )]
    Changed {
        /// The key.
        key: String,
    },
}

impl crate::CodedError for SettingError {
    fn error_code(&self) -> ErrorCode {
        ErrorCode::InvalidArgument
    }
}

/// Parses a switch.
pub(crate) fn parse_bool(key: &str, value: &str) -> Result<bool, SettingError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(SettingError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            expected: "true or false (also on/off, yes/no, 1/0)".into(),
        }),
    }
}

/// The setting of a key.
pub(crate) fn setting(key: &str) -> Result<&'static Setting, SettingError> {
    SETTINGS
        .iter()
        .find(|s| s.key == key)
        .ok_or_else(|| SettingError::UnknownKey {
            key: key.to_string(),
            known: SETTINGS
                .iter()
                .map(|s| s.key)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// An OCR language code's syntax: `eng`, `chi_sim`, `script/Latin` is not a code.
fn check_language(key: &str, code: &str) -> Result<(), SettingError> {
    let ok = !code.is_empty()
        && code.len() <= 32
        && code
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(SettingError::BadValue {
            key: key.to_string(),
            value: code.to_string(),
            expected: "a Tesseract language code such as eng, fra, spa, chi_sim, jpn".into(),
        })
    }
}

/// A folder that exists, is a folder and can be listed: its canonical path.
fn readable_folder(key: &str, value: &str) -> Result<PathBuf, SettingError> {
    let bad = |expected: &str| SettingError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        expected: expected.to_string(),
    };
    let path = Path::new(value.trim());
    if value.trim().is_empty() {
        return Err(bad("a folder path"));
    }
    if !path.is_absolute() {
        return Err(bad(
            "an absolute folder path (starting with / or a drive letter)",
        ));
    }
    if !path.exists() {
        return Err(bad("an existing folder: this path does not exist"));
    }
    if !path.is_dir() {
        return Err(bad("a folder: this path is a file"));
    }
    if std::fs::read_dir(path).is_err() {
        return Err(bad("a folder Linkly may read: this one cannot be listed"));
    }
    fs_err::canonicalize(path).map_err(|e| bad(&format!("a readable folder ({e})")))
}

/// The items of a list value: comma- or newline-separated, trimmed, empty ones left out.
fn list_items(value: &str) -> Vec<String> {
    value
        .split([',', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A short, stable fingerprint of a text (FNV-1a, 64 bits, in hex).
fn fingerprint(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

impl Config {
    /// `item`, the name of one of the libraries.
    fn library_name(&self, key: &str, item: &str) -> Result<String, SettingError> {
        let item = item.trim();
        if self.libraries.iter().any(|l| l.name == item) {
            return Ok(item.to_string());
        }
        let names: Vec<&str> = self.libraries.iter().map(|l| l.name.as_str()).collect();
        Err(SettingError::BadValue {
            key: key.to_string(),
            value: item.to_string(),
            expected: if names.is_empty() {
                "the name of a library: there is none yet (create one first)".into()
            } else {
                format!("the name of a library ({})", names.join(", "))
            },
        })
    }

    /// The value of a setting as text: a switch `true`/`false`, a list one item per line, an
    /// unset path or text empty, the libraries by name.
    pub fn setting(&self, key: &str) -> Result<String, SettingError> {
        let s = setting(key)?;
        let lines = |v: &[String]| v.join("\n");
        Ok(match s.key {
            "folders" => lines(
                &self
                    .folders
                    .iter()
                    .map(|f| f.to_string_lossy().into_owned())
                    .collect::<Vec<_>>(),
            ),
            "exclude" => lines(&self.exclude),
            "notes_dir" => self
                .notes_dir
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            "lan_enabled" => self.lan_enabled.to_string(),
            "lan_token" => self.lan_token.clone().unwrap_or_default(),
            "libraries" => lines(
                &self
                    .libraries
                    .iter()
                    .map(|l| l.name.clone())
                    .collect::<Vec<_>>(),
            ),
            "lan_shared_libraries" => lines(&self.lan_shared_libraries),
            "ocr.enabled" => self.ocr.enabled.to_string(),
            "ocr.languages" => lines(&self.ocr.languages),
            "transcription.audio" => self.transcription.audio.to_string(),
            "transcription.video" => self.transcription.video.to_string(),
            _ => unreachable!("every key of SETTINGS is read above"),
        })
    }

    /// The version of a setting's value: a page keeps it beside the value it shows, and a
    /// change that carries an older one is refused ([`SettingError::Changed`]).
    pub fn setting_version(&self, key: &str) -> Result<String, SettingError> {
        Ok(fingerprint(&self.setting(key)?))
    }

    /// Changes one setting after checking the value; on an error nothing is changed.
    pub fn change_setting(&mut self, key: &str, op: SettingOp) -> Result<(), SettingError> {
        let s = setting(key)?;
        let bad_op = |hint: &str| SettingError::BadOp {
            key: key.to_string(),
            op: op.name().to_string(),
            hint: hint.to_string(),
        };
        let missing = |value: &str| SettingError::BadValue {
            key: key.to_string(),
            value: value.to_string(),
            expected: format!(
                "one of the current items ({})",
                self.setting(key).unwrap_or_default().replace('\n', ", ")
            ),
        };
        match (s.kind, &op) {
            (SettingKind::Table, _) => {
                return Err(bad_op(
                    "libraries are changed with `linkly library create|edit|delete` or on the Libraries page",
                ));
            }
            (SettingKind::Bool, SettingOp::Set(v)) => {
                let on = parse_bool(key, v)?;
                match key {
                    "lan_enabled" => {
                        self.lan_enabled = on;
                        if on && self.lan_token.as_deref().is_none_or(str::is_empty) {
                            self.lan_token = Some(uuid::Uuid::new_v4().simple().to_string());
                        }
                    }
                    "ocr.enabled" => self.ocr.enabled = on,
                    "transcription.audio" => self.transcription.audio = on,
                    "transcription.video" => self.transcription.video = on,
                    _ => unreachable!("every switch is set above"),
                }
            }
            (SettingKind::Bool, _) => {
                return Err(bad_op("a switch takes `set true` or `set false`"));
            }
            (SettingKind::Path, SettingOp::Set(v)) => {
                self.notes_dir = Some(readable_folder(key, v)?);
            }
            (SettingKind::Path, SettingOp::Remove(_)) => self.notes_dir = None,
            (SettingKind::Path, SettingOp::Add(_)) => {
                return Err(bad_op("a path takes `set <folder>` or `remove`"));
            }
            (SettingKind::Text, SettingOp::Set(v)) => {
                let v = v.trim();
                if v.len() < 16 || !v.chars().all(|c| c.is_ascii_alphanumeric()) {
                    return Err(SettingError::BadValue {
                        key: key.to_string(),
                        value: "<hidden>".into(),
                        expected: "at least 16 letters and digits".into(),
                    });
                }
                self.lan_token = Some(v.to_string());
            }
            (SettingKind::Text, SettingOp::Remove(_)) => {
                self.lan_token = None;
                self.lan_enabled = false;
            }
            (SettingKind::Text, SettingOp::Add(_)) => {
                return Err(bad_op("a text takes `set <value>` or `remove`"));
            }
            (SettingKind::List, op) => {
                let mut items = match key {
                    "folders" => self
                        .folders
                        .iter()
                        .map(|f| f.to_string_lossy().into_owned())
                        .collect(),
                    "exclude" => self.exclude.clone(),
                    "lan_shared_libraries" => self.lan_shared_libraries.clone(),
                    "ocr.languages" => self.ocr.languages.clone(),
                    _ => unreachable!("every list is read above"),
                };
                let check = |item: &str| -> Result<String, SettingError> {
                    match key {
                        "folders" => Ok(readable_folder(key, item)?.to_string_lossy().into_owned()),
                        "ocr.languages" => check_language(key, item).map(|()| item.to_string()),
                        "lan_shared_libraries" => self.library_name(key, item),
                        _ => {
                            if item.trim().is_empty() {
                                Err(SettingError::BadValue {
                                    key: key.to_string(),
                                    value: item.to_string(),
                                    expected: "a glob such as node_modules, *.log or drafts/**"
                                        .into(),
                                })
                            } else {
                                Ok(item.trim().to_string())
                            }
                        }
                    }
                };
                match op {
                    SettingOp::Set(v) => {
                        let mut new = Vec::new();
                        for item in list_items(v) {
                            let item = check(&item)?;
                            if !new.contains(&item) {
                                new.push(item);
                            }
                        }
                        items = new;
                    }
                    SettingOp::Add(v) => {
                        let item = check(v)?;
                        if !items.contains(&item) {
                            items.push(item);
                        }
                    }
                    SettingOp::Remove(None) => {
                        return Err(bad_op("a list takes `remove <item>`"));
                    }
                    SettingOp::Remove(Some(v)) => {
                        let v = v.trim();
                        let canonical = (key == "folders")
                            .then(|| fs_err::canonicalize(v).ok())
                            .flatten()
                            .map(|p| p.to_string_lossy().into_owned());
                        let before = items.len();
                        items.retain(|i| i != v && Some(i) != canonical.as_ref());
                        if items.len() == before {
                            return Err(missing(v));
                        }
                    }
                }
                match key {
                    "folders" => self.folders = items.into_iter().map(PathBuf::from).collect(),
                    "exclude" => self.exclude = items,
                    "lan_shared_libraries" => self.lan_shared_libraries = items,
                    "ocr.languages" => {
                        if items.is_empty() {
                            return Err(SettingError::BadValue {
                                key: key.to_string(),
                                value: String::new(),
                                expected: "at least one language (turn OCR off with `ocr.enabled false` instead)".into(),
                            });
                        }
                        self.ocr.languages = items;
                    }
                    _ => unreachable!("every list is written above"),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_and_switches_parse() {
        let c = Config::default();
        for s in SETTINGS {
            c.setting(s.key).unwrap();
        }
        assert_eq!(c.setting("transcription.audio").unwrap(), "false");
        assert_eq!(c.setting("ocr.enabled").unwrap(), "true");
        let err = c.setting("ocr.langs").unwrap_err().to_string();
        assert!(
            err.contains("ocr.langs") && err.contains("ocr.languages"),
            "{err}"
        );
    }

    #[test]
    fn shared_libraries_follow_their_library() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = Config::default();
        c.add_folder(tmp.path()).unwrap();
        c.add_library("team", "", &[tmp.path().to_path_buf()], &[])
            .unwrap();
        c.change_setting("lan_shared_libraries", SettingOp::Add("team".into()))
            .unwrap();
        assert_eq!(c.setting("lan_shared_libraries").unwrap(), "team");
        let e = c
            .change_setting("lan_shared_libraries", SettingOp::Add("other".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("(team)"), "{e}");
        let rename = crate::LibraryEdit {
            name: Some("crew".into()),
            ..crate::LibraryEdit::default()
        };
        c.edit_library("team", &rename).unwrap();
        assert_eq!(c.lan_shared_libraries, ["crew"]);
        // Deleted, then made again under the same name: not shared until the person says so.
        c.remove_library("crew").unwrap();
        assert!(c.lan_shared_libraries.is_empty());
    }

    #[test]
    fn bad_values_name_the_key_and_change_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = Config::default();
        c.change_setting("transcription.audio", SettingOp::Set("on".into()))
            .unwrap();
        assert!(c.transcription.audio);
        let before = c.clone();
        let e = c
            .change_setting("transcription.video", SettingOp::Set("maybe".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("transcription.video") && e.contains("true or false"),
            "{e}"
        );
        // One bad item in a list: the whole set is refused.
        let e = c
            .change_setting("ocr.languages", SettingOp::Set("eng, Français".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ocr.languages") && e.contains("Français"), "{e}");
        let e = c
            .change_setting("folders", SettingOp::Add("/no/such/folder".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist"), "{e}");
        let e = c
            .change_setting("folders", SettingOp::Add("relative/dir".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("absolute"), "{e}");
        let e = c
            .change_setting("libraries", SettingOp::Set("x".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("linkly library"), "{e}");
        let e = c
            .change_setting("lan_shared_libraries", SettingOp::Add("ghost".into()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("lan_shared_libraries") && e.contains("create one"),
            "{e}"
        );
        assert_eq!(c, before);
        // A good folder is added canonical, once, and removed by the same path.
        let dir = tmp.path().to_str().unwrap();
        c.change_setting("folders", SettingOp::Add(dir.into()))
            .unwrap();
        c.change_setting("folders", SettingOp::Add(dir.into()))
            .unwrap();
        assert_eq!(c.folders.len(), 1);
        let v1 = c.setting_version("folders").unwrap();
        c.change_setting("folders", SettingOp::Remove(Some(dir.into())))
            .unwrap();
        assert!(c.folders.is_empty());
        assert_ne!(c.setting_version("folders").unwrap(), v1);
        let e = c
            .change_setting("exclude", SettingOp::Remove(Some("*.log".into())))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exclude") && e.contains("current items"), "{e}");
    }
}
