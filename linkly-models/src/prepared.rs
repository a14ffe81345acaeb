//! Files of arrays kept beside what they were computed from, read back by mapping them into
//! memory: the encoder's linear layers as their kernels want them (int16, int8 or bf16,
//! packed), `<model>/.linkly/prepared-<precision>.bin`, and the index's vectors as the scan
//! reads them (`linkly-index`'s `vectors.snapshot`).
//!
//! A process that loads the model (every `linkly search` run without a server) would otherwise
//! read the 42 MB of f32 weights and round and pack them again: most of a cold search. With
//! the file, the packed weights are used where they lie in the page cache: the file is mapped
//! (by `crate::x86::map`, in the crate's one `unsafe` module: a mapping's soundness rests on
//! the file not changing under it, which the rename below gives), and each array is a view
//! into the mapping. Reading the 21 MB into the process
//! instead cost 15–25 ms on a 2-core VM, nearly all of it the kernel handing out fresh pages;
//! mapping and touching them costs about 1 ms.
//!
//! A file's header names this format's version, the file's length, what the file was made
//! from (its key: for the encoder, the model files' sizes and modification times, the
//! precision and the CPU's fingerprint) and two CRC-32 checksums: one of the part every load
//! reads whole (the key, the linear layers, the tokenizer's settings), checked at each load,
//! and one of the part read a row at a time (the tokenizer's vocabulary tables, an index's
//! vectors: [`Writer::lookup_from_here`]), which a load does not touch whole and so checks
//! only on demand ([`Cache::verify`], `linkly model status`). A file of another version,
//! another key, another length (cut short) or a wrong checksum is ignored and written again.
//! Files are written to a temporary name and renamed, never changed in place, so a mapping
//! always sees one whole file (a mapped file cut short under a reader would fault it).

use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};

use bytemuck::{Pod, Zeroable};
use ownedbytes::OwnedBytes;

/// Bumped whenever a packing or this layout changes.
pub const VERSION: u32 = 3;
const MAGIC: &[u8; 8] = b"LNKPREP\0";
/// Every array starts at a multiple of this in the file (and so in the page-aligned mapping):
/// the widest SIMD load.
const ALIGN: usize = 64;

/// A read-only array of `T`: computed in this process, or a view into a mapped file.
pub struct Array<T>(Values<T>);

enum Values<T> {
    Owned(Vec<T>),
    Mapped {
        bytes: OwnedBytes,
        _type: std::marker::PhantomData<T>,
    },
}

impl<T: Pod> Array<T> {
    /// The array as a `Vec` to change, copied out of the file the first time.
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Values::Mapped { bytes, .. } = &self.0 {
            self.0 = Values::Owned(bytemuck::cast_slice::<u8, T>(bytes).to_vec());
        }
        match &mut self.0 {
            Values::Owned(v) => v,
            Values::Mapped { .. } => unreachable!("made owned above"),
        }
    }

    /// Whether the values lie in a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Values::Mapped { .. })
    }
}

impl<T: Pod> std::ops::Deref for Array<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.0 {
            Values::Owned(v) => v,
            // Length and alignment were checked when the view was made (`Reader::array`).
            Values::Mapped { bytes, .. } => bytemuck::cast_slice(bytes),
        }
    }
}

impl<T> From<Vec<T>> for Array<T> {
    fn from(v: Vec<T>) -> Array<T> {
        Array(Values::Owned(v))
    }
}

impl<T> Default for Array<T> {
    fn default() -> Array<T> {
        Array(Values::Owned(Vec::new()))
    }
}

impl<T: Pod + std::fmt::Debug> std::fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Array({} values", self.len())?;
        if self.is_mapped() {
            write!(f, ", mapped")?;
        }
        write!(f, ")")
    }
}

/// Where a file of arrays lives, and what it must have been made from.
#[derive(Debug)]
pub struct Cache {
    path: PathBuf,
    key: String,
}

