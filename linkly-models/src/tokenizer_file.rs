//! Reads a model's `tokenizer.json` in one pass over its text.
//!
//! `tokenizers`' own reader takes the `model` object through two intermediate trees (serde's
//! buffered content, then a `serde_json::Value` of the whole vocabulary) before it builds the
//! model's map: about a third of a cold `linkly search`, which loads the model on every call.
//! Here the vocabulary of a WordPiece (BERT) or Unigram (XLM-R) model is read straight into
//! the model, and everything else (normaliser, pre-tokeniser, post-processor, decoder, added
//! tokens) goes through `tokenizers` as before. Anything this reader does not know (another
//! model type, an unknown field) sends the whole file through `tokenizers` instead, so the
//! result is always the tokenizer `Tokenizer::from_file` would give.

use std::fmt;
use std::path::Path;

use ahash::AHashMap;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use tokenizers::models::ModelWrapper;
use tokenizers::models::unigram::Unigram;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::{
    AddedToken, DecoderWrapper, NormalizerWrapper, PostProcessorWrapper, PreTokenizerWrapper,
    Tokenizer, TokenizerImpl,
};

use crate::unigram::MappedUnigram;

/// A tokenizer whose model is a Unigram vocabulary left in the prepared file.
pub(crate) type MappedTokenizer = TokenizerImpl<
    MappedUnigram,
    NormalizerWrapper,
    PreTokenizerWrapper,
    PostProcessorWrapper,
    DecoderWrapper,
>;

/// What a prepared file keeps of a Unigram `tokenizer.json`: its vocabulary, and the rest of
/// the file (normaliser, pre-tokeniser, post-processor, decoder, added tokens) as JSON.
pub(crate) struct UnigramParts {
    pub(crate) pieces: Vec<(String, f64)>,
    pub(crate) unk_id: Option<usize>,
    /// `{"tokenizer": <the file with a one-word stand-in model>, "added": [<added tokens>]}`.
    pub(crate) rest: String,
}

/// Reads `path`: the fast way when it can, else through `tokenizers`.
#[cfg(test)]
pub(crate) fn read(path: &Path) -> tokenizers::Result<Tokenizer> {
    Ok(read_with_parts(path)?.0)
}

/// [`read`], with what a prepared file needs of a Unigram tokenizer (`None` for another
/// model, or one with byte fallback, which [`MappedUnigram`] does not do).
pub(crate) fn read_with_parts(
    path: &Path,
) -> tokenizers::Result<(Tokenizer, Option<UnigramParts>)> {
    let text = std::fs::read_to_string(path)?;
    match fast(&text) {
        Ok(t) => Ok(t),
        Err(why) => {
            tracing::debug!(%why, "tokenizer.json read through tokenizers");
            Ok((text.parse::<Tokenizer>()?, None))
        }
    }
}

/// The tokenizer of [`UnigramParts::rest`] around `model`.
pub(crate) fn assemble(rest: &str, model: MappedUnigram) -> Result<MappedTokenizer, String> {
    let mut v: serde_json::Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
    let stand_in: Tokenizer =
        serde_json::from_value(v["tokenizer"].take()).map_err(|e| e.to_string())?;
    let added: Vec<AddedToken> =
        serde_json::from_value(v["added"].take()).map_err(|e| e.to_string())?;
    let mut t = TokenizerImpl::new(model);
    t.with_normalizer(stand_in.get_normalizer().cloned())
        .map_err(|e| e.to_string())?;
    t.with_pre_tokenizer(stand_in.get_pre_tokenizer().cloned());
    t.with_post_processor(stand_in.get_post_processor().cloned());
    t.with_decoder(stand_in.get_decoder().cloned());
    t.add_tokens(added).map_err(|e| e.to_string())?;
    Ok(t)
}

