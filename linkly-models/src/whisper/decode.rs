//! Whisper's transcription loop, after openai-whisper's `transcribe.py` and `decoding.py`.
//!
//! The audio is read in 30-second windows. Each window's log-mel spectrogram goes through the
//! encoder once; the decoder then writes tokens greedily (temperature 0) under Whisper's
//! timestamp rules (the first token is a timestamp of at most 1 s, timestamps come in pairs and
//! never go back, a timestamp is forced when their summed probability beats every text token).
//! A window whose text repeats itself (gzip compression ratio over 2.4) or whose mean token
//! log-probability is under −1 is decoded again at the next temperature (0.2 … 1.0, sampled
//! with a fixed seed). A window whose no-speech probability is over 0.6 while its text is
//! unlikely (mean log-probability under −1) is silence or music: it gives no text, and neither
//! does a window still repetitive after the last temperature, nor one whose no-speech
//! probability is over 0.8, nor one quieter than −60 dBFS. The next window starts at the
//! last complete timestamp pair, so no speech is cut at a window's edge.

use std::io::Write as _;
use std::time::Instant;

use candle_core::{IndexOp, Tensor};
use candle_transformers::models::whisper as m;

use crate::whisper::model::Cross;
use crate::whisper::{Segment, TranscribeOptions, Transcript, Whisper, WhisperError};

/// The tokens that steer the decoder.
#[derive(Debug, Clone)]
pub(crate) struct SpecialTokens {
    pub(crate) multilingual: bool,
    sot: u32,
    eot: u32,
    transcribe: Option<u32>,
    no_speech: Option<u32>,
    timestamp_begin: u32,
    /// The language tokens of a multilingual model and their codes (`en`, `zh`, ...).
    languages: Vec<(u32, String)>,
}

