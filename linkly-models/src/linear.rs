//! What the linear-layer kernel types share ([`crate::int8::QuantLinear`],
//! [`crate::int16::Int16Linear`], [`crate::amx::AmxLinear`], [`crate::bf16::Bf16Linear`]):
//! their shape accessors and `Debug`, the packing of their weights panel by panel, and the
//! rows each rayon task computes.

use rayon::prelude::*;

/// `inputs`, `outputs` and a `Debug` that shows the shape, for a kernel type whose fields `k`
/// and `n` are its input and output widths.
macro_rules! linear_shape {
    ($kernel:ident) => {
        impl $kernel {
            /// The input width.
            pub(crate) fn inputs(&self) -> usize {
                self.k
            }

            /// The output width.
            pub(crate) fn outputs(&self) -> usize {
                self.n
            }
        }

        impl std::fmt::Debug for $kernel {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($kernel))
                    .field("k", &self.k)
                    .field("n", &self.n)
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use linear_shape;

/// Fills `packed`, `per_panel` values a panel, with `pack(panel, its values)`: on all cores
/// for a layer's weights (`weights`, their count, at least 2^16: at load), on this thread for
/// smaller matrices (attention's, packed at each call).
pub(crate) fn pack_panels<T: Send>(
    packed: &mut [T],
    per_panel: usize,
    weights: usize,
    pack: impl Fn(usize, &mut [T]) + Sync,
) {
    let panels = packed.chunks_mut(per_panel);
    if weights >= 1 << 16 {
        panels
            .collect::<Vec<_>>()
            .into_par_iter()
            .enumerate()
            .for_each(|(p, dst)| pack(p, dst));
    } else {
        panels.enumerate().for_each(|(p, dst)| pack(p, dst));
    }
}

/// The rows of one rayon task: whole kernel calls of `call_rows` rows, several tasks per
/// thread (so a thread that finishes early takes another's).
pub(crate) fn rows_per_task(rows: usize, call_rows: usize) -> usize {
    (rows / (rayon::current_num_threads() * 4))
        .div_ceil(call_rows)
        .max(1)
        * call_rows
}

/// A product's `rows × n` output (panels of `panel` columns), computed by `block(out, first_row, panels, width,
/// first_col)` over rayon: by rows (each task all the panels of some rows, `width = n`) when
/// there are enough rows for every thread, else by panels (each task some panels of every row,
/// into a buffer of its own copied into place), so the few rows of a decoder step or a query
/// still use every core instead of streaming all the weights through one.
pub(crate) fn by_rows_or_panels(
    rows: usize,
    n: usize,
    panel: usize,
    call_rows: usize,
    block: impl Fn(&mut [f32], usize, std::ops::Range<usize>, usize, usize) + Sync,
) -> Vec<f32> {
    let threads = rayon::current_num_threads();
    let panels = n.div_ceil(panel);
    if rows >= call_rows * threads * 2 || threads == 1 || panels < 2 {
        let mut out = vec![0.0f32; rows * n];
        let per = rows_per_task(rows, call_rows);
        out.par_chunks_mut(n * per)
            .enumerate()
            .for_each(|(i, out)| block(out, i * per, 0..panels, n, 0));
        return out;
    }
    by_panels(rows, n, panel, block)
}

/// A product's `rows × n` output (panels of `panel` columns) by panels over rayon: each task
/// computes some panels of every row with `block(out, 0, panels, width, first_col)`, into a
/// buffer of its own copied into place: what [`by_rows_or_panels`] does for few rows.
pub(crate) fn by_panels(
    rows: usize,
    n: usize,
    panel: usize,
    block: impl Fn(&mut [f32], usize, std::ops::Range<usize>, usize, usize) + Sync,
) -> Vec<f32> {
    let threads = rayon::current_num_threads();
    let panels = n.div_ceil(panel);
    let mut out = vec![0.0f32; rows * n];
    let per = panels.div_ceil(threads * 2).max(1);
    let parts: Vec<(usize, usize, Vec<f32>)> = (0..panels)
        .step_by(per)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|first| {
            let last = (first + per).min(panels);
            let cols = ((last - first) * panel).min(n - first * panel);
            let mut part = vec![0.0f32; rows * cols];
            block(&mut part, 0, first..last, cols, first * panel);
            (first * panel, cols, part)
        })
        .collect();
    for (col, cols, part) in parts {
        for (r, src) in part.chunks_exact(cols).enumerate() {
            out[r * n + col..r * n + col + cols].copy_from_slice(src);
        }
    }
    out
}