/// The fast way; `Err` says why it does not apply.
fn fast(text: &str) -> Result<(Tokenizer, Option<UnigramParts>), String> {
    let file: File = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let model = file.model.ok_or("no model")?;
    let pieces = match (&model.vocab, model.byte_fallback) {
        (Some(Vocab::Scores(p)), None | Some(false)) if model.unknown.is_none() => {
            Some((p.clone(), model.unk_id))
        }
        _ => None,
    };
    let model = model.build()?;
    let added = file.added_tokens;
    let mut rest = file.rest;
    // A one-word stand-in for the vocabulary while `tokenizers` reads the rest; the added
    // tokens are added after the real model is in, so their ids come from its vocabulary.
    rest.insert(
        "model".into(),
        serde_json::json!({
            "type": "WordPiece",
            "unk_token": "[UNK]",
            "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100,
            "vocab": {"[UNK]": 0}
        }),
    );
    rest.insert("added_tokens".into(), serde_json::Value::Array(Vec::new()));
    let rest = serde_json::Value::Object(rest);
    let parts = pieces.map(|(pieces, unk_id)| UnigramParts {
        pieces,
        unk_id,
        rest: serde_json::json!({"tokenizer": &rest, "added": &added}).to_string(),
    });
    let mut tokenizer: Tokenizer = serde_json::from_value(rest).map_err(|e| e.to_string())?;
    tokenizer.with_model(model);
    tokenizer.add_tokens(added).map_err(|e| e.to_string())?;
    Ok((tokenizer, parts))
}

/// The file: the model read here, the rest kept as JSON for `tokenizers`.
struct File {
    model: Option<Model>,
    /// Its entries' `id`s are the model's, looked up again when they are added.
    added_tokens: Vec<AddedToken>,
    rest: serde_json::Map<String, serde_json::Value>,
}

impl<'de> Deserialize<'de> for File {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = File;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tokenizer.json object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<File, A::Error> {
                let mut file = File {
                    model: None,
                    added_tokens: Vec::new(),
                    rest: serde_json::Map::new(),
                };
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "model" => file.model = Some(map.next_value()?),
                        "added_tokens" => file.added_tokens = map.next_value()?,
                        _ => {
                            let value = map.next_value()?;
                            file.rest.insert(key, value);
                        }
                    }
                }
                Ok(file)
            }
        }
        d.deserialize_map(V)
    }
}

/// The fields of the two model types read here.
#[derive(Default)]
struct Model {
    kind: Option<String>,
    vocab: Option<Vocab>,
    unk_token: Option<String>,
    continuing_subword_prefix: Option<String>,
    max_input_chars_per_word: Option<usize>,
    unk_id: Option<usize>,
    byte_fallback: Option<bool>,
    /// A field this reader does not know.
    unknown: Option<String>,
}

enum Vocab {
    /// WordPiece: token to id.
    Ids(AHashMap<String, u32>),
    /// Unigram: (piece, score) in id order.
    Scores(Vec<(String, f64)>),
}

impl Model {
    fn build(self) -> Result<ModelWrapper, String> {
        if !matches!(self.kind.as_deref(), Some("WordPiece" | "Unigram")) {
            return Err(format!("model type {:?}", self.kind));
        }
        if let Some(field) = self.unknown {
            return Err(format!("model field {field:?}"));
        }
        match (self.kind.as_deref(), self.vocab) {
            (Some("WordPiece"), Some(Vocab::Ids(vocab))) => {
                let mut b = WordPiece::builder().vocab(vocab);
                if let Some(u) = self.unk_token {
                    b = b.unk_token(u);
                }
                if let Some(p) = self.continuing_subword_prefix {
                    b = b.continuing_subword_prefix(p);
                }
                if let Some(m) = self.max_input_chars_per_word {
                    b = b.max_input_chars_per_word(m);
                }
                Ok(b.build().map_err(|e| e.to_string())?.into())
            }
            (Some("Unigram"), Some(Vocab::Scores(vocab))) => {
                Ok(
                    Unigram::from(vocab, self.unk_id, self.byte_fallback.unwrap_or(false))
                        .map_err(|e| e.to_string())?
                        .into(),
                )
            }
            (kind, _) => Err(format!("model type {kind:?}")),
        }
    }
}