impl SpecialTokens {
    pub(crate) fn of(tok: &tokenizers::Tokenizer, vocab: usize) -> Result<SpecialTokens, String> {
        let id = |s: &str| tok.token_to_id(s);
        let need = |s: &str| id(s).ok_or_else(|| format!("the tokenizer has no {s} token"));
        let sot = need("<|startoftranscript|>")?;
        let eot = need("<|endoftext|>")?;
        let no_timestamps = need("<|notimestamps|>")?;
        let translate = id("<|translate|>");
        let multilingual = vocab >= 51865;
        let languages = match (multilingual, translate) {
            (true, Some(translate)) => (sot + 1..translate)
                .filter_map(|i| {
                    let t = tok.id_to_token(i)?;
                    let code = t.strip_prefix("<|")?.strip_suffix("|>")?;
                    Some((i, code.to_string()))
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(SpecialTokens {
            multilingual,
            sot,
            eot,
            transcribe: id("<|transcribe|>"),
            no_speech: id("<|nospeech|>").or_else(|| id("<|nocaptions|>")),
            timestamp_begin: no_timestamps + 1,
            languages,
        })
    }
}

/// Seconds per timestamp step, and mel frames per timestamp step.
const TIME_PRECISION: f64 = 0.02;
const FRAMES_PER_STEP: usize = 2;
/// The latest first timestamp allowed, in steps (1 s).
const MAX_INITIAL_TIMESTAMP: u32 = 50;
/// A window quieter than this (root mean square, −60 dBFS) is silence, not decoded.
const SILENCE_RMS: f32 = 0.001;
/// A no-speech probability over this is silence or music whatever the text's probability:
/// Whisper's own rule (over 0.6 with a mean log-probability under −1) lets the "you" or
/// "Thank you." it writes on quiet noise through.
const SURE_NO_SPEECH: f64 = 0.8;
/// Windows shorter than this many mel frames (0.2 s) at the end of the audio are not decoded.
const MIN_WINDOW_FRAMES: usize = 20;

/// One decoding of one window.
#[derive(Debug)]
struct Decoded {
    /// Sampled tokens, the end-of-text token excluded.
    tokens: Vec<u32>,
    avg_logprob: f64,
    no_speech_prob: f64,
    compression_ratio: f64,
    temperature: f64,
}

pub(crate) fn transcribe(
    w: &mut Whisper,
    pcm: &[f32],
    options: &TranscribeOptions,
) -> Result<Transcript, WhisperError> {
    let hop = m::HOP_LENGTH;
    let total_frames = pcm.len() / hop;
    let mut out = Transcript::default();
    let mut language: Option<u32> = None;
    if !w.tokens.multilingual {
        out.language = Some("en".into());
    } else if let Some(code) = &options.language
        && let Some((id, c)) = w.tokens.languages.iter().find(|(_, c)| c == code)
    {
        language = Some(*id);
        out.language = Some(c.clone());
    }
    let mut seek = 0usize;
    let mut window = 0u64;
    while seek + MIN_WINDOW_FRAMES <= total_frames {
        if let Some(deadline) = options.deadline
            && Instant::now() >= deadline
        {
            out.cut_short = Some(format!(
                "transcribed up to {} of {}: the time budget was spent",
                clock(seek as f64 * hop as f64 / m::SAMPLE_RATE as f64),
                clock(pcm.len() as f64 / m::SAMPLE_RATE as f64)
            ));
            break;
        }
        let frames = (total_frames - seek).min(m::N_FRAMES);
        let samples = &pcm[seek * hop..((seek + frames) * hop).min(pcm.len())];
        if rms(samples) < SILENCE_RMS {
            // Digital silence: nothing to hear, and Whisper would hear "you" in it.
            seek += frames;
            continue;
        }
        let mel = mel_window(w, samples)?;
        let audio = w.model.encoder.forward(&mel)?;
        let audio = w.model.decoder.cross(&audio)?;
        if w.tokens.multilingual && language.is_none() {
            let (id, code) = detect_language(w, &audio)?;
            language = Some(id);
            out.language = Some(code);
        }
        let mut prompt = vec![w.tokens.sot];
        if let Some(l) = language {
            prompt.push(l);
            prompt.extend(w.tokens.transcribe);
        }
        let offset = seek as f64 * hop as f64 / m::SAMPLE_RATE as f64;
        let d = decode_with_fallback(w, &audio, &prompt, window, options.deadline)?;
        window += 1;
        let silent = (d.no_speech_prob > m::NO_SPEECH_THRESHOLD
            && d.avg_logprob < m::LOGPROB_THRESHOLD)
            || d.no_speech_prob > SURE_NO_SPEECH;
        let looping = d.compression_ratio > m::COMPRESSION_RATIO_THRESHOLD;
        tracing::debug!(
            offset,
            no_speech = d.no_speech_prob,
            avg_logprob = d.avg_logprob,
            compression = d.compression_ratio,
            temperature = d.temperature,
            silent,
            looping,
            "whisper window"
        );
        if silent || looping {
            seek += frames;
            continue;
        }
        let (segments, advance) = split(w, &d.tokens, frames, offset)?;
        let end_of_audio = pcm.len() as f64 / m::SAMPLE_RATE as f64;
        for mut s in segments {
            s.end = s.end.min(end_of_audio);
            s.start = s.start.min(s.end);
            if !s.text.is_empty() {
                out.segments.push(s);
            }
        }
        seek += advance.clamp(1, frames);
    }
    out.covered = (seek.min(total_frames) * hop) as f64 / m::SAMPLE_RATE as f64;
    if out.cut_short.is_none() {
        out.covered = pcm.len() as f64 / m::SAMPLE_RATE as f64;
    }
    Ok(out)
}

/// `h:mm:ss` or `m:ss`.
fn clock(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The log-mel spectrogram of up to 30 s of samples, padded with silence to 30 s:
/// `(1, n_mels, 3000)`.
fn mel_window(w: &Whisper, samples: &[f32]) -> Result<Tensor, WhisperError> {
    let n_mels = w.config.num_mel_bins;
    let mel = m::audio::pcm_to_mel(&w.config.candle(), samples, &w.filters);
    let n_len = mel.len() / n_mels;
    let keep = m::N_FRAMES.min(n_len);
    let mut data = vec![0f32; n_mels * m::N_FRAMES];
    for row in 0..n_mels {
        data[row * m::N_FRAMES..row * m::N_FRAMES + keep]
            .copy_from_slice(&mel[row * n_len..row * n_len + keep]);
    }
    Ok(Tensor::from_vec(data, (1, n_mels, m::N_FRAMES), &w.device)?)
}

/// The logits at position `pos` of the hidden states `hidden` of the tokens just passed.
fn logits_at(w: &Whisper, hidden: &Tensor, pos: usize) -> Result<Vec<f32>, WhisperError> {
    Ok(w.model.decoder.logits(&hidden.i((..1, pos..pos + 1))?)?)
}

fn detect_language(w: &Whisper, audio: &Cross) -> Result<(u32, String), WhisperError> {
    let mut state = w.model.decoder.start(audio);
    let hidden = w.model.decoder.forward(&mut state, &[w.tokens.sot])?;
    let logits = logits_at(w, &hidden, 0)?;
    let best = w
        .tokens
        .languages
        .iter()
        .filter(|(id, _)| (*id as usize) < logits.len())
        .max_by(|a, b| logits[a.0 as usize].total_cmp(&logits[b.0 as usize]))
        .cloned()
        .ok_or_else(|| WhisperError::Model("the model has no language tokens".into()))?;
    Ok(best)
}

fn decode_with_fallback(
    w: &Whisper,
    audio: &Cross,
    prompt: &[u32],
    window: u64,
    deadline: Option<Instant>,
) -> Result<Decoded, WhisperError> {
    let mut best: Option<Decoded> = None;
    for (i, &t) in m::TEMPERATURES.iter().enumerate() {
        let d = decode_once(w, audio, prompt, t, window * 7919 + i as u64)?;
        let needs_fallback = d.compression_ratio > m::COMPRESSION_RATIO_THRESHOLD
            || d.avg_logprob < m::LOGPROB_THRESHOLD;
        let silent = d.no_speech_prob > m::NO_SPEECH_THRESHOLD;
        let out_of_time = deadline.is_some_and(|d| Instant::now() >= d);
        if !needs_fallback || silent || out_of_time || i + 1 == m::TEMPERATURES.len() {
            return Ok(d);
        }
        best = Some(d);
    }
    best.ok_or_else(|| WhisperError::Model("no decoding".into()))
}

fn decode_once(
    w: &Whisper,
    audio: &Cross,
    prompt: &[u32],
    temperature: f64,
    seed: u64,
) -> Result<Decoded, WhisperError> {
    let sample_len = w.config.max_target_positions / 2;
    let mut tokens = prompt.to_vec();
    let mut sum_logprob = 0f64;
    let mut no_speech_prob = 0f64;
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut state = w.model.decoder.start(audio);
    for step in 0..sample_len {
        // The prompt at the first step, then the token just written.
        let seen = state.len();
        let hidden = w.model.decoder.forward(&mut state, &tokens[seen..])?;
        let rows = hidden.dim(1)?;
        if step == 0
            && let Some(ns) = w.tokens.no_speech
        {
            let at_sot = logits_at(w, &hidden, 0)?;
            no_speech_prob = softmax(&at_sot, 1.0)
                .get(ns as usize)
                .copied()
                .unwrap_or(0.0) as f64;
        }
        let mut logits = logits_at(w, &hidden, rows - 1)?;
        apply_rules(w, &mut logits, &tokens[prompt.len()..]);
        let logprobs = log_softmax(&logits);
        let next = if temperature <= 0.0 {
            argmax(&logits)
        } else {
            sample(&logits, temperature, &mut rng)
        };
        sum_logprob += logprobs[next] as f64;
        let next = next as u32;
        if next == w.tokens.eot {
            break;
        }
        tokens.push(next);
        if tokens.len() >= w.config.max_target_positions {
            break;
        }
    }
    let sampled = tokens[prompt.len()..].to_vec();
    let text = text_of(w, &sampled)?;
    Ok(Decoded {
        avg_logprob: sum_logprob / (sampled.len() + 1) as f64,
        compression_ratio: compression_ratio(&text),
        tokens: sampled,
        no_speech_prob,
        temperature,
    })
}

/// Whisper's logit filters: the suppressed tokens, the special tokens, and the timestamp rules.
fn apply_rules(w: &Whisper, logits: &mut [f32], sampled: &[u32]) {
    let n = logits.len();
    let block = |logits: &mut [f32], from: usize, to: usize| {
        for l in &mut logits[from.min(n)..to.min(n)] {
            *l = f32::NEG_INFINITY;
        }
    };
    for &t in &w.config.suppress_tokens {
        block(logits, t as usize, t as usize + 1);
    }
    if sampled.is_empty() {
        for &t in &w.config.begin_suppress_tokens {
            block(logits, t as usize, t as usize + 1);
        }
    }
    let eot = w.tokens.eot as usize;
    let tb = w.tokens.timestamp_begin as usize;
    // Start of transcript, languages, tasks, no-speech, no-timestamps: never written.
    block(logits, eot + 1, tb);
    let is_ts = |t: u32| t as usize >= tb;
    let len = sampled.len();
    let last_ts = len >= 1 && is_ts(sampled[len - 1]);
    let penultimate_ts = len < 2 || is_ts(sampled[len - 2]);
    if last_ts {
        if penultimate_ts {
            block(logits, tb, n);
        } else {
            block(logits, 0, eot);
        }
    }
    if let Some(&last) = sampled.iter().rev().find(|&&t| is_ts(t)) {
        let floor = if last_ts && !penultimate_ts {
            last as usize
        } else {
            last as usize + 1
        };
        block(logits, tb, floor);
    }
    if sampled.is_empty() {
        block(logits, 0, tb);
        block(logits, tb + MAX_INITIAL_TIMESTAMP as usize + 1, n);
    }
    let logprobs = log_softmax(logits);
    let ts_logprob = log_sum_exp(&logprobs[tb.min(n)..]);
    let max_text = logprobs[..tb.min(n)]
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    if ts_logprob > max_text {
        block(logits, 0, tb);
    }
}

/// The segments of one window's tokens, and how many mel frames to move on.
fn split(
    w: &Whisper,
    tokens: &[u32],
    frames: usize,
    offset: f64,
) -> Result<(Vec<Segment>, usize), WhisperError> {
    let tb = w.tokens.timestamp_begin;
    let is_ts = |t: u32| t >= tb;
    let n = tokens.len();
    let time = |t: u32| offset + (t - tb) as f64 * TIME_PRECISION;
    let single_ending = n >= 2 && !is_ts(tokens[n - 2]) && is_ts(tokens[n - 1]);
    let mut slices: Vec<usize> = (1..n)
        .filter(|&i| is_ts(tokens[i - 1]) && is_ts(tokens[i]))
        .collect();
    let mut segments = Vec::new();
    if slices.is_empty() {
        let mut end = offset + frames as f64 * m::HOP_LENGTH as f64 / m::SAMPLE_RATE as f64;
        if let Some(&last) = tokens.iter().rev().find(|&&t| is_ts(t))
            && last != tb
        {
            end = time(last);
        }
        segments.push(Segment {
            start: offset,
            end,
            text: text_of(w, tokens)?,
        });
        return Ok((segments, frames));
    }
    if single_ending {
        slices.push(n);
    }
    let mut last = 0;
    for &cur in &slices {
        let part = &tokens[last..cur];
        if let (Some(&a), Some(&b)) = (part.first(), part.last())
            && is_ts(a)
            && is_ts(b)
        {
            segments.push(Segment {
                start: time(a),
                end: time(b),
                text: text_of(w, part)?,
            });
        }
        last = cur;
    }
    let advance = if single_ending {
        frames
    } else {
        (tokens[last - 1].saturating_sub(tb)) as usize * FRAMES_PER_STEP
    };
    Ok((segments, advance))
}

/// The text of the text tokens among `tokens`, trimmed.
fn text_of(w: &Whisper, tokens: &[u32]) -> Result<String, WhisperError> {
    let text: Vec<u32> = tokens
        .iter()
        .copied()
        .filter(|&t| t < w.tokens.eot)
        .collect();
    let s = w
        .tokenizer
        .decode(&text, true)
        .map_err(|e| WhisperError::Model(format!("cannot decode tokens: {e}")))?;
    Ok(s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Bytes of text over bytes of its zlib compression: high for text that repeats itself.
fn compression_ratio(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = z.write_all(text.as_bytes());
    let compressed = z.finish().map(|v| v.len()).unwrap_or(text.len());
    text.len() as f64 / compressed.max(1) as f64
}

fn rms(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|x| x * x).sum::<f32>() / samples.len() as f32).sqrt()
}

fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i)
}

fn log_sum_exp(v: &[f32]) -> f32 {
    let max = v.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return max;
    }
    max + v.iter().map(|x| (x - max).exp()).sum::<f32>().ln()
}

fn log_softmax(v: &[f32]) -> Vec<f32> {
    let lse = log_sum_exp(v);
    v.iter().map(|x| x - lse).collect()
}

fn softmax(v: &[f32], temperature: f32) -> Vec<f32> {
    let scaled: Vec<f32> = v.iter().map(|x| x / temperature).collect();
    let lse = log_sum_exp(&scaled);
    scaled.iter().map(|x| (x - lse).exp()).collect()
}

/// A small deterministic generator for the temperature fallback's sampling.
struct XorShift(u64);

impl XorShift {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn sample(logits: &[f32], temperature: f64, rng: &mut XorShift) -> usize {
    let p = softmax(logits, temperature as f32);
    let mut r = rng.next_f32();
    for (i, &x) in p.iter().enumerate() {
        if r < x {
            return i;
        }
        r -= x;
    }
    argmax(logits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(clock(59.9), "0:59");
        assert_eq!(clock(3723.0), "1:02:03");
        assert!(compression_ratio(&"thank you. ".repeat(40)) > 2.4);
        assert!(compression_ratio("Ever tried. Ever failed. No matter. Try again.") < 2.4);
        let p = softmax(&[1.0, 2.0, f32::NEG_INFINITY], 1.0);
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6 && p[2] == 0.0);
        let mut rng = XorShift(7);
        assert!((0..100).all(|_| (0.0..1.0).contains(&rng.next_f32())));
    }
}
