//! Sentence embeddings with candle: a BERT-family encoder read from a sentence-transformers
//! folder (`config.json`, `model.safetensors`, `tokenizer.json`), pooled as its
//! `1_Pooling/config.json` says (mean by default) and L2-normalised when `modules.json` lists a
//! `Normalize` module (or says nothing). Two architectures, one closed enum: `bert`
//! (all-MiniLM-L6-v2, multilingual-e5-small, paraphrase-multilingual-MiniLM-L12-v2) and
//! `xlm-roberta` (multilingual-e5-base/large, bge-m3).

mod load;
mod precision;
mod prepared_cache;
mod tokenizer;

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_transformers::models::{bert, xlm_roberta};

pub(crate) use self::load::MODEL_FILES;
pub(crate) use self::precision::Engine;
pub use self::prepared_cache::PreparedState;
pub(crate) use self::prepared_cache::prepared_state;

use self::tokenizer::TextTokenizer;
use crate::encoder::FastEncoder;
use crate::windows::{self, Window};
use crate::{Error, ModelError, Result};

/// Whether a text is a query or a passage (models such as E5 embed them with different prefixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    Query,
    Passage,
}

/// How token vectors become one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pooling {
    Mean,
    Cls,
}

enum Encoder {
    /// The CPU-tuned forward pass (the default).
    Fast(FastEncoder),
    /// candle-transformers' models: the reference, and the path for configurations the fast
    /// one does not cover.
    Bert(bert::BertModel),
    XlmRoberta(xlm_roberta::XLMRobertaModel),
}

/// A loaded embedding model.
pub(crate) struct Embedder {
    encoder: Encoder,
    tokenizer: TextTokenizer,
    pooling: Pooling,
    normalize: bool,
    query_prefix: String,
    passage_prefix: String,
    dim: usize,
    /// Tokens a sequence may hold; longer texts run as windows (`windows.rs`).
    max_seq: usize,
    /// The padding token's id.
    pad_id: u32,
    device: Device,
    /// Whether the linear layers came prepared from the model folder
    /// ([`Cache`](crate::prepared::Cache)).
    pub(crate) prepared: bool,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dim", &self.dim)
            .field("pooling", &self.pooling)
            .field("normalize", &self.normalize)
            .finish()
    }
}

/// Padded tokens (sequences × longest) one forward pass takes at most.
const WINDOW_BUDGET: usize = 16_384;

/// Rows (sequences × tokens) up to which a forward pass runs inside one `rayon::scope`.
const SMALL_ROWS: usize = 256;

fn model_error(dir: &Path, what: impl std::fmt::Display) -> Error {
    ModelError::Load {
        dir: dir.to_path_buf(),
        reason: what.to_string(),
    }
    .into()
}

