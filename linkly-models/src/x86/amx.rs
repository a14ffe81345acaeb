//! bf16 matrix products on AMX tiles (Intel Sapphire Rapids and later) for the encoder's
//! linear layers.
//!
//! A layer's weights are rounded to bf16 once, at load, and packed into the 1 KiB tiles
//! `tdpbf16ps` takes (16 pairs of inputs × 16 columns, each column's two weights side by side);
//! the activations are rounded to bf16 at each call. One `tdpbf16ps` multiplies a 16 × 32
//! tile of activations by a 32 × 16 tile of weights into 16 × 16 f32 sums: 8,192 multiply-adds
//! per instruction, where an AVX-512 FMA does 16. Sums are kept in f32, so the only error is
//! the rounding of each input to 8 significant bits: the vectors stay within a cosine of
//! 0.9999 of the f32 ones on the real model (a test in `embedder/mod.rs` checks it).
//!
//! Each kernel call computes 32 rows × 32 columns (four accumulator tiles, two tiles of
//! activations, two of weights: the eight tile registers) over the whole input width, in one
//! `asm!` block that loads its tile configuration, zeroes, multiplies, stores and releases the
//! tiles, so no tile state lives outside it.

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::linear::pack_panels;
use crate::prepared::{Array, Reader, Writer, check};

