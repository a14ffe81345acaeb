//! Reads a `model.safetensors` file whose tensors are all f32 (or i64) straight into one buffer per
//! tensor: one copy from the page cache for each weight. candle's loader reads the whole file
//! into memory first and then copies every tensor out of it, twice the copying and twice the
//! fresh pages, which is most of a cold `linkly search`'s time.
//!
//! The format: an 8-byte little-endian header length, a JSON header naming each tensor's
//! `dtype`, `shape` and `data_offsets` (from the end of the header), then the data.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use candle_core::{Device, Tensor};

/// An f32 matrix left in the file, its rows read when needed (the word embeddings: a query
/// needs a handful of the 30,000 rows, and reading them all is a third of a cold start).
#[derive(Debug)]
pub(crate) struct OnDisk {
    file: std::fs::File,
    offset: u64,
    rows: usize,
    cols: usize,
}

impl OnDisk {
    /// `[rows, cols]`.
    pub(crate) fn dims(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Row `row` into `out` (`cols` values).
    pub(crate) fn read_row(&self, row: usize, out: &mut [f32]) -> std::io::Result<()> {
        if row >= self.rows || out.len() != self.cols {
            return Err(std::io::Error::other(format!(
                "row {row} of a {}×{} matrix",
                self.rows, self.cols
            )));
        }
        let at = self.offset + (row * self.cols * 4) as u64;
        read_at(&self.file, bytemuck::cast_slice_mut(out), at)
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, at)
}

#[cfg(windows)]
fn read_at(file: &std::fs::File, mut buf: &mut [u8], mut at: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, at)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                at += n as u64;
            }
        }
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn read_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    let mut f = file;
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(buf)
}

/// Where [`load_f32`] puts a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// In memory, as stored.
    Memory,
    /// In memory, a matrix transposed as it is read (`[rows, cols]` becomes `[cols, rows]`):
    /// a linear layer's `[out, in]` weight read as the `[in, out]` the products want, with no
    /// second full copy.
    Transposed,
    /// Left in the file ([`OnDisk`]).
    Disk,
    /// Not read at all: the caller has it in another form (the prepared linear layers).
    Skip,
}

/// What [`load_f32`] read: the tensors in memory, and the matrices left on disk.
pub(crate) struct Loaded {
    pub(crate) tensors: HashMap<String, Tensor>,
    pub(crate) on_disk: HashMap<String, OnDisk>,
    /// The names of the tensors read transposed.
    pub(crate) transposed: std::collections::HashSet<String>,
}

/// The largest header accepted (the format's own limit is 100 MB).
const MAX_HEADER: u64 = 100 << 20;

/// The file's tensors, when every one is f32 or i64 (`Ok(None)` otherwise: the caller then
/// uses candle's loader, which converts other types); `Err` for a file that is not
/// safetensors. `place` says where each f32 matrix goes (anything else is read as stored).
pub(crate) fn load_f32(
    path: &Path,
    place: impl Fn(&str) -> Placement,
) -> Result<Option<Loaded>, String> {
    if cfg!(target_endian = "big") {
        return Ok(None);
    }
    let mut file = fs_err::File::open(path).map_err(|e| e.to_string())?;
    let file_len = file.metadata().map_err(|e| e.to_string())?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| "shorter than a safetensors header".to_string())?;
    let header_len = u64::from_le_bytes(len);
    if header_len > MAX_HEADER || 8 + header_len > file_len {
        return Err(format!(
            "header of {header_len} bytes in a {file_len}-byte file"
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header).map_err(|e| e.to_string())?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| format!("header: {e}"))?;
    let data_start = 8 + header_len;
    let mut entries = Vec::with_capacity(header.len());
    for (name, info) in &header {
        if name == "__metadata__" {
            continue;
        }
        let int = match info["dtype"].as_str() {
            Some("F32") => false,
            // Buffers such as BERT's `position_ids`.
            Some("I64") => true,
            _ => return Ok(None),
        };
        let shape: Vec<usize> = info["shape"]
            .as_array()
            .ok_or_else(|| format!("{name}: no shape"))?
            .iter()
            .map(|d| d.as_u64().map(|d| d as usize))
            .collect::<Option<_>>()
            .ok_or_else(|| format!("{name}: bad shape"))?;
        let offsets = info["data_offsets"]
            .as_array()
            .and_then(|o| Some((o.first()?.as_u64()?, o.get(1)?.as_u64()?)))
            .ok_or_else(|| format!("{name}: no data_offsets"))?;
        let count: usize = shape.iter().product();
        let (begin, end) = offsets;
        let width = if int { 8 } else { 4 };
        if end < begin || end - begin != count as u64 * width || data_start + end > file_len {
            return Err(format!("{name}: data_offsets {begin}..{end} do not fit"));
        }
        entries.push((name.clone(), shape, count, data_start + begin, int));
    }
    // In file order, so the reads go forwards.
    entries.sort_by_key(|e| e.3);
    let mut tensors = HashMap::with_capacity(entries.len());
    let mut on_disk = HashMap::new();
    let mut transposed = std::collections::HashSet::new();
    let mut scratch: Vec<f32> = Vec::new();
    for (name, shape, count, at, int) in entries {
        let placement = if !int && shape.len() == 2 {
            place(&name)
        } else {
            Placement::Memory
        };
        if placement == Placement::Transposed {
            let (rows, cols) = (shape[0], shape[1]);
            scratch.clear();
            scratch.resize(count, 0.0);
            file.seek(SeekFrom::Start(at)).map_err(|e| e.to_string())?;
            file.read_exact(bytemuck::cast_slice_mut(&mut scratch))
                .map_err(|e| format!("{name}: {e}"))?;
            let values = transpose(&scratch, rows, cols);
            let t =
                Tensor::from_vec(values, (cols, rows), &Device::Cpu).map_err(|e| e.to_string())?;
            tensors.insert(name.clone(), t);
            transposed.insert(name);
            continue;
        }
        if placement == Placement::Skip {
            continue;
        }
        if placement == Placement::Disk {
            let handle = std::fs::File::open(path).map_err(|e| e.to_string())?;
            on_disk.insert(
                name,
                OnDisk {
                    file: handle,
                    offset: at,
                    rows: shape[0],
                    cols: shape[1],
                },
            );
            continue;
        }
        file.seek(SeekFrom::Start(at)).map_err(|e| e.to_string())?;
        let t = if int {
            let mut values = vec![0i64; count];
            file.read_exact(bytemuck::cast_slice_mut(&mut values))
                .map_err(|e| format!("{name}: {e}"))?;
            Tensor::from_vec(values, shape, &Device::Cpu)
        } else {
            let mut values = vec![0.0f32; count];
            file.read_exact(bytemuck::cast_slice_mut(&mut values))
                .map_err(|e| format!("{name}: {e}"))?;
            Tensor::from_vec(values, shape, &Device::Cpu)
        };
        tensors.insert(name, t.map_err(|e| e.to_string())?);
    }
    Ok(Some(Loaded {
        tensors,
        on_disk,
        transposed,
    }))
}

