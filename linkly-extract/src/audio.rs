//! The sound of an audio or video file as 16 kHz mono samples, what Whisper listens to.
//!
//! Symphonia demuxes and decodes in-process (WAV, MP3, AAC in MP4/M4A/MOV, FLAC, Ogg Vorbis,
//! Matroska/WebM with those codecs, ALAC, ADPCM); the channels are averaged and rubato's FFT
//! resampler brings the rate to 16 kHz as the packets come, so memory holds the 16 kHz samples
//! only. What symphonia cannot read (Opus, AVI, AC-3, ...) goes to `ffmpeg` when it is on the
//! PATH (`$LINKLY_FFMPEG` names another program), run as a child process with a deadline; without
//! it the file gets a skip reason naming the codec or container. A corrupt stream keeps what
//! decoded before the damage; nothing decoded at all is `corrupt`; a video without a sound
//! track is `no_sound_track`.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Duration;

use linkly_core::SkipReason;
use rubato::{FftFixedIn, Resampler};
use symphonia::core::audio::SampleBuffer;
use symphonia::core::codecs::{self, CODEC_TYPE_NULL, CodecType, DecoderOptions};
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::MediaSourceStream;
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use crate::child::{self, RunError};

/// The rate Whisper listens at.
pub const RATE: u32 = 16_000;

/// Decoded sound: 16 kHz mono samples in `[-1, 1]`.
#[derive(Debug, Clone, Default)]
pub struct Sound {
    /// The samples.
    pub samples: Vec<f32>,
    /// Set when the samples stop before the file's end: why (damaged stream, length cap).
    pub cut: Option<String>,
    /// Who decoded it: `symphonia` or `ffmpeg`.
    pub decoder: &'static str,
}

impl Sound {
    /// Length in seconds.
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / RATE as f64
    }
}

/// The `ffmpeg` program: `$LINKLY_FFMPEG`, else `ffmpeg` from `PATH`.
fn ffmpeg_program() -> PathBuf {
    std::env::var_os(linkly_core::env::LINKLY_FFMPEG)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("ffmpeg"))
}

/// Decodes `bytes` (the file at `path`) into at most `max_seconds` of 16 kHz mono sound.
/// `ffmpeg_timeout` bounds the fallback's run.
pub fn decode(
    path: &Path,
    bytes: &[u8],
    max_seconds: f64,
    ffmpeg_timeout: Duration,
) -> Result<Sound, SkipReason> {
    let max_samples = (max_seconds * RATE as f64) as usize;
    match decode_symphonia(path, bytes, max_samples) {
        Ok(sound) => Ok(sound),
        Err(Failure::Final(reason)) => Err(reason),
        Err(Failure::Unsupported(what)) => {
            match decode_ffmpeg(path, bytes, max_samples, ffmpeg_timeout) {
                Ok(sound) => Ok(sound),
                Err(FfmpegError::Missing) => Err(SkipReason::new(
                    SkipReason::CODEC_UNSUPPORTED,
                    format!(
                        "{what} is not decoded without ffmpeg; install ffmpeg (or set LINKLY_FFMPEG) and index again"
                    ),
                )),
                Err(FfmpegError::Failed(reason)) => Err(reason),
            }
        }
    }
}

/// Why symphonia gave no sound.
enum Failure {
    /// Nothing will do better (corrupt, no sound track).
    Final(SkipReason),
    /// A container or codec symphonia lacks, named: ffmpeg may read it.
    Unsupported(String),
}

fn corrupt(detail: impl Into<String>) -> SkipReason {
    SkipReason::new(SkipReason::CORRUPT, detail)
}

fn no_sound_track() -> SkipReason {
    SkipReason::new(
        SkipReason::NO_SOUND_TRACK,
        "the file has no sound track to transcribe",
    )
}

/// A codec's name for people.
fn codec_name(codec: CodecType) -> String {
    if let Some(d) = symphonia::default::get_codecs().get_codec(codec) {
        return format!("{} audio", d.long_name);
    }
    let name = match codec {
        codecs::CODEC_TYPE_OPUS => "Opus",
        codecs::CODEC_TYPE_SPEEX => "Speex",
        codecs::CODEC_TYPE_WAVPACK => "WavPack",
        codecs::CODEC_TYPE_MONKEYS_AUDIO => "Monkey's Audio",
        codecs::CODEC_TYPE_TTA => "TTA",
        codecs::CODEC_TYPE_MP1 => "MPEG Layer I",
        codecs::CODEC_TYPE_MP2 => "MPEG Layer II",
        codecs::CODEC_TYPE_ATRAC3 | codecs::CODEC_TYPE_ATRAC3PLUS => "ATRAC",
        codecs::CODEC_TYPE_NULL => "an unknown codec",
        _ => return format!("audio codec {codec}"),
    };
    format!("{name} audio")
}

