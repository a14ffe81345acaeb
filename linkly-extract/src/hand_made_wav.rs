//! WAV files written by hand for the tests of this crate and of the command line: a PCM header
//! and 16-bit samples. Not API: hidden from the docs.

/// A 16-bit PCM WAV file at `rate` Hz with `channels` channels; `samples` interleaved, one
/// per channel for each frame.
pub fn pcm16(rate: u32, channels: u16, samples: &[i16]) -> Vec<u8> {
    let data = (samples.len() * 2) as u32;
    let mut b = Vec::with_capacity(44 + data as usize);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&channels.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * channels as u32 * 2).to_le_bytes());
    b.extend_from_slice(&(channels * 2).to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data.to_le_bytes());
    for s in samples {
        b.extend_from_slice(&s.to_le_bytes());
    }
    b
}

/// 16-bit mono WAV at 16 kHz, the rate Whisper hears.
pub fn mono_16k(samples: &[i16]) -> Vec<u8> {
    pcm16(16_000, 1, samples)
}