impl Embedder {
    /// The vector dimension.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// Embeds one batch of texts (padded to the longest of the batch). A text longer than the
    /// model's sequence length runs as windows whose mean-pooled vectors are averaged
    /// (`windows.rs`); with CLS pooling it is truncated.
    pub(crate) fn embed(&self, texts: &[&str], kind: TextKind) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = match kind {
            TextKind::Query => &self.query_prefix,
            TextKind::Passage => &self.passage_prefix,
        };
        let inputs: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
        let encodings = self
            .tokenizer
            .ids(inputs)
            .map_err(|e| ModelError::Inference {
                stage: "tokenizing",
                reason: e.to_string(),
            })?;
        let whole = self.pooling == Pooling::Mean;
        let windows: Vec<Window> = encodings
            .iter()
            .enumerate()
            .flat_map(|(i, e)| windows::split(i, e, self.max_seq, whole))
            .collect();
        let mut pooled = Vec::with_capacity(windows.len());
        for group in windows::groups(&windows, WINDOW_BUDGET) {
            let group = &windows[group];
            let n = group.len();
            let len = group.iter().map(|w| w.ids.len()).max().unwrap_or(0);
            let mut ids = Vec::with_capacity(n * len);
            let mut mask = Vec::with_capacity(n * len);
            for w in group {
                ids.extend_from_slice(&w.ids);
                ids.resize(ids.len() + len - w.ids.len(), self.pad_id);
                mask.extend(std::iter::repeat_n(1u32, w.ids.len()));
                mask.resize(mask.len() + len - w.ids.len(), 0);
            }
            pooled.extend(self.forward(ids, mask, n, len).map_err(|e| {
                Error::from(ModelError::Inference {
                    stage: "embedding",
                    reason: e.to_string(),
                })
            })?);
        }
        Ok(windows::combine(
            &windows,
            &pooled,
            encodings.len(),
            self.dim,
            self.normalize,
        ))
    }

    fn forward(
        &self,
        ids: Vec<u32>,
        mask: Vec<u32>,
        n: usize,
        len: usize,
    ) -> candle_core::Result<Vec<Vec<f32>>> {
        let hidden = match &self.encoder {
            // A query (a few dozen rows) on one of rayon's threads: the encoder's parallel
            // steps (some 50) then start there directly instead of each waking the pool and
            // putting this thread to sleep until it is done. Not a batch: its steps are long
            // enough not to notice, and its large buffers would then be taken from the pool
            // threads' own malloc arenas (+100 MB peak for `linkly index`, measured).
            Encoder::Fast(m) if n * len <= SMALL_ROWS => {
                rayon::scope(|_| m.forward(&ids, &mask, n, len))?
            }
            Encoder::Fast(m) => m.forward(&ids, &mask, n, len)?,
            Encoder::Bert(_) | Encoder::XlmRoberta(_) => {
                let ids = Tensor::from_vec(ids.clone(), (n, len), &self.device)?;
                let mask = Tensor::from_vec(mask.clone(), (n, len), &self.device)?;
                let types = ids.zeros_like()?;
                match &self.encoder {
                    Encoder::Bert(m) => m.forward(&ids, &types, Some(&mask))?,
                    Encoder::XlmRoberta(m) => m.forward(&ids, &mask, &types, None, None, None)?,
                    Encoder::Fast(_) => unreachable!("matched above"),
                }
            }
        };
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let pooled = match self.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean => {
                let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
                let sum = hidden.broadcast_mul(&m)?.sum(1)?;
                let count = m.sum(1)?.clamp(1e-9, f64::MAX)?;
                sum.broadcast_div(&count)?
            }
        };
        // Normalised by `windows::combine`, once the windows of a long text are averaged.
        pooled.to_vec2::<f32>()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The multilingual loading paths, proved on tiny random-weight models of the same
    //! architectures as the real ones (the real ones cannot be downloaded here): BERT with an
    //! XLM-R SentencePiece (Unigram) vocabulary, as multilingual-e5-small and
    //! paraphrase-multilingual-MiniLM-L12-v2 are, and XLM-RoBERTa, as multilingual-e5-base is.

    use std::collections::{HashMap, HashSet};
    use std::path::PathBuf;

    use candle_nn::{VarBuilder, VarMap};
    use serde_json::json;

    use super::load::{fast_config, fast_placement};
    use super::prepared_cache::prepared_cache;
    use super::*;
    use crate::calibration::{self, Fingerprint};
    use crate::encoder::Precision;
    use crate::prepared::Cache;

    /// A Unigram `tokenizer.json` shaped like XLM-R's: Metaspace pre-tokenizer, `<s> … </s>`
    /// template, pieces for French, Spanish, Chinese and Japanese.
    pub(crate) fn unigram_tokenizer() -> (serde_json::Value, usize) {
        let mut vocab = vec![
            json!(["<s>", 0.0]),
            json!(["<pad>", 0.0]),
            json!(["</s>", 0.0]),
            json!(["<unk>", 0.0]),
        ];
        let pieces = [
            "▁",
            "▁le",
            "▁chat",
            "▁dort",
            "▁el",
            "▁gato",
            "▁duerme",
            "▁the",
            "▁cat",
            "▁sleeps",
            "▁query",
            ":",
            "▁passage",
            "猫",
            "が",
            "寝",
            "て",
            "いる",
            "▁猫",
            "在",
            "睡",
            "觉",
            "s",
            "e",
            "a",
            "t",
            "o",
            "r",
            "l",
            "d",
            "m",
            "u",
            "h",
            "c",
            "p",
            "g",
            "y",
            "q",
        ];
        for (i, p) in pieces.iter().enumerate() {
            vocab.push(json!([p, -1.0 - i as f64 / 10.0]));
        }
        let n = vocab.len();
        let special = |t: &str, id: usize| json!({"id": id, "content": t, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true});
        let tok = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [special("<s>", 0), special("<pad>", 1), special("</s>", 2), special("<unk>", 3)],
            "normalizer": {"type": "NFKC"},
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
            "post_processor": {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                "special_tokens": {
                    "<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                    "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}
                }
            },
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true},
            "model": {"type": "Unigram", "unk_id": 3, "vocab": vocab, "byte_fallback": false}
        });
        (tok, n)
    }

    fn write_model(dir: &Path, model_type: &str) -> usize {
        let (tokenizer, vocab) = unigram_tokenizer();
        fs_err::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
        let config = json!({
            "model_type": model_type,
            "architectures": [if model_type == "bert" { "BertModel" } else { "XLMRobertaModel" }],
            "vocab_size": vocab,
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 64,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": 64,
            "type_vocab_size": if model_type == "bert" { 2 } else { 1 },
            "initializer_range": 0.02,
            "layer_norm_eps": 1e-12,
            "pad_token_id": 1,
            "position_embedding_type": "absolute",
            "tokenizer_class": "XLMRobertaTokenizer"
        });
        fs_err::write(dir.join("config.json"), config.to_string()).unwrap();
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
        if model_type == "bert" {
            let cfg: bert::Config = serde_json::from_value(config).unwrap();
            bert::BertModel::load(vb, &cfg).unwrap();
        } else {
            let cfg: xlm_roberta::Config = serde_json::from_value(config).unwrap();
            xlm_roberta::XLMRobertaModel::new(&cfg, vb.pp("roberta")).unwrap();
        }
        varmap.save(dir.join("model.safetensors")).unwrap();
        fs_err::create_dir_all(dir.join("1_Pooling")).unwrap();
        fs_err::write(
            dir.join("1_Pooling/config.json"),
            r#"{"word_embedding_dimension": 32, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true}"#,
        )
        .unwrap();
        fs_err::write(
            dir.join("modules.json"),
            r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#,
        )
        .unwrap();
        vocab
    }

    fn check_multilingual(model_type: &str) {
        let tmp = tempfile::tempdir().unwrap();
        write_model(tmp.path(), model_type);
        let e = Embedder::load_with(
            tmp.path(),
            "intfloat/multilingual-e5-small",
            Engine::Fast,
            None,
        )
        .unwrap();
        assert_eq!(e.dim(), 32);
        assert_eq!(
            (e.query_prefix.as_str(), e.passage_prefix.as_str()),
            ("query: ", "passage: ")
        );
        // The SentencePiece vocabulary cuts every language into known pieces.
        let enc = e
            .tokenizer
            .ids(vec!["le chat dort 猫が寝ている".to_string()])
            .unwrap();
        assert!(!enc[0].contains(&3), "no <unk>: {:?}", enc[0]);
        let texts = [
            "le chat dort",
            "el gato duerme",
            "猫が寝ている",
            "猫在睡觉 the cat sleeps",
        ];
        let v = e.embed(&texts, TextKind::Passage).unwrap();
        assert_eq!(v.len(), 4);
        for x in &v {
            assert_eq!(x.len(), 32);
            let norm: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "unit length: {norm}");
        }
        assert_ne!(v[0], v[2]);
        // Batched and single embeddings agree (padding is masked out of the mean).
        let single = e.embed(&texts[..1], TextKind::Passage).unwrap();
        let cos: f32 = single[0].iter().zip(&v[0]).map(|(a, b)| a * b).sum();
        assert!(cos > 0.999, "batch vs single: {cos}");
        // Queries carry their prefix, so they embed differently.
        let q = e.embed(&texts[..1], TextKind::Query).unwrap();
        assert_ne!(q[0], single[0]);
        // The fast encoder computes what candle-transformers' model computes.
        let reference = Embedder::load_with(
            tmp.path(),
            "intfloat/multilingual-e5-small",
            Engine::Reference,
            None,
        )
        .unwrap();
        assert!(matches!(e.encoder, Encoder::Fast(_)));
        assert!(!matches!(reference.encoder, Encoder::Fast(_)));
        let expected = reference.embed(&texts, TextKind::Passage).unwrap();
        // In f32, to float rounding; the default (bf16 on AMX, int16 on AVX2) within the
        // 0.999 its rule keeps (this tiny model's random weights lose more to bf16's rounding
        // than a trained one: 0.99989 measured, where all-MiniLM-L6-v2 keeps 0.9999).
        let f32_model = Embedder::load_with(
            tmp.path(),
            "intfloat/multilingual-e5-small",
            Engine::FastF32,
            None,
        )
        .unwrap();
        assert_agree(
            &f32_model.embed(&texts, TextKind::Passage).unwrap(),
            &expected,
        );
        for (x, y) in v.iter().zip(&expected) {
            let cos: f32 = x.iter().zip(y).map(|(p, q)| p * q).sum();
            assert!(cos > 0.999, "default engine against the reference: {cos}");
        }
    }

    /// Every pair of vectors points the same way (cosine ≥ 0.99999) and differs by little.
    fn assert_agree(a: &[Vec<f32>], b: &[Vec<f32>]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            let cos: f32 = x.iter().zip(y).map(|(p, q)| p * q).sum();
            let diff = x
                .iter()
                .zip(y)
                .map(|(p, q)| (p - q).abs())
                .fold(0.0f32, f32::max);
            assert!(
                cos > 0.99999 && diff < 1e-3,
                "cosine {cos}, largest difference {diff}"
            );
        }
    }

    /// The real test model (all-MiniLM-L6-v2), from `cargo xtask test-model`.
    pub(crate) fn test_model() -> PathBuf {
        crate::test_inputs::TestInput::MiniLm.path()
    }

    #[test]
    fn fast_encoder_matches_candle_transformers_on_the_real_model() {
        let dir = test_model();
        let fast = Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::FastF32, None).unwrap();
        let reference =
            Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::Reference, None).unwrap();
        assert!(matches!(fast.encoder, Encoder::Fast(_)));
        let long =
            "Randomised trials of vitamin D supplementation and fracture risk in older adults. "
                .repeat(30);
        // Sequences of very different lengths in one batch (padding), one over the 256-token limit.
        let texts = [
            "The cat sits on the mat.",
            "Quarterly revenue grew by 12 percent, driven by subscriptions in Europe and Asia.",
            long.as_str(),
            "x",
        ];
        for kind in [TextKind::Passage, TextKind::Query] {
            assert_agree(
                &fast.embed(&texts, kind).unwrap(),
                &reference.embed(&texts, kind).unwrap(),
            );
        }
    }

    /// Texts of every length (one token to the 256-token limit, a padded batch) in the five
    /// languages.
    fn precision_texts() -> Vec<String> {
        let long = "Serum 25-hydroxyvitamin D concentrations were measured in 1,204 adults; \
                    fracture incidence fell by 18% (95% CI 4–30%) over five years. "
            .repeat(12);
        [
            "x",
            "The cat sits on the mat.",
            "La réunion du conseil d'administration est reportée à jeudi prochain.",
            "El informe anual describe la jerarquía de componentes del sistema.",
            "本研究比较了两种治疗方法对老年患者骨折风险的影响。",
            "新しいコンポーネントの設計レビューは来週の月曜日に行われます。",
            long.as_str(),
        ]
        .map(String::from)
        .to_vec()
    }

    /// Loads the test model with `engine`: when `supported`, it runs `precision` and every
    /// vector of [`precision_texts`] (passages and queries) is within `least` of the f32 one
    /// and not equal to it; otherwise it falls back to f32.
    fn assert_close_to_f32(engine: Engine, precision: Precision, supported: bool, least: f32) {
        let dir = test_model();
        let f32_model =
            Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::FastF32, None).unwrap();
        assert_eq!(f32_model.precision(), Some(Precision::F32));
        let model = Embedder::load_with(&dir, "all-MiniLM-L6-v2", engine, None).unwrap();
        if !supported {
            assert_eq!(model.precision(), Some(Precision::F32));
            return;
        }
        assert_eq!(model.precision(), Some(precision));
        let texts = precision_texts();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        for kind in [TextKind::Passage, TextKind::Query] {
            let a = f32_model.embed(&texts, kind).unwrap();
            let b = model.embed(&texts, kind).unwrap();
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                let cos: f32 = x.iter().zip(y).map(|(p, q)| p * q).sum();
                assert!(
                    cos >= least,
                    "text {i}: cosine {cos} between {precision:?} and f32"
                );
                assert!(x != y, "text {i}: {precision:?} gave the f32 vector");
            }
        }
    }

    /// The linear layers prepared at the first load (f32, and int16, int8 or bf16 as this CPU
    /// runs them) are read back by the next one: the same vectors, bit for bit. A cache file cut
    /// short, or one made from other weights, is not used, and is written again.
    #[test]
    fn prepared_linear_layers_are_read_back_and_a_bad_file_is_made_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = model_copy(tmp.path());
        let texts = precision_texts();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut tried = 0;
        for (engine, precision, runs) in [
            (Engine::FastF32, Precision::F32, true),
            (
                Engine::FastInt16,
                Precision::Int16,
                crate::int16::supported(),
            ),
            (Engine::FastInt8, Precision::Int8, crate::int8::supported()),
            (
                Engine::FastBf16Amx,
                Precision::Bf16,
                crate::amx::supported(),
            ),
            (
                Engine::FastBf16Avx512,
                Precision::Bf16Avx512,
                crate::bf16::supported(),
            ),
        ] {
            if !runs {
                continue;
            }
            tried += 1;
            let file = dir
                .join(".linkly")
                .join(format!("prepared-{}.bin", precision.name()));
            let first = Embedder::load_with(&dir, "all-MiniLM-L6-v2", engine, None).unwrap();
            assert!(!first.prepared);
            assert_eq!(first.precision(), Some(precision));
            let full = fs_err::metadata(&file).unwrap().len();
            let expected = first.embed(&texts, TextKind::Passage).unwrap();

            let second = Embedder::load_with(&dir, "all-MiniLM-L6-v2", engine, None).unwrap();
            assert!(
                second.prepared,
                "{precision:?}: the prepared file was not read"
            );
            assert_eq!(second.precision(), Some(precision));
            assert_eq!(second.embed(&texts, TextKind::Passage).unwrap(), expected);

            // Cut short: ignored, the weights prepared again, the file whole again.
            let bytes = fs_err::read(&file).unwrap();
            fs_err::write(&file, &bytes[..bytes.len() / 2]).unwrap();
            let third = Embedder::load_with(&dir, "all-MiniLM-L6-v2", engine, None).unwrap();
            assert!(!third.prepared);
            assert_eq!(third.embed(&texts, TextKind::Passage).unwrap(), expected);
            assert_eq!(fs_err::metadata(&file).unwrap().len(), full);

            // Made from other weights (the model file's size differs): ignored.
            let mut other = bytes.clone();
            // The key's bytes start after the magic, the version and the key's length, at the
            // next multiple of 64.
            let key_at = 64;
            other[key_at + precision.name().len() + 1] ^= 1;
            fs_err::write(&file, &other).unwrap();
            let fourth = Embedder::load_with(&dir, "all-MiniLM-L6-v2", engine, None).unwrap();
            assert!(!fourth.prepared);
            assert_eq!(fourth.embed(&texts, TextKind::Passage).unwrap(), expected);
        }
        assert!(
            tried > 1 || !cfg!(target_arch = "x86_64"),
            "only f32 prepared here"
        );
    }

    /// The prepared file of a model with a Unigram vocabulary (XLM-R's kind, the default
    /// model's) holds the tokenizer too: the second load reads neither the linear weights nor
    /// `tokenizer.json`'s vocabulary, and embeds exactly as the first. A file cut short, of
    /// another format version, made for another CPU, or with a damaged byte is never used:
    /// the load prepares it again, and the file is whole and right afterwards.
    #[test]
    fn the_prepared_file_holds_the_vocabulary_and_a_bad_one_is_made_again() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("model");
        fs_err::create_dir_all(&dir).unwrap();
        write_model(&dir, "bert");
        let name = "intfloat/multilingual-e5-small";
        let texts = [
            "le chat dort",
            "猫が寝ている",
            "el gato duerme",
            "passage <s> x",
        ];
        let load = || Embedder::load_with(&dir, name, Engine::FastF32, None).unwrap();
        let cache = prepared_cache(&dir, &dir, Precision::F32).unwrap();
        let first = load();
        assert!(!first.prepared && !first.tokenizer.is_mapped());
        let expected = first.embed(&texts, TextKind::Passage).unwrap();
        let ids = first
            .tokenizer
            .ids(texts.map(String::from).to_vec())
            .unwrap();
        assert_eq!(cache.verify(), Ok(()));
        let good = fs_err::read(cache.path()).unwrap();

        let second = load();
        assert!(second.prepared && second.tokenizer.is_mapped());
        assert_eq!(
            second
                .tokenizer
                .ids(texts.map(String::from).to_vec())
                .unwrap(),
            ids
        );
        // The same ids and the same weights, bit for bit, through the same kernels.
        assert_eq!(second.embed(&texts, TextKind::Passage).unwrap(), expected);

        let version_at = 8;
        let checked_at = 64; // the key, inside the part every load checksums
        let bad: [(&str, Vec<u8>); 4] = [
            ("cut short", good[..good.len() - 100].to_vec()),
            ("another version", {
                let mut b = good.clone();
                b[version_at] ^= 1;
                b
            }),
            ("a damaged byte", {
                let mut b = good.clone();
                b[checked_at + 3] ^= 0x20;
                b
            }),
            ("another CPU", {
                // A whole, well-made file, but made for another CPU.
                let other = Cache::at(
                    cache.path().with_extension("other"),
                    cache_key(&cache).replace(" cpu ", " cpu OtherVendor "),
                );
                other.try_save(|w| w.u64(0)).unwrap();
                fs_err::read(other.path()).unwrap()
            }),
        ];
        for (what, bytes) in bad {
            fs_err::write(cache.path(), &bytes).unwrap();
            assert!(cache.verify().is_err(), "{what}: verified");
            let again = load();
            assert!(
                !again.prepared && !again.tokenizer.is_mapped(),
                "{what}: used"
            );
            assert_eq!(
                again.embed(&texts, TextKind::Passage).unwrap(),
                expected,
                "{what}"
            );
            assert_eq!(cache.verify(), Ok(()), "{what}: not made again");
            assert!(load().prepared, "{what}: the file made again is not read");
        }

        // A damaged byte in the vocabulary's table (the part read a row at a time, which a
        // load does not checksum whole) is found by `verify`, as `linkly model status` runs it.
        let mut b = good.clone();
        let at = b.len() - 10;
        b[at] ^= 0x20;
        fs_err::write(cache.path(), &b).unwrap();
        assert!(
            cache.verify().unwrap_err().contains("row-read part"),
            "{:?}",
            cache.verify()
        );
    }

    /// The key a cache was made with, read back from its file.
    fn cache_key(cache: &Cache) -> String {
        let bytes = fs_err::read(cache.path()).unwrap();
        let len = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
        String::from_utf8(bytes[64..64 + len].to_vec()).unwrap()
    }

    /// A model folder the process cannot write to: the prepared file goes to the cache folder
    /// given, and the next load reads it from there; the calibration too.
    #[test]
    fn a_read_only_model_folder_is_prepared_in_the_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("model");
        fs_err::create_dir_all(&dir).unwrap();
        write_model(&dir, "bert");
        // `.linkly` a file: nothing can be written under it (as with a read-only folder, which
        // a test running as root could still write to).
        fs_err::write(dir.join(".linkly"), b"").unwrap();
        let cache_dir = tmp
            .path()
            .join("data/cache/models/intfloat--multilingual-e5-small");
        let name = "intfloat/multilingual-e5-small";
        let first = Embedder::load_with(&dir, name, Engine::Fast, Some(&cache_dir)).unwrap();
        assert!(!first.prepared);
        let precision = first.precision().unwrap();
        let cached = prepared_cache(&cache_dir, &dir, precision).unwrap();
        assert_eq!(cached.verify(), Ok(()));
        assert!(cached.path().starts_with(&cache_dir));
        assert!(calibration::file(&cache_dir).is_file());
        let second = Embedder::load_with(&dir, name, Engine::Fast, Some(&cache_dir)).unwrap();
        assert!(second.prepared && second.tokenizer.is_mapped());
        assert_eq!(second.precision(), Some(precision));
        assert_eq!(
            second.embed(&["le chat"], TextKind::Query).unwrap(),
            first.embed(&["le chat"], TextKind::Query).unwrap()
        );
    }

    /// The default engine measures the precisions at the first load and keeps the choice
    /// beside the model; the next load reads it (and the chosen precision's prepared weights)
    /// instead of measuring; a choice made on another CPU is measured again.
    #[test]
    fn the_default_engine_calibrates_once_per_cpu() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = model_copy(tmp.path());
        let file = calibration::file(&dir);
        assert!(!file.exists());
        let first = Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::Fast, None).unwrap();
        let c = calibration::read(&dir).expect("calibration.json written");
        assert_eq!(c.fingerprint, Fingerprint::here());
        assert_eq!(
            first.precision().map(Precision::name),
            Some(c.chosen.as_str())
        );
        let chosen = c.paths.iter().find(|p| p.precision == c.chosen).unwrap();
        assert!(chosen.kept && chosen.least_cosine >= calibration::LEAST_COSINE);
        // Every precision this CPU runs was measured, and none faster was kept.
        let runs = [
            (Precision::F32, true),
            (Precision::Int16, crate::int16::supported()),
            (Precision::Int8, crate::int8::supported()),
            (Precision::Bf16Avx512, crate::bf16::supported()),
            (Precision::Bf16, crate::amx::supported()),
        ];
        for (p, supported) in runs {
            assert_eq!(
                c.paths.iter().any(|f| f.precision == p.name()),
                supported,
                "{p:?} measured where it runs"
            );
        }
        assert!(c.paths.iter().filter(|p| p.kept).all(|p| p.ms >= chosen.ms));
        let texts = precision_texts();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let expected = first.embed(&texts, TextKind::Passage).unwrap();

        // Read back, not measured again; the chosen precision's weights come prepared.
        let bytes = fs_err::read(&file).unwrap();
        let second = Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::Fast, None).unwrap();
        assert_eq!(fs_err::read(&file).unwrap(), bytes);
        assert_eq!(second.precision(), first.precision());
        assert!(second.prepared);
        assert_eq!(second.embed(&texts, TextKind::Passage).unwrap(), expected);

        // Measured on another CPU: measured again here.
        let mut other = c.clone();
        other.fingerprint.model = "another CPU".into();
        other.chosen = "int8".into();
        for p in &mut other.paths {
            p.ms = 0.5;
        }
        calibration::save(&dir, &other).unwrap();
        let third = Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::Fast, None).unwrap();
        let again = calibration::read(&dir).unwrap();
        assert_eq!(again.fingerprint, Fingerprint::here());
        assert!(again.paths.iter().all(|p| p.ms != 0.5));
        assert_eq!(
            third.precision().map(Precision::name),
            Some(again.chosen.as_str())
        );
        // A forced engine neither reads nor writes it.
        fs_err::remove_file(&file).unwrap();
        Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::FastF32, None).unwrap();
        assert!(!file.exists());
    }

    /// A precision whose vectors break the rule is never chosen, however fast: here int16's
    /// vectors spoilt on purpose, and int8's as they are (0.995 to 0.998 on this model).
    #[test]
    fn a_path_that_breaks_the_quality_rule_is_never_chosen() {
        if !crate::int16::supported() {
            return;
        }
        let dir = test_model();
        let mut model =
            Embedder::load_with(&dir, "all-MiniLM-L6-v2", Engine::FastF32, None).unwrap();
        let reverse = |v: &mut Vec<Vec<f32>>| v.iter_mut().for_each(|x| x.reverse());
        let c = model
            .calibrate_among(
                &dir.join("model.safetensors"),
                Fingerprint::here(),
                &[Precision::Int16, Precision::Int8],
                Some((Precision::Int16, &reverse)),
            )
            .unwrap();
        let int16 = c.paths.iter().find(|p| p.precision == "int16").unwrap();
        assert!(!int16.kept && int16.least_cosine < 0.9, "{int16:?}");
        if let Some(int8) = c.paths.iter().find(|p| p.precision == "int8") {
            assert!(
                !int8.kept && int8.least_cosine < calibration::LEAST_COSINE,
                "{int8:?}"
            );
        }
        assert_eq!(c.chosen, "f32");
        assert_eq!(model.precision(), Some(Precision::F32));
    }

    /// A copy of the test model in `tmp/model`, without what an earlier load kept beside it
    /// (`.linkly`), for the tests that write there.
    fn model_copy(tmp: &Path) -> PathBuf {
        let dir = tmp.join("model");
        fs_err::create_dir_all(&dir).unwrap();
        copy_dir(&test_model(), &dir);
        dir
    }

    fn copy_dir(from: &Path, to: &Path) {
        for entry in fs_err::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                if entry.file_name() != ".linkly" {
                    fs_err::create_dir_all(&target).unwrap();
                    copy_dir(&entry.path(), &target);
                }
            } else {
                fs_err::copy(entry.path(), &target).unwrap();
            }
        }
    }

    /// The int8 path on the real model: each vector within a cosine of 0.99 of the f32 one
    /// (measured: 0.995 to 0.998; 0.999 is not reached, which is why int8 is not the default).
    #[test]
    fn int8_vectors_stay_close_to_f32_on_the_real_model() {
        assert_close_to_f32(
            Engine::FastInt8,
            Precision::Int8,
            crate::int8::supported(),
            0.99,
        );
    }

    /// The int16 path on the real model: each vector within a cosine of 0.9999 of the f32 one
    /// (the calibration's rule is 0.999).
    #[test]
    fn int16_vectors_match_f32_on_the_real_model() {
        assert_close_to_f32(
            Engine::FastInt16,
            Precision::Int16,
            crate::int16::supported(),
            0.9999,
        );
    }

    /// The bf16 path on AMX tiles, on the real model: each vector within a cosine of 0.9999
    /// of the f32 one (the default's rule is 0.999; it is the default where it runs).
    #[test]
    fn bf16_vectors_match_f32_on_the_real_model() {
        assert_close_to_f32(
            Engine::FastBf16Amx,
            Precision::Bf16,
            crate::amx::supported(),
            0.9999,
        );
    }

    /// The bf16 path on AVX-512 BF16, on the real model: each vector within a cosine of 0.9999
    /// of the f32 one, as on AMX; `LINKLY_EMBED_ENGINE=bf16` takes it where AMX is absent.
    #[test]
    fn avx512_bf16_vectors_match_f32_on_the_real_model() {
        assert_close_to_f32(
            Engine::FastBf16Avx512,
            Precision::Bf16Avx512,
            crate::bf16::supported(),
            0.9999,
        );
        if !crate::amx::supported() {
            assert_close_to_f32(
                Engine::FastBf16,
                Precision::Bf16Avx512,
                crate::bf16::supported(),
                0.9999,
            );
        }
    }

    /// The encoder built from the loader's layout (linear weights read transposed, words left
    /// in the file) computes what it computes from candle's tensors as stored (the path of a
    /// file candle loads, f16 or bf16).
    #[test]
    fn both_weight_layouts_give_the_same_encoder() {
        let dir = test_model();
        let config: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(dir.join("config.json")).unwrap())
                .unwrap();
        let cfg = fast_config(&config, "bert").unwrap();
        let weights = dir.join("model.safetensors");
        let loaded = crate::safetensors::load_f32(&weights, fast_placement)
            .unwrap()
            .unwrap();
        let ours = FastEncoder::new(
            loaded.tensors,
            loaded.on_disk,
            loaded.transposed,
            cfg.clone(),
            None,
        )
        .unwrap();
        let stored = candle_core::safetensors::load(&weights, &Device::Cpu).unwrap();
        let plain = FastEncoder::new(stored, HashMap::new(), HashSet::new(), cfg, None).unwrap();
        let (ids, mask) = (
            [101u32, 7592, 2088, 102, 101, 2047, 102, 0],
            [1u32, 1, 1, 1, 1, 1, 1, 0],
        );
        let a = ours
            .forward(&ids, &mask, 2, 4)
            .unwrap()
            .flatten_all()
            .unwrap();
        let b = plain
            .forward(&ids, &mask, 2, 4)
            .unwrap()
            .flatten_all()
            .unwrap();
        assert_eq!(a.to_vec1::<f32>().unwrap(), b.to_vec1::<f32>().unwrap());
    }

    #[test]
    fn tiny_bert_with_sentencepiece_vocabulary_embeds() {
        check_multilingual("bert");
    }

    #[test]
    fn tiny_xlm_roberta_embeds() {
        check_multilingual("xlm-roberta");
    }

    #[test]
    fn missing_or_broken_files_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let err = Embedder::load(tmp.path(), "x", None).unwrap_err();
        assert!(err.to_string().contains("config.json is missing"), "{err}");
        write_model(tmp.path(), "bert");
        fs_err::write(tmp.path().join("model.safetensors"), b"not a model").unwrap();
        let err = Embedder::load(tmp.path(), "x", None).unwrap_err();
        assert!(err.to_string().contains("model.safetensors"), "{err}");
    }
}
