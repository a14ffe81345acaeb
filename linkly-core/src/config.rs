use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{Error, Result, env};

/// The data directory: where Linkly keeps its config, index, notes and port file.
///
/// `LINKLY_HOME` when set, else `~/.linkly`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// A data directory at `root` (not created yet).
    pub fn new(root: impl Into<PathBuf>) -> DataDir {
        DataDir { root: root.into() }
    }

    /// The data directory the environment names: `$LINKLY_HOME`, else `~/.linkly`.
    pub fn from_env() -> DataDir {
        if let Some(home) = std::env::var_os(env::LINKLY_HOME).filter(|v| !v.is_empty()) {
            return DataDir::new(home);
        }
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        DataDir::new(home.join(".linkly"))
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `config.toml`: watched folders and exclusions.
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    /// The folder of the search index and metadata store.
    pub fn index_dir(&self) -> PathBuf {
        self.root.join("index")
    }

    /// `port`: `{"port": N}` written by a running server.
    pub fn port_file(&self) -> PathBuf {
        self.root.join("port")
    }

    /// The speech model's folder (Whisper in Hugging Face layout, as `linkly model import` and
    /// `linkly model download whisper-…` write it): `$LINKLY_SPEECH_MODEL_DIR`, else
    /// `models/speech`.
    pub fn speech_model_dir(&self) -> PathBuf {
        std::env::var_os(crate::env::LINKLY_SPEECH_MODEL_DIR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| self.root.join("models").join("speech"))
    }

    /// `agent-token`: the bearer token MCP clients over HTTP send (0600).
    pub fn agent_token_file(&self) -> PathBuf {
        self.root.join("agent-token")
    }

    /// The agent token: read from [`DataDir::agent_token_file`], or drawn (256 bits) and
    /// written there, readable by its owner only, the first time.
    pub fn agent_token(&self) -> Result<String> {
        let path = self.agent_token_file();
        match fs_err::read_to_string(&path) {
            Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_string()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        self.ensure()?;
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        write_private(&path, &token)?;
        Ok(token)
    }

    /// The default notes folder.
    pub fn default_notes_dir(&self) -> PathBuf {
        self.root.join("notes")
    }

    /// Opens the data directory, the one way every command does: creates the root readable by
    /// its owner only (0700 on Unix), since it holds the tokens, the config, the databases and
    /// the extracted text of the person's documents; an existing root that others may read or
    /// enter is tightened to 0700 (with a warning, once a process).
    pub fn ensure(&self) -> Result<()> {
        if self.root.is_dir() {
            self.tighten();
            return Ok(());
        }
        if let Some(parent) = self.root.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs_err::create_dir_all(parent)?;
        }
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(&self.root) {
            Ok(()) => Ok(()),
            // Created meanwhile by another process.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && self.root.is_dir() => {
                self.tighten();
                Ok(())
            }
            Err(e) => Err(Error::Io(std::io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", self.root.display()),
            ))),
        }
    }

    /// Sets an existing root that others may read or enter to 0700 (Unix).
    fn tighten(&self) {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            static WARNED: std::sync::atomic::AtomicBool =
                std::sync::atomic::AtomicBool::new(false);
            let Ok(meta) = std::fs::metadata(&self.root) else {
                return;
            };
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 == 0 {
                return;
            }
            let result =
                std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(0o700));
            if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                match result {
                    Ok(()) => tracing::warn!(
                        dir = %self.root.display(),
                        was = format!("{mode:o}"),
                        "the data directory was readable by other accounts: made it 0700"
                    ),
                    Err(e) => tracing::warn!(
                        dir = %self.root.display(),
                        was = format!("{mode:o}"),
                        error = %e,
                        "the data directory is readable by other accounts and cannot be made 0700"
                    ),
                }
            }
        }
    }
}

/// Makes the database at `path` readable by its owner only (0600 on Unix) before SQLite opens
/// it: creates it empty with that mode when missing (SQLite gives its `-wal` and `-shm` files
/// the database's mode) and tightens an existing one that others may read.
pub fn private_database(path: &Path) -> std::io::Result<()> {
    if !path.exists() {
        let mut open = std::fs::OpenOptions::new();
        open.write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        open.open(path)?;
        return Ok(());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
        if mode & 0o077 == 0 {
            return Ok(());
        }
        for side in ["", "-wal", "-shm", "-journal"] {
            let mut name = path.as_os_str().to_owned();
            name.push(side);
            let name = Path::new(&name);
            if !name.exists() {
                continue;
            }
            // A database on a read-only disk stays as it is: SQLite opens it read-only.
            if let Err(e) =
                std::fs::set_permissions(name, std::fs::Permissions::from_mode(mode & 0o700))
            {
                tracing::warn!(file = %name.display(), error = %e, "cannot make a database owner-only");
            }
        }
    }
    Ok(())
}