impl Cache {
    /// The file at `path`, valid when it was made from `key`.
    pub fn at(path: PathBuf, key: String) -> Cache {
        Cache { path, key }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the file with `read`, which takes the arrays in order; `None` when there is no
    /// file, it is of another version or length, it was made from something else, its
    /// checked part's checksum is wrong, or it does not read whole (`read`'s error).
    pub fn load<T>(&self, read: impl FnOnce(&mut Reader) -> io::Result<T>) -> Option<T> {
        let bytes = match map(&self.path) {
            Ok(b) => b,
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    tracing::debug!(path = %self.path.display(), error = %e, "prepared file not mapped");
                }
                return None;
            }
        };
        let result = (|| {
            let mut r = self.open(bytes, false)?;
            let value = read(&mut r)?;
            if r.at != r.bytes.len() {
                return Err(io::Error::other("bytes past the end"));
            }
            Ok(value)
        })();
        match result {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::info!(path = %self.path.display(), reason = %e, "prepared file not used: it will be made again");
                None
            }
        }
    }

    /// Checks the whole file, both checksums included, without reading its arrays: `Ok`
    /// when a load would use it (as far as its header and checksums tell), else why not.
    pub fn verify(&self) -> Result<(), String> {
        let bytes = map(&self.path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                "not prepared yet".to_string()
            } else {
                e.to_string()
            }
        })?;
        self.open(bytes, true)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// The header checked (and the row-read part's checksum when `all`); the reader is left
    /// after the key.
    fn open(&self, bytes: OwnedBytes, all: bool) -> io::Result<Reader> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(MAGIC.len())?.as_slice() != MAGIC {
            return Err(io::Error::other("not a prepared file"));
        }
        let version = r.u64()?;
        if version != u64::from(VERSION) {
            return Err(io::Error::other(format!(
                "made by format version {version}, this is {VERSION}"
            )));
        }
        let len = r.u64()?;
        if len != r.bytes.len() as u64 {
            return Err(io::Error::other(format!(
                "{} bytes where its header says {len} (cut short?)",
                r.bytes.len()
            )));
        }
        let checked_crc = r.u64()?;
        let boundary = r.usize()?;
        let lookup_crc = r.u64()?;
        if boundary < HEADER || boundary > r.bytes.len() {
            return Err(io::Error::other("a header that does not fit the file"));
        }
        if u64::from(crc32fast::hash(&r.bytes[HEADER..boundary])) != checked_crc {
            return Err(io::Error::other("wrong checksum"));
        }
        if all && u64::from(crc32fast::hash(&r.bytes[boundary..])) != lookup_crc {
            return Err(io::Error::other("wrong checksum of its row-read part"));
        }
        let key: Array<u8> = r.array()?;
        if *key != *self.key.as_bytes() {
            return Err(io::Error::other(format!(
                "made for {:?}, not {:?}",
                String::from_utf8_lossy(&key),
                self.key
            )));
        }
        Ok(r)
    }

    /// Writes the file with `write`; `Err` (a read-only folder, a full disk) leaves no file
    /// behind.
    pub fn try_save(&self, write: impl FnOnce(&mut Writer) -> io::Result<()>) -> io::Result<()> {
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
                at: 0,
                checked: crc32fast::Hasher::new(),
                lookup: None,
            };
            w.inner.write_all(MAGIC)?;
            w.inner.write_all(&u64::from(VERSION).to_le_bytes())?;
            // Length, checksums and where the row-read part starts: filled in below.
            w.inner.write_all(&[0u8; HEADER - 16])?;
            w.at = HEADER;
            w.slice(self.key.as_bytes())?;
            write(&mut w)?;
            let len = w.at as u64;
            let boundary = w.lookup.as_ref().map_or(len, |(at, _)| *at as u64);
            let lookup_crc = w.lookup.map_or(0, |(_, h)| h.finalize());
            let checked_crc = w.checked.finalize();
            let mut file = w.inner.into_inner().map_err(|e| e.into_error())?;
            file.seek(io::SeekFrom::Start(16))?;
            for v in [len, checked_crc.into(), boundary, lookup_crc.into()] {
                file.write_all(&v.to_le_bytes())?;
            }
            file.sync_all()?;
            std::fs::rename(&tmp, &self.path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// [`Cache::try_save`], its failure (a read-only folder) logged and otherwise ignored:
    /// the next load computes the arrays again.
    pub fn save(&self, write: impl FnOnce(&mut Writer) -> io::Result<()>) {
        match self.try_save(write) {
            Ok(()) => tracing::debug!(path = %self.path.display(), "prepared file saved"),
            Err(e) => {
                tracing::debug!(path = %self.path.display(), error = %e, "prepared file not saved")
            }
        }
    }
}

