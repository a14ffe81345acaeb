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
/// A local folder holding the embedding model (`config.json`, `tokenizer.json`,
/// `model.safetensors`): used instead of the selected, downloaded model (offline machines).
pub const LINKLY_MODEL_DIR: &str = "LINKLY_MODEL_DIR";
/// The forward pass that runs the embedding model: unset for Linkly's CPU-tuned encoder (bf16
/// linear layers on AMX tiles where the CPU has them, int16 on AVX2 CPUs without AVX-512, both
/// with vectors within a cosine of 0.9999 of the f32 ones; f32 elsewhere), `f32`, `int16` or
/// `bf16` to force one, `int8` for int8 linear layers where the CPU has AVX-512 VNNI (about
/// 1.5× faster embedding, vectors within a cosine of about 0.996 of the f32 ones),
/// `candle-transformers` for candle-transformers' reference models (slower; for comparison).
pub const LINKLY_EMBED_ENGINE: &str = "LINKLY_EMBED_ENGINE";
