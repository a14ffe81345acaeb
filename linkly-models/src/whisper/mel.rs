//! Whisper's mel filter bank, computed: librosa's `filters.mel(sr=16000, n_fft=400, n_mels)`
//! with the Slaney mel scale and Slaney area normalisation, which is what openai-whisper ships
//! as `mel_filters.npz` (the values agree to 1e-9; a test checks a few of them).

/// The filters as a row-major `n_mels × (n_fft / 2 + 1)` matrix.
pub(crate) fn filters(sample_rate: f64, n_fft: usize, n_mels: usize) -> Vec<f32> {
    const F_SP: f64 = 200.0 / 3.0;
    const MIN_LOG_HZ: f64 = 1000.0;
    let min_log_mel = MIN_LOG_HZ / F_SP;
    let logstep = 6.4f64.ln() / 27.0;
    let hz_to_mel = |f: f64| {
        if f >= MIN_LOG_HZ {
            min_log_mel + (f / MIN_LOG_HZ).ln() / logstep
        } else {
            f / F_SP
        }
    };
    let mel_to_hz = |m: f64| {
        if m >= min_log_mel {
            MIN_LOG_HZ * (logstep * (m - min_log_mel)).exp()
        } else {
            F_SP * m
        }
    };
    let bins = n_fft / 2 + 1;
    let nyquist = sample_rate / 2.0;
    let fft_freqs: Vec<f64> = (0..bins)
        .map(|k| k as f64 * nyquist / (bins - 1) as f64)
        .collect();
    let (low, high) = (hz_to_mel(0.0), hz_to_mel(nyquist));
    let edges: Vec<f64> = (0..n_mels + 2)
        .map(|i| mel_to_hz(low + (high - low) * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut out = Vec::with_capacity(n_mels * bins);
    for i in 0..n_mels {
        let norm = 2.0 / (edges[i + 2] - edges[i]);
        for &f in &fft_freqs {
            let lower = (f - edges[i]) / (edges[i + 1] - edges[i]);
            let upper = (edges[i + 2] - f) / (edges[i + 2] - edges[i + 1]);
            out.push((lower.min(upper).max(0.0) * norm) as f32);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    /// Values of openai-whisper's `assets/mel_filters.npz` (`mel_80`, 80 × 201, MIT).
    #[test]
    fn matches_openai_whispers_filters() {
        let f = super::filters(16_000.0, 400, 80);
        assert_eq!(f.len(), 80 * 201);
        let sum: f64 = f.iter().map(|&x| x as f64).sum();
        assert!((sum - 1.999_024_092_387_117).abs() < 1e-5, "{sum}");
        assert!((f[1] - 0.024_862_595).abs() < 1e-7, "{}", f[1]);
        let row40 = f[40 * 201..41 * 201].iter().copied().fold(0.0, f32::max);
        assert!((row40 - 0.014_735_566).abs() < 1e-7, "{row40}");
        assert_eq!(f[0], 0.0);
    }
}
