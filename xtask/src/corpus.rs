//! Benchmark corpora: a generated one and BEIR SciFact written out one file per abstract.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// A small deterministic generator (xorshift64*).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "sto", "va", "qui", "dor", "pel", "tra", "zu", "nex", "bri", "sol",
    "mar", "fen", "gal", "hu", "ix", "jo",
];
const CJK: &[&str] = &[
    "機械学習",
    "東京",
    "研究所",
    "データ",
    "组件",
    "响应式",
    "文档",
    "検索",
];

/// The generated vocabulary: Zipf-ish synthetic words plus some CJK words.
pub(crate) fn vocabulary() -> Vec<String> {
    let mut rng = Rng::new(7);
    let mut words: Vec<String> = (0..5000)
        .map(|_| {
            let n = 2 + rng.below(3);
            (0..n)
                .map(|_| SYLLABLES[rng.below(SYLLABLES.len())])
                .collect()
        })
        .collect();
    words.extend(CJK.iter().map(|s| s.to_string()));
    words
}

/// A small note of the discovery and filter benchmarks: `# Note {i}`, 40 words drawn from
/// `vocab` (small ranks are frequent, Zipf-ish, so words repeat across documents) and an
/// `area… topic…` line.
/// The directory of file `i` in the folder trees of `bench discovery` and `bench filter`:
/// 20 areas × 50 projects × 10 subfolders, 10,000 directories (10 files each at 100,000).
pub(crate) fn dir_of(root: &Path, i: usize) -> PathBuf {
    root.join(format!(
        "area{:02}/project{:03}/sub{}",
        i % 20,
        (i / 20) % 50,
        (i / 1000) % 10
    ))
}

/// Writes `docs` generated notes (random words from seed `seed`) into the tree of [`dir_of`],
/// 10 per directory; `place` writes note `i`'s text into its directory.
pub(crate) fn write_tree(
    root: &Path,
    docs: usize,
    seed: u64,
    mut place: impl FnMut(&Path, usize, String) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let vocab = vocabulary();
    let mut rng = Rng::new(seed);
    for i in 0..docs {
        let dir = dir_of(root, i);
        // The first 10,000 files visit every directory once.
        if i < 10_000 {
            fs_err::create_dir_all(&dir)?;
        }
        place(&dir, i, note(i, &mut rng, &vocab))?;
    }
    Ok(())
}

pub(crate) fn note(i: usize, rng: &mut Rng, vocab: &[String]) -> String {
    let mut text = format!("# Note {i}\n\n");
    for _ in 0..40 {
        let cap = rng.below(vocab.len()).max(1);
        let r = rng.below(cap);
        text.push_str(&vocab[r]);
        text.push(' ');
    }
    text.push_str(&format!("\narea{} topic{}\n", i % 20, i % 97));
    text
}

fn zipf_word<'a>(rng: &mut Rng, vocab: &'a [String]) -> &'a str {
    // Square a uniform draw: low ranks are much more frequent.
    let u = rng.below(10_000) as f64 / 10_000.0;
    &vocab[((u * u) * vocab.len() as f64) as usize % vocab.len()]
}