fn decode_symphonia(path: &Path, bytes: &[u8], max_samples: usize) -> Result<Sound, Failure> {
    let source = MediaSourceStream::new(Box::new(Cursor::new(bytes.to_vec())), Default::default());
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    let probed = symphonia::default::get_probe()
        .format(
            &hint,
            source,
            &FormatOptions::default(),
            &MetadataOptions::default(),
        )
        .map_err(|e| match e {
            SymphoniaError::Unsupported(_) => Failure::Unsupported(format!(
                "the {} container",
                path.extension()
                    .and_then(|e| e.to_str())
                    .map(|e| e.to_ascii_uppercase())
                    .unwrap_or_else(|| "file's".into())
            )),
            other => Failure::Final(corrupt(format!("cannot read the container: {other}"))),
        })?;
    let mut format = probed.format;
    let tracks = format.tracks();
    // An audio track: one with a sample rate or channels (video tracks have neither).
    let audio = tracks.iter().find(|t| {
        t.codec_params.codec != CODEC_TYPE_NULL
            && (t.codec_params.sample_rate.is_some() || t.codec_params.channels.is_some())
    });
    let Some(track) = audio else {
        let unknown_audio = tracks
            .iter()
            .any(|t| t.codec_params.sample_rate.is_some() || t.codec_params.channels.is_some());
        return Err(if unknown_audio {
            Failure::Unsupported("its audio codec".into())
        } else if tracks
            .iter()
            .any(|t| t.codec_params.codec != CODEC_TYPE_NULL)
            || tracks.is_empty()
        {
            Failure::Final(no_sound_track())
        } else {
            // Only tracks symphonia cannot name: a video, maybe with a sound track in a codec
            // it lacks; ffmpeg tells.
            Failure::Unsupported("the sound track's codec".into())
        });
    };
    let track_id = track.id;
    let params = track.codec_params.clone();
    let mut decoder = symphonia::default::get_codecs()
        .make(&params, &DecoderOptions::default())
        .map_err(|e| match e {
            SymphoniaError::Unsupported(_) => Failure::Unsupported(codec_name(params.codec)),
            other => Failure::Final(corrupt(format!("cannot decode the sound: {other}"))),
        })?;
    let mut sink: Option<Mono16k> = None;
    let mut cut = None;
    let mut bad_packets = 0u32;
    loop {
        let packet = match format.next_packet() {
            Ok(p) => p,
            Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                break;
            }
            Err(SymphoniaError::ResetRequired) => break,
            Err(e) => {
                cut = Some(format!("the stream is damaged after this point ({e})"));
                break;
            }
        };
        if packet.track_id() != track_id {
            continue;
        }
        let decoded = match decoder.decode(&packet) {
            Ok(d) => d,
            Err(SymphoniaError::DecodeError(_)) => {
                bad_packets += 1;
                if bad_packets > 1000 && sink.as_ref().is_none_or(|s| s.out.is_empty()) {
                    break;
                }
                continue;
            }
            Err(SymphoniaError::IoError(_)) => break,
            Err(e) => {
                cut = Some(format!("the sound is damaged after this point ({e})"));
                break;
            }
        };
        let spec = *decoded.spec();
        let channels = spec.channels.count().max(1);
        if sink.is_none() {
            sink =
                Some(Mono16k::new(spec.rate, max_samples).map_err(|e| Failure::Final(corrupt(e)))?);
        }
        let Some(sink) = sink.as_mut() else {
            continue;
        };
        let mut buf = SampleBuffer::<f32>::new(decoded.capacity() as u64, spec);
        buf.copy_interleaved_ref(decoded);
        for frame in buf.samples().chunks(channels) {
            sink.push(frame.iter().sum::<f32>() / channels as f32);
        }
        sink.drain().map_err(|e| Failure::Final(corrupt(e)))?;
        if sink.full() {
            cut = Some(format!(
                "only the first {} are transcribed",
                hours(max_samples as f64 / RATE as f64)
            ));
            break;
        }
    }
    let samples = match sink {
        Some(s) => s.finish().map_err(|e| Failure::Final(corrupt(e)))?,
        None => Vec::new(),
    };
    if samples.is_empty() {
        return Err(Failure::Final(if bad_packets > 0 {
            corrupt(format!(
                "no sound could be decoded ({bad_packets} damaged packets)"
            ))
        } else {
            SkipReason::new(SkipReason::EMPTY, "the file holds no sound (0 seconds)")
        }));
    }
    Ok(Sound {
        samples,
        cut,
        decoder: "symphonia",
    })
}

