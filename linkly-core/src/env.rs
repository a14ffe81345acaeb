//! The environment variables Linkly reads, each declared once.

/// The data directory (index, config, notes, port file); default `~/.linkly`.
pub const LINKLY_HOME: &str = "LINKLY_HOME";
/// Log filter for the front ends, in `tracing-subscriber` `EnvFilter` syntax (default `warn`).
pub const LINKLY_LOG: &str = "LINKLY_LOG";
/// The Tesseract program used for OCR (a name looked up in `PATH`, or a path); default
/// `tesseract`. A program that cannot be run means OCR is unavailable.
pub const LINKLY_TESSERACT: &str = "LINKLY_TESSERACT";
/// The `ffmpeg` program that decodes the sound of audio and video files the built-in decoders
/// do not read (Opus, AVI, AC-3, ...); default `ffmpeg`. One that cannot be run leaves those
/// files indexed by name, with a reason naming the codec.
pub const LINKLY_FFMPEG: &str = "LINKLY_FFMPEG";
/// A folder holding the speech model (Whisper in Hugging Face layout, as `linkly model import`
/// writes it): used instead of the one in the data directory.
pub const LINKLY_SPEECH_MODEL_DIR: &str = "LINKLY_SPEECH_MODEL_DIR";
/// The precision of the speech model's matrix products: unset for the one a calibration at the
/// model's first load measured fastest on this machine among those that transcribe a known
/// recording with no more word errors than f32 (kept in `<model>/.linkly/whisper-calibration.json`);
/// `f32`, `int8` (AVX-512 VNNI), `int16` (AVX2), `bf16` (AMX where the CPU has it, else AVX-512
/// BF16), `bf16-amx` or `bf16-avx512` to force one; `avx2` to calibrate among the paths an AVX2
/// CPU has (f32 and int16) only.
pub const LINKLY_WHISPER_ENGINE: &str = "LINKLY_WHISPER_ENGINE";
/// A local folder holding the embedding model (`config.json`, `tokenizer.json`,
/// `model.safetensors`): used instead of the selected, downloaded model (offline machines).
pub const LINKLY_MODEL_DIR: &str = "LINKLY_MODEL_DIR";
/// The forward pass that runs the embedding model: unset for Linkly's CPU-tuned encoder in the
/// precision a calibration at the model's first load measured fastest on this machine among
/// those whose vectors stay within a cosine of 0.999 of the f32 ones (kept in
/// `<model>/.linkly/calibration.json`); `f32`, `int16`, `bf16` (AMX where the CPU has it, else
/// AVX-512 BF16), `bf16-amx` or `bf16-avx512` to force one, `int8` for int8 linear layers where
/// the CPU has AVX-512 VNNI (vectors within a cosine of about 0.996 of the f32 ones, so never
/// chosen by the calibration), `candle-transformers` for candle-transformers' reference models
/// (slower; for comparison).
pub const LINKLY_EMBED_ENGINE: &str = "LINKLY_EMBED_ENGINE";
