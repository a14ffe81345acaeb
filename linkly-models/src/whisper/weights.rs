//! Where the network's weights come from ([`Source`]): the checkpoint (`model.safetensors`,
//! read as f32, the linear layers rounded and packed into the chosen precision), optionally
//! written as it is read into a prepared file ([`crate::prepared`]); or that prepared file,
//! mapped, read back in the same order. Loading is one walk over the network
//! (`model.rs`), so what is written and what is read back cannot disagree on their order; the
//! prepared file also records every tensor's shape, which the walk checks.

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::VarBuilder;

use crate::encoder::Precision;
use crate::prepared::{Array, Reader, Writer, check};
use crate::whisper::linear::Linear;

fn io(e: std::io::Error) -> candle_core::Error {
    candle_core::Error::Msg(format!("prepared Whisper weights: {e}"))
}

/// The weights, as the network's walk asks for them by name.
pub(crate) enum Source<'a> {
    /// The checkpoint's tensors; the linear layers in `precision`; each item also written to
    /// `record` when given.
    Checkpoint {
        vb: VarBuilder<'static>,
        precision: Precision,
        record: Option<&'a mut Writer>,
    },
    /// A prepared file, in the order it was written.
    Prepared(&'a mut Reader),
}

impl Source<'_> {
    /// The device tensors are made on.
    pub(crate) fn device(&self) -> Device {
        match self {
            Source::Checkpoint { vb, .. } => vb.device().clone(),
            Source::Prepared(_) => Device::Cpu,
        }
    }

    /// The f32 tensor `name` of `shape`.
    pub(crate) fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        match self {
            Source::Checkpoint { vb, record, .. } => {
                let t = vb.get(shape, name)?.to_dtype(DType::F32)?;
                if let Some(w) = record {
                    let values = t.flatten_all()?.to_vec1::<f32>()?;
                    write_shape(w, shape).map_err(io)?;
                    w.slice(&values).map_err(io)?;
                }
                Ok(t)
            }
            Source::Prepared(r) => {
                read_shape(r, shape, name).map_err(io)?;
                let values: Array<f32> = r.array().map_err(io)?;
                check(values.len() == shape.iter().product::<usize>(), name).map_err(io)?;
                Tensor::from_slice(&values, shape, &Device::Cpu)
            }
        }
    }

    /// The linear layer `name` (`name.weight` `[n, k]`, `name.bias` when `bias`).
    pub(crate) fn linear(&mut self, name: &str, k: usize, n: usize, bias: bool) -> Result<Linear> {
        match self {
            Source::Checkpoint {
                vb,
                precision,
                record,
            } => {
                let w = vb.get((n, k), &format!("{name}.weight"))?;
                let b = if bias {
                    Some(vb.get(n, &format!("{name}.bias"))?.to_vec1::<f32>()?)
                } else {
                    None
                };
                let layer = linear_of(w, b, k, n, *precision)?;
                if let Some(w) = record {
                    layer.save(w).map_err(io)?;
                }
                Ok(layer)
            }
            Source::Prepared(r) => Linear::load(r)
                .map_err(io)?
                .ok_or_else(|| candle_core::Error::Msg("this CPU cannot run these weights".into())),
        }
    }

    /// The token embedding `name` `[rows, cols]` as a table of rows, and the output
    /// projection made of it (`x · tableᵀ`, no bias).
    pub(crate) fn embedding(
        &mut self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<(Table, Linear)> {
        match self {
            Source::Checkpoint {
                vb,
                precision,
                record,
            } => {
                let w = vb.get((rows, cols), name)?;
                let values = w.flatten_all()?.to_vec1::<f32>()?;
                if let Some(w) = record {
                    // Kept in f16 in the file, as the checkpoints come (CTranslate2's and
                    // the imported ones are f16).
                    let half: Vec<u16> = values.iter().copied().map(f16_bits).collect();
                    write_shape(w, &[rows, cols]).map_err(io)?;
                    w.slice(&half).map_err(io)?;
                }
                let projection = linear_of(w, None, cols, rows, *precision)?;
                if let Some(w) = record {
                    projection.save(w).map_err(io)?;
                }
                let table = Table {
                    cols,
                    rows: Rows::F32(values.into()),
                };
                Ok((table, projection))
            }
            Source::Prepared(r) => {
                read_shape(r, &[rows, cols], name).map_err(io)?;
                let values: Array<u16> = r.array().map_err(io)?;
                check(values.len() == rows * cols, name).map_err(io)?;
                let projection = Source::Prepared(r).linear(name, cols, rows, false)?;
                let table = Table {
                    cols,
                    rows: Rows::F16(values),
                };
                Ok((table, projection))
            }
        }
    }
}