/// Bytes of the header: magic, version, length, the checked part's checksum, where the
/// row-read part starts, its checksum.
const HEADER: usize = 8 + 5 * 8;

/// Writes numbers and arrays, little-endian, each array after its length and from a multiple
/// of `ALIGN` (64 bytes).
pub struct Writer {
    inner: io::BufWriter<std::fs::File>,
    at: usize,
    /// The checksum of what every load checks.
    checked: crc32fast::Hasher,
    /// Where the row-read part starts, and its checksum.
    lookup: Option<(usize, crc32fast::Hasher)>,
}

impl Writer {
    fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.inner.write_all(b)?;
        match &mut self.lookup {
            Some((_, h)) => h.update(b),
            None => self.checked.update(b),
        }
        self.at += b.len();
        Ok(())
    }

    /// What follows is read a row at a time (a vocabulary, vectors): a load does not check
    /// its checksum, [`Cache::verify`] does. Called once; later calls change nothing.
    pub fn lookup_from_here(&mut self) {
        if self.lookup.is_none() {
            self.lookup = Some((self.at, crc32fast::Hasher::new()));
        }
    }

    /// Writes a number.
    pub fn u64(&mut self, v: u64) -> io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    /// Writes an array (read back by [`Reader::array`]).
    pub fn slice<T: Pod>(&mut self, s: &[T]) -> io::Result<()> {
        self.u64(s.len() as u64)?;
        let pad = self.at.next_multiple_of(ALIGN) - self.at;
        self.bytes(&[0u8; ALIGN][..pad])?;
        self.bytes(bytemuck::cast_slice(s))
    }
}

/// Reads what [`Writer`] wrote, out of the mapped file; arrays are views into it.
pub struct Reader {
    bytes: OwnedBytes,
    at: usize,
}

impl Reader {
    fn take(&mut self, n: usize) -> io::Result<OwnedBytes> {
        if n > self.bytes.len() - self.at {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let b = self.bytes.slice(self.at..self.at + n);
        self.at += n;
        Ok(b)
    }

    /// Reads a number.
    pub fn u64(&mut self) -> io::Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(
            b.as_slice().try_into().expect("eight bytes taken"),
        ))
    }

    /// A count or size: a `u64` that fits `usize`.
    pub fn usize(&mut self) -> io::Result<usize> {
        usize::try_from(self.u64()?).map_err(io::Error::other)
    }

    /// An array, left where it lies in the mapping.
    pub fn array<T: Pod + Zeroable>(&mut self) -> io::Result<Array<T>> {
        let len = self.usize()?;
        let pad = self.at.next_multiple_of(ALIGN) - self.at;
        self.take(pad)?;
        let size = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| io::Error::other("array size overflows"))?;
        let bytes = self.take(size)?;
        // A mapping starts on a page, and arrays on a multiple of `ALIGN` in the file, so this
        // holds for every `T` up to 64-byte alignment; checked, not assumed.
        bytemuck::try_cast_slice::<u8, T>(&bytes)
            .map_err(|e| io::Error::other(format!("array not aligned: {e}")))?;
        Ok(Array(Values::Mapped {
            bytes,
            _type: std::marker::PhantomData,
        }))
    }
}

/// The file's bytes, mapped read-only; an empty file gives no bytes.
fn map(path: &Path) -> io::Result<OwnedBytes> {
    crate::x86::map::map(path)
}

/// `Err` unless `ok`: a file whose sizes do not agree with each other.
pub fn check(ok: bool, what: &str) -> io::Result<()> {
    if ok {
        Ok(())
    } else {
        Err(io::Error::other(format!("{what}: sizes do not agree")))
    }
}