thread_local! {
    /// A work unit's rows in bf16, tile by tile (reused: at most 256 rows of the widest input).
    static PACKED: std::cell::RefCell<Vec<u16>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// bf16 values per tile row (64 bytes): the inputs one `tdpbf16ps` consumes.
const TILE_K: usize = 32;
/// Rows and columns of one kernel call: 2 × 2 tiles of 16.
const BLOCK: usize = 32;
/// Bytes of one packed weight tile: 16 pairs of inputs × 16 columns × 2 × 2 bytes.
const TILE_BYTES: usize = 1024;

/// What [`AmxLinear::forward_then`] does to each block of output rows: `(first row, rows)`.
pub(crate) type Then<'a> = &'a (dyn Fn(usize, &mut [f32]) + Sync);

/// A linear layer's weights `[k, n]`, rounded to bf16 and packed into tiles.
pub(crate) struct AmxLinear {
    k: usize,
    n: usize,
    /// `k` rounded up to whole tiles (zeros past `k`).
    kp: usize,
    /// `n` rounded up to whole blocks (zero columns past `n`).
    np: usize,
    /// `[column block][input tile][half (2)][pair (16)][column (16)][2]`: per block of 32
    /// columns and tile of 32 inputs, its two weight tiles side by side (2 KiB).
    packed: Array<u16>,
}

crate::linear::linear_shape!(AmxLinear);

/// `x` rounded to the nearest bf16, ties to even (inputs here are finite).
fn bf16(x: f32) -> u16 {
    let b = x.to_bits();
    ((b + 0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

/// The bf16 value `b` as f32.
#[cfg(test)]
fn f32_of(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// Whether this CPU and kernel run the kernels: AMX-TILE and AMX-BF16, and the kernel lets
/// this process use the tile registers (asked once).
pub(crate) fn supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(tiles::enable)
}

impl AmxLinear {
    /// Rounds and packs `w`, `[k, n]` row-major (input-major, as `x · w`); `None` when this
    /// CPU cannot run the kernels or the shape is empty.
    pub(crate) fn new(w: &[f32], k: usize, n: usize) -> Option<AmxLinear> {
        Self::build(w, k, n, false)
    }

    /// [`AmxLinear::new`] from the weights stored column by column: `wt` is `[n, k]`, each
    /// output's `k` weights side by side (attention's keys, whose transpose is multiplied).
    pub(crate) fn new_transposed(wt: &[f32], k: usize, n: usize) -> Option<AmxLinear> {
        Self::build(wt, k, n, true)
    }

    fn build(w: &[f32], k: usize, n: usize, transposed: bool) -> Option<AmxLinear> {
        if !supported() || k == 0 || n == 0 || w.len() != k * n {
            return None;
        }
        let kp = k.div_ceil(TILE_K) * TILE_K;
        let np = n.div_ceil(BLOCK) * BLOCK;
        let ktiles = kp / TILE_K;
        let mut packed = vec![0u16; np / BLOCK * ktiles * TILE_BYTES];
        // Within a column block's tiles, weight (row r, column c) goes to its input tile and
        // half (16 columns), then pair of inputs · 32 + column · 2 + r % 2.
        let row_at = |r: usize| (r / TILE_K) * TILE_BYTES + ((r % TILE_K) / 2) * 32 + r % 2;
        let col_at = |c: usize| ((c % BLOCK) / 16) * 512 + (c % 16) * 2;
        let pack = |block: usize, dst: &mut [u16]| {
            let cols = block * BLOCK..((block + 1) * BLOCK).min(n);
            if transposed {
                for c in cols {
                    let at = col_at(c);
                    for (r, &v) in w[c * k..(c + 1) * k].iter().enumerate() {
                        dst[row_at(r) + at] = bf16(v);
                    }
                }
            } else {
                for r in 0..k {
                    let at = row_at(r);
                    for (c, &v) in cols.clone().zip(&w[r * n + cols.start..r * n + cols.end]) {
                        dst[at + col_at(c)] = bf16(v);
                    }
                }
            }
        };
        pack_panels(&mut packed, ktiles * TILE_BYTES, k * n, pack);
        Some(AmxLinear {
            k,
            n,
            kp,
            np,
            packed: packed.into(),
        })
    }

    /// Writes the packed weights ([`crate::prepared`]).
    pub(crate) fn save(&self, w: &mut Writer) -> std::io::Result<()> {
        w.u64(self.k as u64)?;
        w.u64(self.n as u64)?;
        w.slice(&self.packed)
    }

    /// Reads what [`AmxLinear::save`] wrote; `None` when this CPU cannot run the kernels.
    /// The kernels' pointer arithmetic relies on `packed`'s length: it is checked here
    /// against the one [`AmxLinear::new`] makes for the same shape.
    pub(crate) fn load(r: &mut Reader) -> std::io::Result<Option<AmxLinear>> {
        let (k, n) = (r.usize()?, r.usize()?);
        let packed: Array<u16> = r.array()?;
        let kp = k.div_ceil(TILE_K) * TILE_K;
        let np = n.div_ceil(BLOCK) * BLOCK;
        check(
            k > 0 && n > 0 && packed.len() == np / BLOCK * (kp / TILE_K) * TILE_BYTES,
            "bf16 weights",
        )?;
        if !supported() {
            return Ok(None);
        }
        Ok(Some(AmxLinear {
            k,
            n,
            kp,
            np,
            packed,
        }))
    }

    /// The output width rounded up to whole blocks of 32: the width of
    /// [`AmxLinear::forward_padded`]'s rows.
    pub(crate) fn padded_outputs(&self) -> usize {
        self.np
    }

    /// `x · w` for `x` of `rows` rows of `k` values: `[rows, n]`.
    pub(crate) fn forward(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let (n, np) = (self.n, self.np);
        let out = self.forward_padded(x, rows);
        if np == n {
            out
        } else {
            out.chunks_exact(np)
                .flat_map(|row| &row[..n])
                .copied()
                .collect()
        }
    }

    /// [`AmxLinear::forward`] with each row [`AmxLinear::padded_outputs`] wide, zeros past
    /// `n`: `[rows, np]`.
    pub(crate) fn forward_padded(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.product(x, rows, None)
    }

    /// [`AmxLinear::forward`], then `then(first, block)` on every block of whole output rows
    /// (`first` the index of its first row): on each 32-row strip as soon as it is computed,
    /// while it is still in cache, when one task computes whole rows; else on the finished
    /// product. The result is the same either way.
    pub(crate) fn forward_then(&self, x: &[f32], rows: usize, then: Then<'_>) -> Vec<f32> {
        if self.np != self.n {
            let mut out = self.forward(x, rows);
            let per = (rows / (rayon::current_num_threads() * 4)).max(1);
            out.par_chunks_mut(per * self.n)
                .enumerate()
                .for_each(|(i, block)| then(i * per, block));
            return out;
        }
        self.product(x, rows, Some(then))
    }

    /// The product, `[rows, np]`; with `then` (only when `np == n`), applied to whole rows as
    /// in [`AmxLinear::forward_then`].
    fn product(&self, x: &[f32], rows: usize, then: Option<Then<'_>>) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.k, "x must hold rows × k values");
        assert!(then.is_none() || self.np == self.n);
        let (kp, np) = (self.kp, self.np);
        let rp = rows.div_ceil(BLOCK) * BLOCK;
        let (row_blocks, col_blocks) = (rp / BLOCK, np / BLOCK);
        // Work units: runs of up to eight row blocks, rounded to bf16 into a buffer that stays
        // in cache, then one strip per row block across the unit's columns (the weights stream
        // from L2 once per strip), split by columns too when there are too few to keep every
        // core busy (a query's rows).
        let threads = rayon::current_num_threads();
        let rows_per_unit = (row_blocks / (threads * 2)).clamp(1, 8);
        let row_units = row_blocks.div_ceil(rows_per_unit);
        let col_units = if row_units >= threads * 2 {
            1
        } else {
            (threads * 2).div_ceil(row_units).clamp(1, col_blocks)
        };
        let cols_per_unit = col_blocks.div_ceil(col_units);
        let units: Vec<(usize, usize)> = (0..row_units)
            .flat_map(|r| (0..col_blocks.div_ceil(cols_per_unit)).map(move |c| (r, c)))
            .collect();
        let weights_per_block = (kp / TILE_K) * TILE_BYTES;
        let out = tiles::Out::fill(rp * np, np, |target| {
            units.par_iter().for_each(|&(ru, cu)| {
                let rb = ru * rows_per_unit..((ru + 1) * rows_per_unit).min(row_blocks);
                let cb = cu * cols_per_unit..((cu + 1) * cols_per_unit).min(col_blocks);
                let first = rb.start * BLOCK;
                let last = (rb.end * BLOCK).min(rows);
                PACKED.with_borrow_mut(|a| {
                    tiles::pack_rows(&x[first * self.k..last * self.k], self.k, kp, rb.len(), a);
                    let w = &self.packed[cb.start * weights_per_block..cb.end * weights_per_block];
                    for (i, r) in rb.enumerate() {
                        let a = &a[i * BLOCK * kp..(i + 1) * BLOCK * kp];
                        let strip = target.strip(a, kp, w, r * BLOCK, cb.start * BLOCK);
                        let count = rows.saturating_sub(r * BLOCK).min(BLOCK);
                        if let (Some(then), Some(whole)) = (then, strip)
                            && count > 0
                        {
                            then(r * BLOCK, target.whole_rows(whole, count));
                        }
                    }
                });
            });
        });
        let mut out = out;
        out.truncate(rows * np);
        if let Some(then) = then.filter(|_| cols_per_unit < col_blocks) {
            let per = (rows / (threads * 4)).max(1);
            out.par_chunks_mut(per * np)
                .enumerate()
                .for_each(|(i, block)| then(i * per, block));
        }
        out
    }

    /// The same arithmetic in plain scalar code: each input rounded to bf16, sums in f32.
    #[cfg(test)]
    fn forward_reference(&self, x: &[f32], rows: usize, w: &[f32]) -> Vec<f32> {
        let (k, n) = (self.k, self.n);
        let mut out = vec![0.0f32; rows * n];
        for r in 0..rows {
            for c in 0..n {
                let mut acc = 0.0f64;
                for i in 0..k {
                    acc += f64::from(f32_of(bf16(x[r * k + i])))
                        * f64::from(f32_of(bf16(w[i * n + c])));
                }
                out[r * n + c] = acc as f32;
            }
        }
        out
    }
}

/// What needs `unsafe`: the tile instructions (`asm!`), the system call that grants the tiles,
/// and the output written block by block without zeroing it first.
mod tiles {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{BLOCK, TILE_BYTES, TILE_K};

    /// Asks the kernel for the tile registers; true when the CPU has AMX-TILE, AMX-BF16 and
    /// AVX-512F/BW (the rounding to bf16) and the kernel granted the tiles.
    pub(super) fn enable() -> bool {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        {
            // CPUID leaf 7, sub-leaf 0, EDX: bit 22 AMX-BF16, bit 24 AMX-TILE.
            let leaf = std::arch::x86_64::__cpuid_count(7, 0);
            if leaf.edx & (1 << 22) == 0
                || leaf.edx & (1 << 24) == 0
                || !std::arch::is_x86_feature_detected!("avx512f")
                || !std::arch::is_x86_feature_detected!("avx512bw")
            {
                return false;
            }
            const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
            const XFEATURE_XTILEDATA: libc::c_long = 18;
            // SAFETY: arch_prctl with ARCH_REQ_XCOMP_PERM takes two integers and touches no
            // memory of ours; it fails (non-zero) where the kernel does not support AMX.
            let status = unsafe {
                libc::syscall(
                    libc::SYS_arch_prctl,
                    ARCH_REQ_XCOMP_PERM,
                    XFEATURE_XTILEDATA,
                )
            };
            status == 0
        }
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        {
            false
        }
    }

    /// Rounds `x` (rows of `k` values, at most `blocks` × 32 of them) to bf16 into `a` in
    /// tile order: for each block of 32 rows and tile of 32 inputs, its two halves of 16 rows
    /// side by side, 1 KiB each (the layout `tileloadd` reads at a stride of 64 bytes); zeros
    /// past `k` and past the last row.
    pub(super) fn pack_rows(x: &[f32], k: usize, kp: usize, blocks: usize, a: &mut Vec<u16>) {
        assert!(k <= kp && kp.is_multiple_of(TILE_K) && x.len() <= blocks * BLOCK * k);
        let len = blocks * BLOCK * kp;
        if a.len() < len {
            a.resize(len, 0);
        }
        let a = &mut a[..len];
        // SAFETY: `supported()` held (no `AmxLinear` exists otherwise), and AMX CPUs have
        // AVX-512F and BW (checked there too).
        unsafe { pack_rows_avx512(x, k, kp, a) }
        // The buffer is reused: zero what the rows did not write (past `k`, past the last row).
        let (rows, ktiles) = (x.len() / k, kp / TILE_K);
        for i in 0..blocks * BLOCK {
            let (block, half, r) = (i / BLOCK, (i / 16) % 2, i % 16);
            let first_tile = if i < rows { k / TILE_K } else { 0 };
            for t in first_tile..ktiles {
                let at = (((block * ktiles + t) * 2 + half) * 16 + r) * TILE_K;
                let from = if i < rows {
                    (k - t * TILE_K).min(TILE_K)
                } else {
                    0
                };
                a[at + from..at + TILE_K].fill(0);
            }
        }
    }

    /// [`pack_rows`]' loop, compiled for AVX-512 (the rounding vectorises 16 values wide).
    #[target_feature(enable = "avx512f,avx512bw")]
    fn pack_rows_avx512(x: &[f32], k: usize, kp: usize, a: &mut [u16]) {
        let ktiles = kp / TILE_K;
        for (i, row) in x.chunks_exact(k).enumerate() {
            let (block, half, r) = (i / BLOCK, (i / 16) % 2, i % 16);
            for (t, values) in row.chunks(TILE_K).enumerate() {
                let at = (((block * ktiles + t) * 2 + half) * 16 + r) * TILE_K;
                for (d, &v) in a[at..at + values.len()].iter_mut().zip(values) {
                    *d = super::bf16(v);
                }
            }
        }
    }

    /// The tile configuration: palette 1, all eight tiles 16 rows of 64 bytes.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    const CONFIG: Config = {
        let mut c = [0u8; 64];
        c[0] = 1;
        let mut t = 0;
        while t < 8 {
            c[16 + 2 * t] = 64;
            c[48 + t] = 16;
            t += 1;
        }
        Config(c)
    };

    /// Proof that a strip wrote 32 rows whole, starting at `row` (made only by [`Out::strip`]).
    pub(super) struct WholeRows {
        row: usize,
    }

    /// The output matrix, `[rows, width]` f32, written block by block from several threads.
    pub(super) struct Out {
        ptr: *mut f32,
        len: usize,
        width: usize,
        /// Values written so far.
        written: AtomicUsize,
    }

    // SAFETY: `strip` writes only the blocks it is given, and the callers give each block to
    // one thread (`forward`'s work units are disjoint).
    unsafe impl Sync for Out {}

    impl Out {
        /// A `[len / width, width]` matrix whose every 32 × 32 block `write` computes through
        /// [`Out::strip`], without zeroing it first (the product overwrites every value).
        ///
        /// # Panics
        /// When `write` left values unwritten.
        pub(super) fn fill(len: usize, width: usize, write: impl FnOnce(&Out)) -> Vec<f32> {
            assert!(width.is_multiple_of(BLOCK) && len.is_multiple_of(width * BLOCK));
            let mut v = Vec::<f32>::with_capacity(len);
            let out = Out {
                ptr: v.as_mut_ptr(),
                len,
                width,
                written: AtomicUsize::new(0),
            };
            write(&out);
            assert_eq!(out.written.into_inner(), len, "every block is written once");
            // SAFETY: the capacity is `len`; every block was stored once by `strip` (each
            // strip counts its blocks, the asserts in `strip` keep them inside the matrix,
            // and `forward` gives each block to one strip), so all `len` values are set.
            unsafe { v.set_len(len) };
            v
        }

        /// The first `count` (≤ 32) rows of a strip that [`Out::strip`] wrote whole.
        #[allow(clippy::mut_from_ref)]
        pub(super) fn whole_rows(&self, strip: WholeRows, count: usize) -> &mut [f32] {
            let row = strip.row;
            assert!(count <= BLOCK && (row + BLOCK) * self.width <= self.len);
            // SAFETY: inside the allocation (assert above; `strip` checked it too). A
            // `WholeRows` is made only by `strip`, once, after it wrote every column of rows
            // `row..row + 32`, and is consumed here: the values are initialised, and no other
            // thread touches these rows (`forward` gives each row block to one task, whose
            // next strip writes other rows) while the slice lives.
            unsafe {
                std::slice::from_raw_parts_mut(self.ptr.add(row * self.width), count * self.width)
            }
        }

        /// `out[row..row + 32][col..col + 32·m] = a · w`: `a` is 32 rows of `kp` bf16 values
        /// in tile order ([`pack_rows`]), `w` the packed tiles of `m` column blocks (each
        /// `kp / 32` pairs of 1 KiB tiles).
        ///
        /// Returns a [`WholeRows`] when the strip covered every column: its rows are done.
        #[must_use]
        pub(super) fn strip(
            &self,
            a: &[u16],
            kp: usize,
            w: &[u16],
            row: usize,
            col: usize,
        ) -> Option<WholeRows> {
            let ktiles = kp / TILE_K;
            let per_block = ktiles * TILE_BYTES;
            assert!(ktiles > 0 && kp.is_multiple_of(TILE_K) && a.len() == BLOCK * kp);
            assert!(!w.is_empty() && w.len().is_multiple_of(per_block));
            let blocks = w.len() / per_block;
            assert!(col + blocks * BLOCK <= self.width && (row + BLOCK) * self.width <= self.len);
            let ldc = self.width * 4;
            self.written
                .fetch_add(blocks * BLOCK * BLOCK, Ordering::Relaxed);
            // SAFETY: the asserts above keep every tile inside its slice: for each of the
            // `blocks ≥ 1` column blocks, the activation tiles read `a` from its start, 1 KiB
            // each (`ktiles` pairs: all of `a`); the weight tiles read the next 2 KiB of `w`
            // per input tile (`blocks` × `ktiles` × 2 KiB: all of `w`), and the stores write
            // 16 rows of 64 bytes at stride `ldc`, inside `out`'s rows `row..row + 32`,
            // columns `col..col + 32 · blocks`. The strip loads its own configuration and
            // releases the tiles, so it depends on no tile state outside it; `supported()`
            // held, so the CPU has the instructions and the kernel granted the tiles. Both
            // loops run at least once.
            unsafe {
                let c = self.ptr.add(row * self.width + col);
                std::arch::asm!(
                    "ldtilecfg [{cfg}]",
                    "3:",
                    "mov {a0}, {a}",
                    "mov {count}, {ktiles}",
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    "2:",
                    "tileloadd tmm4, [{a0} + {s64}*1]",
                    "tileloadd tmm5, [{a0} + {s64}*1 + 1024]",
                    "tileloadd tmm6, [{w} + {s64}*1]",
                    "tileloadd tmm7, [{w} + {s64}*1 + 1024]",
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    "add {a0}, 2048",
                    "add {w}, 2048",
                    "dec {count}",
                    "jnz 2b",
                    "tilestored [{c0} + {ldc}*1], tmm0",
                    "tilestored [{c0} + {ldc}*1 + 64], tmm1",
                    "tilestored [{c1} + {ldc}*1], tmm2",
                    "tilestored [{c1} + {ldc}*1 + 64], tmm3",
                    "add {c0}, 128",
                    "add {c1}, 128",
                    "dec {blocks}",
                    "jnz 3b",
                    "tilerelease",
                    cfg = in(reg) CONFIG.0.as_ptr(),
                    a = in(reg) a.as_ptr(),
                    a0 = out(reg) _,
                    s64 = in(reg) 64usize,
                    w = inout(reg) w.as_ptr() => _,
                    count = out(reg) _,
                    ktiles = in(reg) ktiles,
                    c0 = inout(reg) c => _,
                    c1 = inout(reg) c.add(16 * self.width) => _,
                    ldc = in(reg) ldc,
                    blocks = inout(reg) blocks => _,
                    options(nostack),
                );
            }
            (col == 0 && blocks * BLOCK == self.width).then_some(WholeRows { row })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_matrices::{Agreement, values};

    // The same products as the reference summed in another order (f32 against f64); bf16
    // keeps 8 significant bits: about 0.4 % per input. More than one block of 32 rows.
    crate::test_matrices::kernel_tests!(
        AmxLinear,
        reference: |q, x, rows, w| q.forward_reference(x, rows, w),
        agreement: Agreement::RowNorm,
        exact: |_| 0.01,
        more_shapes: [[33, 4, 16], [64, 64, 64]],
    );

    /// The weights packed from their transpose multiply the same, and the padded rows hold
    /// the same values, then zeros.
    #[test]
    fn transposed_weights_and_padded_rows_agree() {
        if !supported() {
            assert!(AmxLinear::new_transposed(&[1.0; 16], 4, 4).is_none());
            return;
        }
        for &(rows, k, n) in &[(5, 32, 33), (40, 70, 64), (1, 3, 100)] {
            let w = values(k * n, (k + n) as u64, false);
            let x = values(rows * k, rows as u64, true);
            let mut wt = vec![0.0; k * n];
            for r in 0..k {
                for c in 0..n {
                    wt[c * k + r] = w[r * n + c];
                }
            }
            let plain = AmxLinear::new(&w, k, n).unwrap();
            let transposed = AmxLinear::new_transposed(&wt, k, n).unwrap();
            let out = plain.forward(&x, rows);
            assert_eq!(out, transposed.forward(&x, rows), "{rows}×{k}×{n}");
            let np = plain.padded_outputs();
            assert_eq!(np, n.div_ceil(32) * 32);
            let padded = plain.forward_padded(&x, rows);
            assert_eq!(padded.len(), rows * np);
            for (wide, narrow) in padded.chunks_exact(np).zip(out.chunks_exact(n)) {
                assert_eq!(&wide[..n], narrow);
                assert!(wide[n..].iter().all(|&v| v == 0.0));
            }
        }
    }

    /// `forward_then` runs its step once on every row, with the row's index, on strips of a
    /// batch as on a query's few rows and on padded widths.
    #[test]
    fn the_step_after_the_product_sees_every_row_once() {
        if !supported() {
            return;
        }
        for &(rows, k, n) in &[(300, 64, 96), (5, 64, 384), (70, 32, 40), (1, 8, 32)] {
            let w = values(k * n, 7, false);
            let x = values(rows * k, 11, true);
            let q = AmxLinear::new(&w, k, n).unwrap();
            let mut want = q.forward(&x, rows);
            for (r, row) in want.chunks_exact_mut(n).enumerate() {
                for v in row {
                    *v = *v * 2.0 + r as f32;
                }
            }
            let got = q.forward_then(&x, rows, &|first, block: &mut [f32]| {
                for (i, row) in block.chunks_exact_mut(n).enumerate() {
                    for v in row {
                        *v = *v * 2.0 + (first + i) as f32;
                    }
                }
            });
            assert_eq!(got, want, "{rows}×{k}×{n}");
        }
    }
}