/// Writes `text` to `path` readable by its owner only (0600 on Unix): a temporary file renamed
/// over it.
fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
    let mut f = open.open(&tmp).map_err(|e| {
        Error::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", tmp.display()),
        ))
    })?;
    f.write_all(text.as_bytes())?;
    drop(f);
    fs_err::rename(&tmp, path)?;
    Ok(())
}

/// The one config file (`<data dir>/config.toml`). Every field has a documented default, so an
/// absent file is an empty configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Watched folders, absolute paths. Default: none.
    pub folders: Vec<PathBuf>,
    /// Exclusion globs, matched against each path relative to its watched folder and against
    /// the file or folder name (`node_modules`, `*.log`, `drafts/**`). Hidden files and
    /// `.gitignore`d paths are always skipped. Default: none.
    pub exclude: Vec<String>,
    /// The notes folder. Default: `<data dir>/notes`.
    pub notes_dir: Option<PathBuf>,
    /// The bearer token that LAN clients must send. Made when LAN access is first turned on;
    /// loopback clients never need it. Default: none.
    pub lan_token: Option<String>,
    /// LAN access: other computers may reach the server (with [`Config::lan_token`]) and read
    /// [`Config::lan_shared_libraries`]. A running server applies a change within a second;
    /// `linkly serve --lan` turns it on. Default: off.
    pub lan_enabled: bool,
    /// Libraries: named sets of folders inside the watched ones (see `library.rs`). Default:
    /// none.
    pub libraries: Vec<crate::Library>,
    /// The libraries (by name) a LAN visitor signed in with the LAN token may search and read.
    /// Default: none (a visitor can sign in and read nothing).
    pub lan_shared_libraries: Vec<String>,
    /// Follow symlinked folders out of the watched folders. Default: false.
    pub follow_symlinks: bool,
    /// OCR of images and scanned PDF pages (the `[ocr]` table). Default: on, with
    /// [`OcrConfig::DEFAULT_LANGUAGES`].
    pub ocr: OcrConfig,
    /// Transcription of audio and video with the speech model (the `[transcription]` table).
    /// Default: both off, as in the app.
    pub transcription: TranscriptionConfig,
}

impl Config {
    /// The LAN token while LAN access is on ([`Config::lan_enabled`] with a token), else
    /// none: what a running server's gate reads on every request.
    pub fn lan_access(&self) -> Option<&str> {
        self.lan_token
            .as_deref()
            .filter(|t| self.lan_enabled && !t.is_empty())
    }

    /// Reads the config of a data directory; a missing file is the default config.
    pub fn load(dir: &DataDir) -> Result<Config> {
        let path = dir.config_file();
        let text = match fs_err::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(e.into()),
        };
        toml::from_str(&text).map_err(|e| Error::Config {
            path,
            message: e.to_string(),
        })
    }

    /// Writes the config atomically (temporary file, then rename).
    pub fn save(&self, dir: &DataDir) -> Result<()> {
        dir.ensure()?;
        let path = dir.config_file();
        let text = toml::to_string_pretty(self).map_err(|e| Error::Config {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let tmp = path.with_extension("toml.tmp");
        // The file may hold the LAN token: owner-only (0600 on Unix) from its creation on.
        let _ = fs_err::remove_file(&tmp);
        let mut options = fs_err::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        fs_err::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
        drop(file);
        fs_err::rename(&tmp, &path)?;
        Ok(())
    }

    /// The notes folder in effect.
    pub fn notes_dir(&self, dir: &DataDir) -> PathBuf {
        self.notes_dir
            .clone()
            .unwrap_or_else(|| dir.default_notes_dir())
    }

    /// Adds a watched folder (made absolute and canonical); false if it was there already.
    pub fn add_folder(&mut self, folder: &Path) -> Result<bool> {
        let canonical = fs_err::canonicalize(folder)?;
        if !canonical.is_dir() {
            return Err(Error::Io(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", canonical.display()),
            )));
        }
        if self.folders.contains(&canonical) {
            return Ok(false);
        }
        self.folders.push(canonical);
        Ok(true)
    }

    /// Removes a watched folder; false if it was not watched.
    pub fn remove_folder(&mut self, folder: &Path) -> bool {
        let canonical = fs_err::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
        let before = self.folders.len();
        self.folders.retain(|f| f != &canonical && f != folder);
        self.folders.len() != before
    }
}

