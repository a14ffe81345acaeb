//! The speech model's part of `linkly model`: `import <folder>` of a Whisper model (CTranslate2
//! or Hugging Face layout, converted once into the data directory's `models/speech`), and its
//! line in `linkly model status`.

use std::path::Path;
use std::process::ExitCode;

use linkly_core::DataDir;
use linkly_models::whisper;
use serde_json::json;

use crate::output::Printer;

/// True when `path` is a folder that holds a Whisper model in either layout, so that
/// `linkly model import` takes this branch rather than the embedding model's.
pub(crate) fn is_whisper(path: &Path) -> bool {
    whisper::recognise(path).is_ok()
}

/// What a folder is, for an import that recognised nothing: the Whisper side's account.
pub(crate) fn not_whisper(path: &Path) -> String {
    match whisper::recognise(path) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

/// `linkly model import <folder>` for a Whisper model.
pub(crate) fn import(data: &DataDir, path: &Path, printer: Printer) -> anyhow::Result<ExitCode> {
    let dest = data.speech_model_dir();
    if !printer.json {
        eprintln!("Converting the Whisper model in {} ...", path.display());
    }
    let imported = whisper::import(path, &dest)?;
    // Calibrated and prepared now, so the first `linkly index` only maps the weights.
    if !printer.json {
        eprintln!("Measuring which precision runs it fastest on this CPU ...");
    }
    let precision = whisper::Whisper::load(&dest)?.precision();
    let layout = match imported.layout {
        whisper::Layout::CTranslate2 => "CTranslate2",
        whisper::Layout::HuggingFace => "Hugging Face",
    };
    let languages = if imported.multilingual {
        "multilingual"
    } else {
        "English only"
    };
    if printer.json {
        println!(
            "{}",
            json!({
                "status": "success", "kind": "speech", "model": format!("whisper-{}", imported.size),
                "multilingual": imported.multilingual, "source_layout": layout, "dir": dest,
                "precision": precision,
            })
        );
    } else {
        println!(
            "Installed Whisper {} ({languages}, from {layout} layout) into {} as the speech model, its products in {precision} on this CPU.",
            imported.size,
            dest.display()
        );
        println!("Run `linkly index` to transcribe your audio and video files.");
    }
    Ok(ExitCode::SUCCESS)
}

/// The hub id of a Whisper model name (`whisper-base`, `tiny`, `openai/whisper-small.en`):
/// `linkly model download` fetches these as the speech model.
pub(crate) fn hub_id(name: &str) -> Option<&'static str> {
    let short = name.trim().trim_start_matches("openai/");
    let short = short.strip_prefix("whisper-").unwrap_or(short);
    Some(match short {
        "tiny" => "openai/whisper-tiny",
        "tiny.en" => "openai/whisper-tiny.en",
        "base" => "openai/whisper-base",
        "base.en" => "openai/whisper-base.en",
        "small" => "openai/whisper-small",
        "small.en" => "openai/whisper-small.en",
        _ => return None,
    })
}

/// After `linkly model download whisper-…`: the hub folder (Hugging Face layout) becomes the
/// speech model, and the download's folder goes.
pub(crate) fn install_downloaded(
    data: &DataDir,
    id: &str,
    dir: &Path,
    printer: Printer,
) -> anyhow::Result<ExitCode> {
    let code = import(data, dir, printer)?;
    let _ = fs_err::remove_dir_all(dir);
    if !printer.json {
        println!("({id} from the Hugging Face hub.)");
    }
    Ok(code)
}

/// The speech model's state: `(present, one line)`.
pub(crate) fn status(data: &DataDir) -> (bool, String) {
    let dir = data.speech_model_dir();
    match whisper::recognise(&dir) {
        Ok(whisper::Layout::HuggingFace) => {
            let about = whisper::describe(&dir).unwrap_or_else(|_| "Whisper".into());
            let precision = match whisper::calibration(&dir) {
                Some(c) => format!(
                    ", products in {} ({})",
                    c.chosen,
                    c.paths
                        .iter()
                        .map(|p| format!("{} {:.0} ms", p.precision, p.ms))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => String::new(),
            };
            (true, format!("{about} in {}{precision}", dir.display()))
        }
        _ => (
            false,
            "none: audio and video are indexed by name (`linkly model download whisper-base`, or `linkly model import <folder>`)".into(),
        ),
    }
}

/// The speech model for `linkly model status --json`.
pub(crate) fn status_json(data: &DataDir) -> serde_json::Value {
    let (present, about) = status(data);
    let calibration = whisper::calibration(&data.speech_model_dir());
    json!({"present": present, "dir": data.speech_model_dir(), "state": about,
           "precision": calibration.as_ref().map(|c| c.chosen.clone()),
           "calibration": calibration})
}
