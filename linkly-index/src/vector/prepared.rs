//! The encoder's linear layers as their kernels want them (int16, int8 or bf16, packed), kept
//! on disk beside the model: `<model>/.linkly/prepared-<precision>.bin`.
//!
//! A process that loads the model (every `linkly search` run without a server) would otherwise
//! read the 42 MB of f32 weights and round and pack them again: most of a cold search. With
//! the file, it reads the packed weights (half the bytes, one copy each) and nothing is
//! computed. The file names the model file it was made from (size and modification time),
//! the precision and this format's version; one that does not match, or does not read
//! whole, is ignored and written again. Written to a temporary name and renamed, so readers
//! see a whole file or none.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use bytemuck::{Pod, Zeroable};

/// Bumped whenever a packing changes.
const VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"LNKPREP\0";

/// Where a model's packed weights of one precision live, and what they must have been made
/// from.
pub(crate) struct Cache {
    path: PathBuf,
    key: String,
}

impl Cache {
    /// The cache of `precision` for the model in `dir` whose weights are `weights`; `None` when
    /// the weights file cannot be looked at.
    pub(crate) fn new(dir: &Path, weights: &Path, precision: &str) -> Option<Cache> {
        let meta = std::fs::metadata(weights).ok()?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Some(Cache {
            path: dir
                .join(".linkly")
                .join(format!("prepared-{precision}.bin")),
            key: format!("{precision} {} {modified}", meta.len()),
        })
    }

    /// Reads the file with `read`, which takes the layers in order; `None` when there is no
    /// file, it was made from other weights, or it does not read whole (`read`'s error).
    pub(crate) fn load<T>(&self, read: impl FnOnce(&mut Reader) -> io::Result<T>) -> Option<T> {
        let file = std::fs::File::open(&self.path).ok()?;
        let len = file.metadata().ok()?.len();
        let mut r = Reader {
            inner: io::BufReader::with_capacity(1 << 16, file),
            left: len,
        };
        let result = (|| {
            let mut magic = [0u8; 8];
            r.bytes(&mut magic)?;
            if &magic != MAGIC || r.u64()? != u64::from(VERSION) {
                return Err(io::Error::other("another format"));
            }
            let key: Vec<u8> = r.vec()?;
            if key != self.key.as_bytes() {
                return Err(io::Error::other("made from other weights"));
            }
            let value = read(&mut r)?;
            if r.left != 0 {
                return Err(io::Error::other("bytes past the end"));
            }
            Ok(value)
        })();
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "prepared weights not used");
                None
            }
        }
    }

    /// Writes the file with `write`; failures (a read-only model folder) are logged and
    /// otherwise ignored: the next load prepares the weights again.
    pub(crate) fn save(&self, write: impl FnOnce(&mut Writer) -> io::Result<()>) {
        let result = (|| {
            let folder = self.path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(folder)?;
            // A name of this writer's own: two processes (or threads) preparing the same model
            // at once each write their own file, and the last rename wins.
            static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = self
                .path
                .with_extension(format!("tmp-{}-{n}", std::process::id()));
            let written = (|| {
                let mut w = Writer {
                    inner: io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&tmp)?),
                };
                w.bytes(MAGIC)?;
                w.u64(u64::from(VERSION))?;
                w.slice(self.key.as_bytes())?;
                write(&mut w)?;
                w.inner
                    .into_inner()
                    .map_err(|e| e.into_error())?
                    .sync_all()?;
                std::fs::rename(&tmp, &self.path)
            })();
            if written.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            written
        })();
        match result {
            Ok(()) => tracing::debug!(path = %self.path.display(), "prepared weights saved"),
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "prepared weights not saved")
            }
        }
    }
}

/// Writes numbers and arrays, little-endian, each array after its length.
pub(crate) struct Writer {
    inner: io::BufWriter<std::fs::File>,
}

impl Writer {
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.inner.write_all(b)
    }

    pub(crate) fn u64(&mut self, v: u64) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn slice<T: Pod>(&mut self, s: &[T]) -> io::Result<()> {
        self.u64(s.len() as u64)?;
        self.bytes(bytemuck::cast_slice(s))
    }
}

/// Reads what [`Writer`] wrote; never allocates more than the file holds.
pub(crate) struct Reader {
    inner: io::BufReader<std::fs::File>,
    left: u64,
}

impl Reader {
    fn bytes(&mut self, b: &mut [u8]) -> io::Result<()> {
        if b.len() as u64 > self.left {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        self.inner.read_exact(b)?;
        self.left -= b.len() as u64;
        Ok(())
    }

    pub(crate) fn u64(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.bytes(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// A count or size: a `u64` that fits `usize`.
    pub(crate) fn usize(&mut self) -> io::Result<usize> {
        usize::try_from(self.u64()?).map_err(io::Error::other)
    }

    /// An array; its memory comes zeroed from the allocator (fresh pages for a large one)
    /// and is filled by one read.
    pub(crate) fn vec<T: Pod + Zeroable>(&mut self) -> io::Result<Vec<T>> {
        let len = self.u64()?;
        let size = std::mem::size_of::<T>() as u64;
        if len.saturating_mul(size) > self.left {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let mut v = vec![T::zeroed(); len as usize];
        self.bytes(bytemuck::cast_slice_mut(&mut v))?;
        Ok(v)
    }
}

/// `Err` unless `ok`: a file whose sizes do not agree with each other.
pub(crate) fn check(ok: bool, what: &str) -> io::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(io::Error::other(format!("{what}: sizes do not agree")))
    }
}