/// The `[ocr]` table: text from images and scanned PDF pages through Tesseract.
///
/// ```toml
/// [ocr]
/// enabled = true
/// languages = ["eng", "fra", "spa", "chi_sim", "chi_tra", "jpn"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OcrConfig {
    /// Whether images and scanned PDF pages are OCR'd. OCR runs only when the engine is
    /// installed as well; otherwise such files are indexed by name with
    /// `skip_reason: ocr_unavailable` and picked up by the first sync after it is installed.
    /// Default: true.
    pub enabled: bool,
    /// Tesseract language codes (`eng`, `fra`, `chi_sim`, ...). Latin-script languages are tried
    /// first; the others join a second pass when the first reads little with confidence (see
    /// `docs/ocr.md`). Codes whose data is not installed are left out. Default:
    /// [`OcrConfig::DEFAULT_LANGUAGES`].
    pub languages: Vec<String>,
}

impl OcrConfig {
    /// The default languages: the five user languages (English, French, Spanish, Chinese in
    /// simplified and traditional script, Japanese).
    pub const DEFAULT_LANGUAGES: [&'static str; 6] =
        ["eng", "fra", "spa", "chi_sim", "chi_tra", "jpn"];
}

impl Default for OcrConfig {
    fn default() -> Self {
        OcrConfig {
            enabled: true,
            languages: Self::DEFAULT_LANGUAGES.map(str::to_string).to_vec(),
        }
    }
}

/// The `[transcription]` table: which media the speech model transcribes. Off by default (as
/// the desktop app ships): a media file is then indexed by name with `skip_reason:
/// transcription_off`, and the first sync after its switch is turned on transcribes it.
///
/// ```toml
/// [transcription]
/// audio = true
/// video = false
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// Transcribe audio files (mp3, m4a, wav, ...). Default: false.
    pub audio: bool,
    /// Transcribe the sound track of video files (mp4, mov, ...). Default: false.
    pub video: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn data_dir_and_config_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = DataDir::new(tmp.path().join("a").join("home"));
        let cfg = Config {
            lan_token: Some("secret".into()),
            ..Config::default()
        };
        cfg.save(&dir).unwrap();
        let mode = |p: &Path| fs_err::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(dir.root()), 0o700);
        assert_eq!(mode(&dir.config_file()), 0o600);
        // A second save (over an existing file) keeps it owner-only.
        cfg.save(&dir).unwrap();
        assert_eq!(mode(&dir.config_file()), 0o600);
        assert_eq!(Config::load(&dir).unwrap(), cfg);
    }

    #[cfg(unix)]
    #[test]
    fn databases_are_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let mode = |p: &Path| fs_err::metadata(p).unwrap().permissions().mode() & 0o777;
        let new = tmp.path().join("new.sqlite");
        private_database(&new).unwrap();
        assert_eq!(mode(&new), 0o600);
        assert_eq!(fs_err::metadata(&new).unwrap().len(), 0);
        // An existing database that others could read, and its WAL, are tightened; its content kept.
        let old = tmp.path().join("old.sqlite");
        let wal = tmp.path().join("old.sqlite-wal");
        fs_err::write(&old, b"content").unwrap();
        fs_err::write(&wal, b"log").unwrap();
        for p in [&old, &wal] {
            fs_err::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        private_database(&old).unwrap();
        assert_eq!((mode(&old), mode(&wal)), (0o600, 0o600));
        assert_eq!(fs_err::read(&old).unwrap(), b"content");
    }

    #[test]
    fn round_trips_and_defaults() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DataDir::new(tmp.path().join("home"));
        assert_eq!(Config::load(&dir).unwrap(), Config::default());
        let mut cfg = Config::default();
        assert!(cfg.add_folder(tmp.path()).unwrap());
        assert!(!cfg.add_folder(tmp.path()).unwrap());
        cfg.exclude.push("*.log".into());
        cfg.save(&dir).unwrap();
        assert_eq!(Config::load(&dir).unwrap(), cfg);
        assert!(cfg.remove_folder(tmp.path()));
    }

    #[test]
    fn invalid_file_names_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DataDir::new(tmp.path());
        fs_err::write(dir.config_file(), "folders = 3").unwrap();
        let err = Config::load(&dir).unwrap_err().to_string();
        assert!(err.contains("config.toml"), "{err}");
    }
}