/// `2 h`, `90 min`.
fn hours(seconds: f64) -> String {
    if seconds >= 3600.0 {
        format!("{} h", (seconds / 3600.0 * 10.0).round() / 10.0)
    } else {
        format!("{} min", (seconds / 60.0).round())
    }
}

/// Mono samples at any rate in, 16 kHz out, as they come.
struct Mono16k {
    resampler: Option<FftFixedIn<f32>>,
    pending: Vec<f32>,
    out: Vec<f32>,
    max: usize,
    rate: u32,
    consumed: usize,
}

impl Mono16k {
    fn new(rate: u32, max: usize) -> Result<Mono16k, String> {
        if rate == 0 {
            return Err("the sound has a sample rate of 0".into());
        }
        let resampler = if rate == RATE {
            None
        } else {
            Some(
                FftFixedIn::<f32>::new(rate as usize, RATE as usize, 4096, 2, 1)
                    .map_err(|e| format!("cannot resample from {rate} Hz: {e}"))?,
            )
        };
        Ok(Mono16k {
            resampler,
            pending: Vec::new(),
            out: Vec::new(),
            max,
            rate,
            consumed: 0,
        })
    }

    fn push(&mut self, sample: f32) {
        self.pending.push(sample);
    }

    fn full(&self) -> bool {
        self.out.len() >= self.max
    }

    /// Resamples the whole chunks pending.
    fn drain(&mut self) -> Result<(), String> {
        let Some(r) = &mut self.resampler else {
            self.out.append(&mut self.pending);
            self.consumed = self.out.len();
            return Ok(());
        };
        let mut at = 0;
        while self.pending.len() - at >= r.input_frames_next() {
            let n = r.input_frames_next();
            let o = r
                .process(&[&self.pending[at..at + n]], None)
                .map_err(|e| e.to_string())?;
            self.out.extend_from_slice(&o[0]);
            at += n;
        }
        self.consumed += at;
        self.pending.drain(..at);
        Ok(())
    }

    /// The samples, the resampler's tail flushed and its delay cut off.
    fn finish(mut self) -> Result<Vec<f32>, String> {
        let Some(r) = &mut self.resampler else {
            self.out.append(&mut self.pending);
            self.out.truncate(self.max);
            return Ok(self.out);
        };
        let total_in = self.consumed + self.pending.len();
        if !self.pending.is_empty() {
            let o = r
                .process_partial(Some(&[&self.pending[..]]), None)
                .map_err(|e| e.to_string())?;
            self.out.extend_from_slice(&o[0]);
        }
        let delay = r.output_delay();
        // Flush what the filter still holds.
        while self.out.len() < delay + total_in * RATE as usize / self.rate as usize {
            let o = r
                .process_partial::<&[f32]>(None, None)
                .map_err(|e| e.to_string())?;
            if o[0].is_empty() {
                break;
            }
            self.out.extend_from_slice(&o[0]);
        }
        let expected = (total_in as u64 * RATE as u64 / self.rate as u64) as usize;
        self.out.drain(..delay.min(self.out.len()));
        self.out.truncate(expected.min(self.max));
        Ok(self.out)
    }
}

enum FfmpegError {
    Missing,
    Failed(SkipReason),
}

