//! A SentencePiece Unigram vocabulary (XLM-R's 250,000 pieces, multilingual-e5's) kept in the
//! prepared file and used where it lies in the mapping, as a `tokenizers` model.
//!
//! `tokenizers`' own `Unigram` builds, at every load, a map of every piece and a trie whose
//! nodes are hash maps: for the default model that is most of a CLI search's time and
//! memory. Here the pieces, their scores and an open-addressing table of every piece and every
//! prefix of a piece (cut at characters) are arrays of the prepared file; a text's
//! segmentation looks up only the strings it holds, so a query touches a few pages of them.
//!
//! The segmentation is `tokenizers`' optimised Viterbi (`Unigram::encode_optimized`, from
//! SentencePiece) step for step: the same candidates in the same order (shorter pieces first
//! at each start), the same strict comparison, the same unknown-character score (the least
//! score less 10) and the same fusing of unknown characters, so the ids are the same; the
//! tests compare them with `tokenizers`' on the test vocabulary and on the default model's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tokenizers::models::unigram::UnigramTrainer;
use tokenizers::{Model, Token};

use crate::prepared::{Array, Reader, Writer, check};

/// `tokenizers`' penalty for a character no piece covers.
const UNK_PENALTY: f64 = 10.0;
/// A slot's third word: set when the string is a piece (else only a prefix of one).
const PIECE: u32 = 1 << 31;
/// The u64 written for "no unknown-piece id".
const NO_UNK: u64 = u64::MAX;

/// The pieces, their scores and the lookup table.
pub(crate) struct MappedUnigram {
    /// The pieces' bytes, one after another.
    blob: Array<u8>,
    /// Where each piece starts in `blob`, and where the last ends (`pieces + 1` values).
    offsets: Array<u32>,
    scores: Array<f64>,
    /// Three `u32` per slot: the string's hash (its upper half), the id of a piece it begins
    /// (the piece itself when it is one: the last of equal pieces, as `tokenizers` keeps),
    /// its length in bytes with [`PIECE`] set when it is a piece; a length of 0 is a free slot.
    slots: Array<u32>,
    unk_id: Option<u32>,
    min_score: f64,
}

impl std::fmt::Debug for MappedUnigram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "MappedUnigram({} pieces, {} slots)",
            self.scores.len(),
            self.slots.len() / 3
        )
    }
}

/// FNV-1a, one byte at a time: a prefix's hash extends to the next character's.
#[derive(Clone, Copy)]
struct Hash(u64);

impl Hash {
    const START: Hash = Hash(0xcbf2_9ce4_8422_2325);

    fn extend(self, bytes: &[u8]) -> Hash {
        let mut h = self.0;
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        Hash(h)
    }
}

/// What a slot says of a string found in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// A piece, with its id.
    Piece(u32),
    /// Only the beginning of a piece.
    Prefix,
}

impl MappedUnigram {
    /// The vocabulary of `pieces` (piece, score) in id order, with the id of the unknown piece.
    pub(crate) fn build(pieces: &[(String, f64)], unk_id: Option<usize>) -> MappedUnigram {
        let mut blob = Vec::new();
        let mut offsets = Vec::with_capacity(pieces.len() + 1);
        let mut scores = Vec::with_capacity(pieces.len());
        let mut min_score = f64::INFINITY;
        for (piece, score) in pieces {
            offsets.push(blob.len() as u32);
            blob.extend_from_slice(piece.as_bytes());
            scores.push(*score);
            min_score = min_score.min(*score);
        }
        offsets.push(blob.len() as u32);
        // Every piece and every prefix of one, cut at characters: (piece id, is a piece).
        let mut strings: HashMap<&[u8], (u32, bool)> = HashMap::with_capacity(pieces.len() * 4);
        for (id, (piece, _)) in pieces.iter().enumerate() {
            let id = id as u32;
            for (end, _) in piece
                .char_indices()
                .skip(1)
                .chain(std::iter::once((piece.len(), ' ')))
            {
                let prefix = &piece.as_bytes()[..end];
                if end == piece.len() {
                    strings.insert(prefix, (id, true));
                } else {
                    strings.entry(prefix).or_insert((id, false));
                }
            }
        }
        let count = (strings.len() * 2).next_power_of_two().max(4);
        let mut slots = vec![0u32; count * 3];
        let mask = count - 1;
        for (string, (id, piece)) in strings {
            let h = Hash::START.extend(string).0;
            let mut at = (h as usize) & mask;
            while slots[at * 3 + 2] != 0 {
                at = (at + 1) & mask;
            }
            slots[at * 3] = (h >> 32) as u32;
            slots[at * 3 + 1] = id;
            slots[at * 3 + 2] = string.len() as u32 | if piece { PIECE } else { 0 };
        }
        MappedUnigram {
            blob: blob.into(),
            offsets: offsets.into(),
            scores: scores.into(),
            slots: slots.into(),
            unk_id: unk_id.map(|u| u as u32),
            min_score,
        }
    }