/// `[rows, cols]` → `[cols, rows]`, tile by tile (both sides stay in cache), output rows in
/// parallel.
pub(crate) fn transpose(src: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    use rayon::prelude::*;
    const TILE: usize = 32;
    let mut out = vec![0.0f32; rows * cols];
    if rows == 0 || cols == 0 {
        return out;
    }
    out.par_chunks_mut(TILE * rows)
        .enumerate()
        .for_each(|(block, dst)| {
            let c0 = block * TILE;
            let width = dst.len() / rows;
            for r0 in (0..rows).step_by(TILE) {
                for r in r0..(r0 + TILE).min(rows) {
                    let from = &src[r * cols + c0..r * cols + c0 + width];
                    for (c, &v) in from.iter().enumerate() {
                        dst[c * rows + r] = v;
                    }
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tensor of the real model, read this way and by candle, is the same.
    #[test]
    fn reads_what_candle_reads() {
        let dir = crate::test_inputs::TestInput::MiniLm.path();
        let path = dir.join("model.safetensors");
        let words = "embeddings.word_embeddings.weight";
        let dense = "encoder.layer.0.intermediate.dense.weight";
        let loaded = load_f32(&path, |n| match n {
            n if n == words => Placement::Disk,
            n if n == dense => Placement::Transposed,
            _ => Placement::Memory,
        })
        .unwrap()
        .expect("the test model is f32");
        assert_eq!(loaded.transposed.len(), 1);
        let theirs = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
        let ours = loaded.tensors;
        assert_eq!(ours.len() + 1, theirs.len());
        // The matrix left on disk reads back row by row as candle reads it whole.
        let disk = &loaded.on_disk[words];
        let table = &theirs[words];
        assert_eq!(disk.dims(), table.dims2().unwrap());
        let (rows, cols) = disk.dims();
        let mut row = vec![0.0f32; cols];
        for r in [0, 1, 2054, rows - 1] {
            disk.read_row(r, &mut row).unwrap();
            assert_eq!(
                row,
                table.get(r).unwrap().to_vec1::<f32>().unwrap(),
                "row {r}"
            );
        }
        assert!(disk.read_row(rows, &mut row).is_err());
        for (name, t) in theirs.iter().filter(|(n, _)| *n != words) {
            let o = &ours[name];
            let t = &if name == dense {
                t.t().unwrap().contiguous().unwrap()
            } else {
                t.clone()
            };
            assert_eq!(o.dims(), t.dims(), "{name}");
            assert_eq!(o.dtype(), t.dtype(), "{name}");
            let (a, b) = (o.flatten_all().unwrap(), t.flatten_all().unwrap());
            let same = match t.dtype() {
                candle_core::DType::I64 => {
                    a.to_vec1::<i64>().unwrap() == b.to_vec1::<i64>().unwrap()
                }
                _ => a.to_vec1::<f32>().unwrap() == b.to_vec1::<f32>().unwrap(),
            };
            assert!(same, "{name} differs");
        }
    }

    #[test]
    fn broken_files_are_errors_and_other_types_are_left_to_candle() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("m.safetensors");
        fs_err::write(&p, b"abc").unwrap();
        assert!(load_f32(&p, |_| Placement::Memory).is_err());
        fs_err::write(&p, [255u8; 16]).unwrap();
        assert!(load_f32(&p, |_| Placement::Memory).is_err());
        let file = |header: &str, data: &[u8]| {
            let mut b = (header.len() as u64).to_le_bytes().to_vec();
            b.extend_from_slice(header.as_bytes());
            b.extend_from_slice(data);
            b
        };
        let f16 = r#"{"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#;
        fs_err::write(&p, file(f16, &[0; 4])).unwrap();
        assert!(load_f32(&p, |_| Placement::Memory).unwrap().is_none());
        let short = r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
        fs_err::write(&p, file(short, &[0; 8])).unwrap();
        assert!(load_f32(&p, |_| Placement::Memory).is_err());
        let ok = r#"{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        let mut data = 1.5f32.to_le_bytes().to_vec();
        data.extend_from_slice(&(-2.0f32).to_le_bytes());
        fs_err::write(&p, file(ok, &data)).unwrap();
        let t = load_f32(&p, |_| Placement::Memory)
            .unwrap()
            .unwrap()
            .tensors;
        assert_eq!(t["w"].to_vec1::<f32>().unwrap(), vec![1.5, -2.0]);
    }
}
