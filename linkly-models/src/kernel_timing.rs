//! The encoder's matrix kernels timed against gemm's f32 product, for `cargo xtask bench
//! kernels`. Not API: hidden from the docs, here so that the benchmark reaches kernels that are
//! private to the crate.

use candle_core::{Device, Tensor};

use crate::{amx, int8, int16};

/// A kernel of the encoder's linear layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `int16.rs`: int16 weights and activations, exact int32 sums.
    Int16,
    /// `x86/int8.rs`: AVX-512 VNNI, int8 weights.
    Int8Vnni,
    /// `x86/amx.rs`: AMX tiles, bf16.
    AmxBf16,
}

impl Kernel {
    /// Every kernel, in the order the benchmark prints them.
    pub const ALL: [Kernel; 3] = [Kernel::Int16, Kernel::Int8Vnni, Kernel::AmxBf16];

    /// Its name in the benchmark's table.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Int16 => "int16",
            Kernel::Int8Vnni => "int8 vnni",
            Kernel::AmxBf16 => "amx bf16",
        }
    }

    /// Whether this CPU runs it.
    pub fn supported(self) -> bool {
        match self {
            Kernel::Int16 => int16::supported(),
            Kernel::Int8Vnni => int8::supported(),
            Kernel::AmxBf16 => amx::supported(),
        }
    }

    /// `w` (`k × n`, row-major) prepared once; its product `x · w` for `rows` rows.
    fn prepare(self, w: &[f32], k: usize, n: usize) -> Option<Product> {
        Some(match self {
            Kernel::Int16 => {
                let q = int16::Int16Linear::new(w, k, n)?;
                Box::new(move |x, rows| q.forward(x, rows))
            }
            Kernel::Int8Vnni => {
                let q = int8::QuantLinear::new(w, k, n)?;
                Box::new(move |x, rows| q.forward(x, rows))
            }
            Kernel::AmxBf16 => {
                let q = amx::AmxLinear::new(w, k, n)?;
                Box::new(move |x, rows| q.forward(x, rows))
            }
        })
    }
}

type Product = Box<dyn Fn(&[f32], usize) -> Vec<f32> + Send + Sync>;

/// all-MiniLM-L6-v2's shapes `rows × k × n`: a batch's 4,000 rows, a query's 12.
pub const SHAPES: [(usize, usize, usize); 5] = [
    (4000, 384, 1152),
    (4000, 384, 1536),
    (4000, 1536, 384),
    (12, 384, 1152),
    (12, 1536, 384),
];

/// One shape's timing: seconds per product.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// `rows × k × n`.
    pub shape: (usize, usize, usize),
    /// The kernel on all cores.
    pub ours: f64,
    /// The kernel on one thread.
    pub one_thread: f64,
    /// gemm's f32 product (candle's matmul) on all cores.
    pub gemm: f64,
}

/// Times `kernel` against gemm's f32 product on `shape`, each the mean of 10 products (500 for
/// a query's few rows) after one to warm up; `None` when this CPU does not run the kernel.
pub fn against_gemm(kernel: Kernel, shape: (usize, usize, usize)) -> Option<Timing> {
    let (rows, k, n) = shape;
    if !kernel.supported() {
        return None;
    }
    let w: Vec<f32> = (0..k * n)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let x: Vec<f32> = (0..rows * k)
        .map(|i| ((i * 104729) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let product = kernel.prepare(&w, k, n)?;
    let wt = Tensor::from_vec(w, (k, n), &Device::Cpu).ok()?;
    let xt = Tensor::from_vec(x.clone(), (rows, k), &Device::Cpu).ok()?;
    let reps = if rows > 100 { 10 } else { 500 };
    let time = |f: &dyn Fn()| {
        f();
        let t = std::time::Instant::now();
        for _ in 0..reps {
            f();
        }
        t.elapsed().as_secs_f64() / reps as f64
    };
    let ours = time(&|| {
        std::hint::black_box(product(&x, rows));
    });
    let gemm = time(&|| {
        std::hint::black_box(xt.matmul(&wt).ok());
    });
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .ok()?
        .install(|| {
            time(&|| {
                std::hint::black_box(product(&x, rows));
            })
        });
    Some(Timing {
        shape,
        ours,
        one_thread,
        gemm,
    })
}