    /// Writes the vocabulary ([`MappedUnigram::read`] reads it back). The pieces and the table
    /// are the file's row-read part.
    pub(crate) fn save(&self, w: &mut Writer) -> std::io::Result<()> {
        w.u64(self.unk_id.map_or(NO_UNK, u64::from))?;
        w.u64(self.min_score.to_bits())?;
        w.lookup_from_here();
        w.slice(&self.offsets)?;
        w.slice(&self.scores)?;
        w.slice(&self.slots)?;
        w.slice(&self.blob)
    }

    /// Reads what [`MappedUnigram::save`] wrote, the arrays left in the mapping.
    pub(crate) fn read(r: &mut Reader) -> std::io::Result<MappedUnigram> {
        let unk = r.u64()?;
        let min_score = f64::from_bits(r.u64()?);
        let offsets: Array<u32> = r.array()?;
        let scores: Array<f64> = r.array()?;
        let slots: Array<u32> = r.array()?;
        let blob: Array<u8> = r.array()?;
        check(
            offsets.len() == scores.len() + 1
                && offsets.last().is_some_and(|&e| e as usize == blob.len())
                && slots.len().is_multiple_of(3)
                && (slots.len() / 3).is_power_of_two(),
            "vocabulary",
        )?;
        let unk_id = match unk {
            NO_UNK => None,
            u => {
                let u = u32::try_from(u).map_err(std::io::Error::other)?;
                check((u as usize) < scores.len(), "unknown piece")?;
                Some(u)
            }
        };
        Ok(MappedUnigram {
            blob,
            offsets,
            scores,
            slots,
            unk_id,
            min_score,
        })
    }

    fn piece(&self, id: u32) -> Option<&[u8]> {
        let id = id as usize;
        let (a, b) = (
            *self.offsets.get(id)? as usize,
            *self.offsets.get(id + 1)? as usize,
        );
        self.blob.get(a..b)
    }

    /// Looks `key` (whose hash is `h`) up.
    fn find(&self, h: Hash, key: &[u8]) -> Option<Found> {
        let count = self.slots.len() / 3;
        let mask = count - 1;
        let mut at = (h.0 as usize) & mask;
        // Bounded by the table's size, should a damaged file have no free slot.
        for _ in 0..count {
            let slot = &self.slots[at * 3..at * 3 + 3];
            let len = slot[2] & !PIECE;
            if len == 0 {
                return None;
            }
            if slot[0] == (h.0 >> 32) as u32
                && len as usize == key.len()
                && self
                    .piece(slot[1])
                    .and_then(|p| p.get(..key.len()))
                    .is_some_and(|p| p == key)
            {
                return Some(if slot[2] & PIECE != 0 {
                    Found::Piece(slot[1])
                } else {
                    Found::Prefix
                });
            }
            at = (at + 1) & mask;
        }
        None
    }

    fn id_of(&self, token: &str) -> Option<u32> {
        match self.find(Hash::START.extend(token.as_bytes()), token.as_bytes())? {
            Found::Piece(id) => Some(id),
            Found::Prefix => None,
        }
    }