/// Writes `docs` Markdown and text files under `dir` (once; reused when complete).
pub(crate) fn generated(dir: &Path, docs: usize) -> anyhow::Result<PathBuf> {
    let root = dir.join(format!("generated-{docs}"));
    let stamp = root.join(".complete");
    if stamp.exists() {
        return Ok(root);
    }
    let vocab = vocabulary();
    let mut rng = Rng::new(42);
    for i in 0..docs {
        let sub = root.join(format!("area-{:02}/topic-{:03}", i % 17, i % 211));
        fs_err::create_dir_all(&sub)?;
        let mut text = String::new();
        let md = i % 3 != 0;
        let title: Vec<&str> = (0..3).map(|_| zipf_word(&mut rng, &vocab)).collect();
        if md {
            text.push_str(&format!("# {}\n\n", title.join(" ")));
        } else {
            text.push_str(&format!("{}\n\n", title.join(" ")));
        }
        let sections = 1 + rng.below(4);
        for s in 0..sections {
            if md {
                text.push_str(&format!(
                    "## Section {s} {}\n\n",
                    zipf_word(&mut rng, &vocab)
                ));
            }
            for _ in 0..(2 + rng.below(4)) {
                let words = 20 + rng.below(60);
                let line: Vec<&str> = (0..words).map(|_| zipf_word(&mut rng, &vocab)).collect();
                text.push_str(&line.join(" "));
                text.push_str(".\n");
            }
            text.push('\n');
        }
        let name = format!("doc-{i:05}.{}", if md { "md" } else { "txt" });
        fs_err::write(sub.join(name), text)?;
    }
    fs_err::write(&stamp, "ok")?;
    Ok(root)
}

/// Random queries of one to three vocabulary words.
pub(crate) fn generated_queries(n: usize) -> Vec<String> {
    let vocab = vocabulary();
    let mut rng = Rng::new(99);
    (0..n)
        .map(|_| {
            let k = 1 + rng.below(3);
            (0..k)
                .map(|_| zipf_word(&mut rng, &vocab).to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// SciFact: the corpus written as `<doc id>.txt` (title on the first line, then the abstract).
pub(crate) fn scifact(dir: &Path) -> anyhow::Result<PathBuf> {
    beir_corpus(
        &crate::shared_dir().join("ir/scifact"),
        &dir.join("scifact"),
    )
}

/// A BEIR dataset's `corpus.jsonl.gz` written into `root` as `<doc id>.txt` (title line, blank
/// line, text), once: a `.complete` stamp marks a finished copy.
pub(crate) fn beir_corpus(dataset: &Path, root: &Path) -> anyhow::Result<PathBuf> {
    let stamp = root.join(".complete");
    if stamp.exists() {
        return Ok(root.to_path_buf());
    }
    fs_err::create_dir_all(root)?;
    let file = fs_err::File::open(dataset.join("corpus.jsonl.gz"))?;
    let reader = BufReader::new(flate2::read::GzDecoder::new(file));
    for line in reader.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line)?;
        let id = v["_id"].as_str().context("corpus line without _id")?;
        let title = v["title"].as_str().unwrap_or("");
        let text = v["text"].as_str().unwrap_or("");
        fs_err::write(
            root.join(format!("{id}.txt")),
            format!("{title}\n\n{text}\n"),
        )?;
    }
    fs_err::write(&stamp, "ok")?;
    Ok(root.to_path_buf())
}

/// Query id → relevant document ids.
pub(crate) type Qrels = HashMap<String, Vec<String>>;

/// SciFact's test queries that have judgements, as (query id, text), and their judgements.
pub(crate) fn scifact_queries() -> anyhow::Result<(Vec<(String, String)>, Qrels)> {
    beir_queries(&crate::shared_dir().join("ir/scifact"))
}

/// A BEIR dataset's test queries that have judgements (`qrels/test.tsv`, score > 0), as
/// (query id, text), and their judgements.
pub(crate) fn beir_queries(dataset: &Path) -> anyhow::Result<(Vec<(String, String)>, Qrels)> {
    let mut qrels: Qrels = HashMap::new();
    for line in fs_err::read_to_string(dataset.join("qrels/test.tsv"))?
        .lines()
        .skip(1)
    {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() >= 3 && cols[2].trim() != "0" {
            qrels
                .entry(cols[0].to_string())
                .or_default()
                .push(cols[1].to_string());
        }
    }
    let mut queries = Vec::new();
    for line in fs_err::read_to_string(dataset.join("queries.jsonl"))?.lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let id = v["_id"].as_str().unwrap_or_default().to_string();
        if qrels.contains_key(&id) {
            queries.push((id, v["text"].as_str().unwrap_or_default().to_string()));
        }
    }
    Ok((queries, qrels))
}