fn linear_of(
    w: Tensor,
    bias: Option<Vec<f32>>,
    k: usize,
    n: usize,
    precision: Precision,
) -> Result<Linear> {
    let w = w.flatten_all()?.to_vec1::<f32>()?;
    Linear::new(w, bias, k, n, precision).ok_or_else(|| {
        candle_core::Error::Msg(format!("this CPU cannot run {} weights", precision.name()))
    })
}

fn write_shape(w: &mut Writer, shape: &[usize]) -> std::io::Result<()> {
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    w.slice(&dims)
}

fn read_shape(r: &mut Reader, shape: &[usize], name: &str) -> std::io::Result<()> {
    let dims: Array<u64> = r.array()?;
    let same = dims.len() == shape.len() && dims.iter().zip(shape).all(|(&a, &b)| a == b as u64);
    check(same, name)
}

/// A table of rows (the token embedding, looked up a few rows at a time: from a mapped file,
/// only the rows used are read).
pub(crate) struct Table {
    cols: usize,
    rows: Rows,
}

/// The table's values: f32 as read from the checkpoint, f16 from a prepared file.
enum Rows {
    F32(Array<f32>),
    F16(Array<u16>),
}

impl Table {
    /// The rows `ids` as a `(ids.len(), cols)` f32 tensor.
    pub(crate) fn rows(&self, ids: &[u32], device: &Device) -> Result<Tensor> {
        let mut out = Vec::with_capacity(ids.len() * self.cols);
        for &id in ids {
            let at = id as usize * self.cols;
            let row = at..at + self.cols;
            let found = match &self.rows {
                Rows::F32(v) => v.get(row).map(|r| out.extend_from_slice(r)),
                Rows::F16(v) => v
                    .get(row)
                    .map(|r| out.extend(r.iter().map(|&h| f32_of_f16(h)))),
            };
            if found.is_none() {
                candle_core::bail!("token {id} is past the embedding table");
            }
        }
        Tensor::from_vec(out, (ids.len(), self.cols), device)
    }
}

/// `x` rounded to the nearest f16, ties to even (overflow to infinity, a NaN stays a NaN).
fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let abs = b & 0x7fff_ffff;
    if abs >= 0x7f80_0000 {
        // Infinity or NaN.
        return sign | 0x7c00 | if abs > 0x7f80_0000 { 0x200 } else { 0 };
    }
    let e = (abs >> 23) as i32 - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // A subnormal f16 (or zero): the mantissa with its implicit bit, shifted.
        if e < -10 {
            return sign;
        }
        let m = (abs & 0x7f_ffff) | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1u32 << shift) - 1);
        let mut v = m >> shift;
        if rest > half || (rest == half && v & 1 == 1) {
            v += 1;
        }
        return sign | v as u16;
    }
    let m = abs & 0x7f_ffff;
    let mut v = ((e as u32) << 10) | (m >> 13);
    let rest = m & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && v & 1 == 1) {
        // May carry into the exponent, up to infinity: that is the right rounding.
        v += 1;
    }
    sign | v as u16
}

/// The f16 `h` as f32 (exact).
fn f32_of_f16(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let e = u32::from((h >> 10) & 0x1f);
    let m = u32::from(h & 0x3ff);
    if e == 0 {
        let v = m as f32 * (1.0 / 16_777_216.0);
        return if sign != 0 { -v } else { v };
    }
    if e == 31 {
        return f32::from_bits(sign | 0x7f80_0000 | (m << 13));
    }
    f32::from_bits(sign | ((e + 112) << 23) | (m << 13))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trips_and_rounds_to_nearest() {
        // Every f16 comes back exactly (NaNs as NaNs).
        for h in 0..=u16::MAX {
            let x = f32_of_f16(h);
            if x.is_nan() {
                assert!(f32_of_f16(f16_bits(x)).is_nan());
            } else {
                assert_eq!(f16_bits(x), h, "{h:#06x} = {x}");
            }
        }
        // Values between two f16s go to the nearer one.
        for &x in &[
            1.0f32 / 3.0,
            -2.7182817,
            65504.0 * 0.9999,
            1e-6,
            6.1e-5,
            0.1,
        ] {
            let h = f16_bits(x);
            let y = f32_of_f16(h);
            let up = f32_of_f16(h + 1);
            assert!((x - y).abs() <= (x - up).abs() || up.is_infinite(), "{x}");
        }
        assert!(f32_of_f16(f16_bits(1e6)).is_infinite());
    }
}
