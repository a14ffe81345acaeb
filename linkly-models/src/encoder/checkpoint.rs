//! The checkpoint's tensors as the encoder reads them: found under any of the usual prefixes,
//! LayerNorms under either naming, linear weights turned to `[in, out]`, and the word
//! embeddings in memory or read row by row from the model file.

use std::collections::{HashMap, HashSet};

use candle_core::{DType, Tensor};

use super::{CResult, err};
use crate::safetensors::{OnDisk, transpose};

/// Finds a tensor under any of the usual prefixes (`bert.`, `roberta.`, none).
pub(super) struct Weights {
    tensors: HashMap<String, Tensor>,
    on_disk: HashMap<String, OnDisk>,
    /// The linear weights read already transposed to `[in, out]`.
    transposed: HashSet<String>,
    prefix: &'static str,
}

/// The word embeddings, `[vocab, hidden]`.
pub(super) enum Words {
    /// Loaded (read through the storage, never copied).
    Memory(Tensor),
    /// Left in the model file; each batch reads the rows it uses.
    Disk(OnDisk),
}

const WORDS: &str = "embeddings.word_embeddings.weight";

impl Weights {
    pub(super) fn new(
        tensors: HashMap<String, Tensor>,
        on_disk: HashMap<String, OnDisk>,
        transposed: HashSet<String>,
    ) -> CResult<Weights> {
        let prefix = ["", "bert.", "roberta.", "model."]
            .into_iter()
            .find(|p| {
                let key = format!("{p}{WORDS}");
                tensors.contains_key(&key) || on_disk.contains_key(&key)
            })
            .ok_or_else(|| err(format!("no {WORDS} tensor")))?;
        Ok(Weights {
            tensors,
            on_disk,
            transposed,
            prefix,
        })
    }

    pub(super) fn words(&mut self) -> CResult<Words> {
        let key = format!("{}{WORDS}", self.prefix);
        match self.on_disk.remove(&key) {
            Some(d) => Ok(Words::Disk(d)),
            None => Ok(Words::Memory(self.get(WORDS)?.contiguous()?)),
        }
    }

    pub(super) fn get(&self, name: &str) -> CResult<Tensor> {
        let key = format!("{}{name}", self.prefix);
        let t = self
            .tensors
            .get(&key)
            .ok_or_else(|| err(format!("tensor {key} is missing")))?;
        t.to_dtype(DType::F32)
    }

    pub(super) fn vec(&self, name: &str, len: usize) -> CResult<Vec<f32>> {
        let v = self.get(name)?.flatten_all()?.to_vec1::<f32>()?;
        if v.len() != len {
            return Err(err(format!("{name}: {} values, expected {len}", v.len())));
        }
        Ok(v)
    }

    /// A LayerNorm's scale and shift (`weight`/`bias`, or the old `gamma`/`beta`).
    pub(super) fn norm(&self, name: &str, len: usize) -> CResult<(Vec<f32>, Vec<f32>)> {
        match self.vec(&format!("{name}.weight"), len) {
            Ok(w) => Ok((w, self.vec(&format!("{name}.bias"), len)?)),
            Err(_) => Ok((
                self.vec(&format!("{name}.gamma"), len)?,
                self.vec(&format!("{name}.beta"), len)?,
            )),
        }
    }

    /// The weights of the linear layers `names` (each stored `[output, input]`) as `[input,
    /// output]`, set side by side: `[input, names.len() · output]`, contiguous. Weights the
    /// loader read transposed are used as they are; others (a file candle loaded) are
    /// transposed here.
    pub(super) fn linears(&self, names: &[&str], input: usize, output: usize) -> CResult<Tensor> {
        let mut parts = Vec::with_capacity(names.len());
        for name in names {
            let key = format!("{}{name}.weight", self.prefix);
            let ready = self.transposed.contains(&key);
            let w = self.get(&format!("{name}.weight"))?.contiguous()?;
            let stored = if ready {
                [input, output]
            } else {
                [output, input]
            };
            if w.dims() != stored {
                return Err(err(format!(
                    "{name}.weight has shape {:?}, expected {stored:?}",
                    w.dims()
                )));
            }
            parts.push(if ready {
                w
            } else {
                let values = w.flatten_all()?.to_vec1::<f32>()?;
                Tensor::from_vec(
                    transpose(&values, output, input),
                    (input, output),
                    &candle_core::Device::Cpu,
                )?
            });
        }
        match parts.len() {
            1 => Ok(parts.remove(0)),
            _ => Tensor::cat(&parts, 1)?.contiguous(),
        }
    }
}

/// The rows of `ids` (clamped to the vocabulary), each read once: the rows side by side, and
/// each id's index among them.
pub(super) fn gather_rows(
    d: &OnDisk,
    ids: &[u32],
    vocab: usize,
    h: usize,
) -> CResult<(Vec<f32>, Vec<u32>)> {
    let mut slot: rustc_hash::FxHashMap<u32, u32> = Default::default();
    let mut table = Vec::new();
    let mut local = Vec::with_capacity(ids.len());
    for &id in ids {
        let id = id.min(vocab.saturating_sub(1) as u32);
        let next = slot.len() as u32;
        let s = *slot.entry(id).or_insert(next);
        if s == next {
            table.resize(table.len() + h, 0.0);
            d.read_row(id as usize, &mut table[s as usize * h..])
                .map_err(|e| err(format!("reading word embeddings from the model file: {e}")))?;
        }
        local.push(s);
    }
    Ok((table, local))
}