    /// `tokenizers`' `Unigram::encode_optimized`: the best segmentation's pieces, as
    /// (start, end, id) with unknown characters fused (their id then [`Self::id_of`] or the
    /// unknown piece's).
    fn segment(&self, text: &str) -> tokenizers::Result<Vec<(usize, usize, u32)>> {
        #[derive(Clone, Copy)]
        struct Best {
            id: u32,
            score: f64,
            starts_at: Option<usize>,
        }
        let size = text.len();
        let bytes = text.as_bytes();
        let unk_score = self.min_score - UNK_PENALTY;
        let unk = || -> tokenizers::Result<u32> {
            self.unk_id
                .ok_or_else(|| "the vocabulary has no unknown piece".into())
        };
        let mut best = vec![
            Best {
                id: 0,
                score: 0.0,
                starts_at: None,
            };
            size + 1
        ];
        let mut starts_at = 0;
        while starts_at < size {
            let till_here = best[starts_at].score;
            let mut has_single = false;
            let rest = &text[starts_at..];
            let mblen = rest.chars().next().map_or(1, char::len_utf8);
            let mut h = Hash::START;
            let mut end = starts_at;
            for c in rest.chars() {
                let next = end + c.len_utf8();
                h = h.extend(&bytes[end..next]);
                end = next;
                match self.find(h, &bytes[starts_at..end]) {
                    None => break,
                    Some(Found::Prefix) => {}
                    Some(Found::Piece(id)) => {
                        let score = self.scores[id as usize] + till_here;
                        let target = &mut best[end];
                        if target.starts_at.is_none() || score > target.score {
                            *target = Best {
                                id,
                                score,
                                starts_at: Some(starts_at),
                            };
                        }
                        if end - starts_at == mblen {
                            has_single = true;
                        }
                    }
                }
            }
            if !has_single {
                let score = unk_score + till_here;
                let target = &mut best[starts_at + mblen];
                if target.starts_at.is_none() || score > target.score {
                    *target = Best {
                        id: unk()?,
                        score,
                        starts_at: Some(starts_at),
                    };
                }
            }
            starts_at += mblen;
        }
        let mut out = Vec::new();
        let mut ends_at = size;
        // The end of a run of unknown characters being fused.
        let mut unknown_end: Option<usize> = None;
        let fuse = |start: usize, end: usize, out: &mut Vec<(usize, usize, u32)>| {
            let id = self.id_of(&text[start..end]).map_or_else(unk, Ok)?;
            out.push((start, end, id));
            tokenizers::Result::Ok(())
        };
        while ends_at > 0 {
            let node = best[ends_at];
            let start = node
                .starts_at
                .ok_or("a position the segmentation did not reach")?;
            if Some(node.id) == self.unk_id {
                unknown_end.get_or_insert(ends_at);
            } else {
                if let Some(e) = unknown_end.take() {
                    fuse(ends_at, e, &mut out)?;
                }
                out.push((start, ends_at, node.id));
            }
            ends_at = start;
        }
        if let Some(e) = unknown_end {
            fuse(0, e, &mut out)?;
        }
        out.reverse();
        Ok(out)
    }
}

impl Model for MappedUnigram {
    type Trainer = UnigramTrainer;

    fn tokenize(&self, sequence: &str) -> tokenizers::Result<Vec<Token>> {
        if sequence.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self
            .segment(sequence)?
            .into_iter()
            .map(|(a, b, id)| Token::new(id, sequence[a..b].to_string(), (a, b)))
            .collect())
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.id_of(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.piece(id)
            .map(|p| String::from_utf8_lossy(p).into_owned())
    }

    fn get_vocab(&self) -> std::collections::HashMap<String, u32> {
        (0..self.scores.len() as u32)
            .filter_map(|id| Some((self.id_to_token(id)?, id)))
            .collect()
    }

    fn get_vocab_size(&self) -> usize {
        self.scores.len()
    }

    fn save(&self, _folder: &Path, _prefix: Option<&str>) -> tokenizers::Result<Vec<PathBuf>> {
        Err("a prepared vocabulary is not saved as a tokenizer file".into())
    }

    fn get_trainer(&self) -> UnigramTrainer {
        UnigramTrainer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_as_tokenizers_unigram_does() {
        // Overlapping pieces, equal pieces (the last one's id wins), characters no piece
        // covers (fused into one unknown token), multi-byte characters.
        let pieces: Vec<(String, f64)> = [
            ("<unk>", 0.0),
            ("▁", -2.0),
            ("a", -3.0),
            ("b", -3.0),
            ("ab", -4.0),
            ("abc", -4.5),
            ("c", -3.5),
            ("▁ab", -3.0),
            ("é", -2.5),
            ("éa", -4.0),
            ("ab", -1.0),
            ("日本", -3.0),
            ("日", -4.0),
        ]
        .iter()
        .map(|(p, s)| (p.to_string(), *s))
        .collect();
        let reference =
            tokenizers::models::unigram::Unigram::from(pieces.clone(), Some(0), false).unwrap();
        let ours = MappedUnigram::build(&pieces, Some(0));
        for text in [
            "▁abc",
            "abcab",
            "éab▁ab",
            "xyz",
            "axyzb",
            "日本語日",
            "▁",
            "ccc▁éa日x本",
            "ab",
        ] {
            let a: Vec<(u32, String)> = reference
                .tokenize(text)
                .unwrap()
                .into_iter()
                .map(|t| (t.id, t.value))
                .collect();
            let b: Vec<(u32, String)> = ours
                .tokenize(text)
                .unwrap()
                .into_iter()
                .map(|t| (t.id, t.value))
                .collect();
            assert_eq!(a, b, "{text:?}");
        }
        assert_eq!(ours.token_to_id("ab"), Some(10));
        assert_eq!(ours.token_to_id("日本"), Some(11));
        assert_eq!(ours.token_to_id("日本語"), None);
        assert_eq!(ours.id_to_token(8).as_deref(), Some("é"));
    }
}