/// The sound through `ffmpeg -i <file> -vn -ac 1 -ar 16000 -f f32le -`.
fn decode_ffmpeg(
    path: &Path,
    bytes: &[u8],
    max_samples: usize,
    timeout: Duration,
) -> Result<Sound, FfmpegError> {
    let program = ffmpeg_program();
    // The file itself when it is there (MP4s keep their index at the end: a pipe cannot seek),
    // else the bytes on stdin.
    let from_file = path.is_file();
    let input = if from_file {
        path.to_string_lossy().into_owned()
    } else {
        "pipe:0".to_string()
    };
    let max_t = format!("{}", max_samples / RATE as usize);
    let args = [
        "-nostdin", "-v", "error", "-i", &input, "-t", &max_t, "-vn", "-sn", "-dn", "-ac", "1",
        "-ar", "16000", "-f", "f32le", "-",
    ];
    let mut cmd = child::command(&program, &args, None);
    if from_file {
        // `-nostdin` and no input: nothing to write.
        cmd.stdin(std::process::Stdio::null());
    }
    let stdin = (!from_file).then_some(bytes);
    let finished = match child::run(cmd, stdin, timeout, (max_samples as u64 + RATE as u64) * 4) {
        Ok(f) => f,
        Err(RunError::Start(_)) => return Err(FfmpegError::Missing),
        Err(RunError::Timeout(t)) => {
            return Err(FfmpegError::Failed(SkipReason::new(
                SkipReason::TIMEOUT,
                format!(
                    "ffmpeg took longer than {} s to decode the sound",
                    t.as_secs()
                ),
            )));
        }
        Err(RunError::Wait(e)) => {
            return Err(FfmpegError::Failed(corrupt(format!(
                "cannot wait for ffmpeg: {e}"
            ))));
        }
    };
    let err = String::from_utf8_lossy(&finished.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect::<String>();
    if !finished.status.success() {
        if err.contains("does not contain any stream") || err.contains("matches no streams") {
            return Err(FfmpegError::Failed(no_sound_track()));
        }
        return Err(FfmpegError::Failed(corrupt(format!(
            "ffmpeg cannot decode the sound: {last}"
        ))));
    }
    let samples: Vec<f32> = finished
        .stdout
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if samples.is_empty() {
        return Err(FfmpegError::Failed(if err.trim().is_empty() {
            SkipReason::new(SkipReason::EMPTY, "the file holds no sound (0 seconds)")
        } else {
            corrupt(format!("ffmpeg decoded no sound: {last}"))
        }));
    }
    let cut = (samples.len() >= max_samples).then(|| {
        format!(
            "only the first {} are transcribed",
            hours(max_samples as f64 / RATE as f64)
        )
    });
    Ok(Sound {
        samples,
        cut,
        decoder: "ffmpeg",
    })
}

/// Whether `ffmpeg` runs (for status reports).
pub fn ffmpeg_available() -> bool {
    let cmd = child::command(&ffmpeg_program(), &["-version"], None);
    matches!(child::run(cmd, None, Duration::from_secs(10), 4096), Ok(f) if f.status.success())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A WAV file of `seconds` of a tone at `rate` Hz, 16-bit, `channels` channels.
    pub(crate) fn wav(rate: u32, channels: u16, seconds: f64, freq: f64) -> Vec<u8> {
        let frames = (rate as f64 * seconds) as u32;
        let mut samples = Vec::with_capacity(frames as usize * channels as usize);
        for i in 0..frames {
            let v = (2.0 * std::f64::consts::PI * freq * i as f64 / rate as f64).sin() * 0.5;
            samples.extend(std::iter::repeat_n((v * 32767.0) as i16, channels as usize));
        }
        crate::hand_made_wav::pcm16(rate, channels, &samples)
    }

    #[test]
    fn resamples_to_16k_mono_and_keeps_the_tone() {
        let bytes = wav(44_100, 2, 2.0, 440.0);
        let s = decode(
            Path::new("tone.wav"),
            &bytes,
            3600.0,
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(s.decoder, "symphonia");
        assert!((s.seconds() - 2.0).abs() < 0.01, "{}", s.seconds());
        // A 440 Hz tone crosses zero 880 times a second.
        let mid = &s.samples[8000..24_000];
        let crossings = mid
            .windows(2)
            .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
            .count();
        assert!((870..=890).contains(&crossings), "{crossings}");
        let peak = mid.iter().fold(0f32, |a, b| a.max(b.abs()));
        assert!((0.45..0.55).contains(&peak), "{peak}");
    }

    #[test]
    fn caps_the_length_and_says_so() {
        let bytes = wav(16_000, 1, 3.0, 200.0);
        let s = decode(Path::new("long.wav"), &bytes, 1.0, Duration::from_secs(5)).unwrap();
        assert_eq!(s.samples.len(), 16_000);
        assert!(
            s.cut.as_deref().unwrap().contains("only the first"),
            "{:?}",
            s.cut
        );
    }

    #[test]
    fn bad_input_gets_a_reason() {
        let r = decode(
            Path::new("x.wav"),
            b"RIFF\x10\0\0\0WAVEjunkjunk",
            60.0,
            Duration::from_secs(5),
        )
        .unwrap_err();
        assert!(
            [SkipReason::CORRUPT, SkipReason::EMPTY].contains(&r.code),
            "{r}"
        );
        // A header with no samples: 0 seconds.
        let empty = wav(16_000, 1, 0.0, 0.0);
        let r = decode(Path::new("zero.wav"), &empty, 60.0, Duration::from_secs(5)).unwrap_err();
        assert_eq!(r.code, SkipReason::EMPTY, "{r}");
    }
}