impl<'de> Deserialize<'de> for Model {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Model;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a model object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Model, A::Error> {
                let mut m = Model::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        // Each may be null in another model type's file.
                        "type" => m.kind = map.next_value()?,
                        "vocab" => m.vocab = map.next_value()?,
                        "unk_token" => m.unk_token = map.next_value()?,
                        "continuing_subword_prefix" => {
                            m.continuing_subword_prefix = map.next_value()?
                        }
                        "max_input_chars_per_word" => {
                            m.max_input_chars_per_word = map.next_value()?
                        }
                        "unk_id" => m.unk_id = map.next_value()?,
                        "byte_fallback" => m.byte_fallback = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            m.unknown.get_or_insert(key);
                        }
                    }
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> Deserialize<'de> for Vocab {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vocab;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a vocabulary (an object of ids or a list of scored pieces)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vocab, A::Error> {
                let mut ids = AHashMap::with_capacity(map.size_hint().unwrap_or(32_768));
                while let Some((token, id)) = map.next_entry::<String, u32>()? {
                    ids.insert(token, id);
                }
                Ok(Vocab::Ids(ids))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vocab, A::Error> {
                let mut scores = Vec::with_capacity(seq.size_hint().unwrap_or(32_768));
                while let Some(entry) = seq.next_element::<(String, f64)>()? {
                    scores.push(entry);
                }
                Ok(Vocab::Scores(scores))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Texts in the five languages, with accents, case, punctuation, digits, an emoji, a word
    /// longer than WordPiece's limit and the special tokens written out.
    const TEXTS: &[&str] = &[
        "Vitamin D deficiency increases the risk of hip fractures in older adults.",
        "Le café de l'hôpital est fermé ; où est la bibliothèque ? Déjà vu, ÉTÉ 2026.",
        "El niño comió paella en Valencia: ¡qué rico! Año 1999, señor Muñoz.",
        "机器学习模型在自然语言处理中的应用非常广泛。",
        "東京の図書館で本を読みました。カタカナとひらがな、漢字。",
        "[CLS] [SEP] [MASK] <s> </s> <pad> tabs\tand\nnewlines, emoji 🙂, naïve résumé",
        "Pneumonoultramicroscopicsilicovolcanoconiosispneumonoultramicroscopicsilicovolcanoconiosispneumonoultramicroscopicsilicovolcanoconiosis",
        "",
    ];

    fn same_as_tokenizers(path: &Path) {
        let reference = Tokenizer::from_file(path).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        let (ours, _) = fast(&text).unwrap_or_else(|why| panic!("{}: {why}", path.display()));
        assert_eq!(
            ours.get_vocab_size(true),
            reference.get_vocab_size(true),
            "{}",
            path.display()
        );
        for t in TEXTS {
            for special in [true, false] {
                let a = reference.encode(*t, special).unwrap();
                let b = ours.encode(*t, special).unwrap();
                assert_eq!(a.get_ids(), b.get_ids(), "{}: {t:?}", path.display());
                assert_eq!(a.get_tokens(), b.get_tokens(), "{}: {t:?}", path.display());
                assert_eq!(
                    a.get_offsets(),
                    b.get_offsets(),
                    "{}: {t:?}",
                    path.display()
                );
                assert_eq!(
                    a.get_attention_mask(),
                    b.get_attention_mask(),
                    "{}: {t:?}",
                    path.display()
                );
            }
            let pair_a = reference.encode((*t, "query"), true).unwrap();
            let pair_b = ours.encode((*t, "query"), true).unwrap();
            assert_eq!(pair_a.get_ids(), pair_b.get_ids(), "{}", path.display());
            assert_eq!(pair_a.get_type_ids(), pair_b.get_type_ids());
        }
    }

    #[test]
    fn a_unigram_tokenizer_reads_the_same_as_through_tokenizers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        let (json, _) = crate::embedder::tests::unigram_tokenizer();
        std::fs::write(&path, json.to_string()).unwrap();
        same_as_tokenizers(&path);
    }

    #[test]
    fn the_test_models_wordpiece_tokenizer_reads_the_same_as_through_tokenizers() {
        same_as_tokenizers(&crate::embedder::tests::test_model().join("tokenizer.json"));
    }

    #[test]
    fn an_unknown_model_type_or_field_goes_through_tokenizers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        let bpe = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
            "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
            "decoder":null,"model":{"type":"BPE","dropout":null,"unk_token":null,
            "continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,
            "byte_fallback":false,"ignore_merges":false,
            "vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]}}"#;
        assert!(fast(bpe).err().unwrap().contains("BPE"));
        std::fs::write(&path, bpe).unwrap();
        let t = read(&path).unwrap();
        assert_eq!(t.encode("ab a", false).unwrap().get_ids(), &[2, 0]);

        let odd = r#"{"added_tokens":[],"model":{"type":"WordPiece","unk_token":"[UNK]",
            "shiny":true,"vocab":{"[UNK]":0}}}"#;
        assert!(fast(odd).err().unwrap().contains("shiny"));
    }
}
