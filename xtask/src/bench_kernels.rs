//! The inner loops on their own, in-process (release build):
//!
//! - `cargo xtask bench analysis [--docs N] [--files F]`: the index's one analysis pass per
//!   document (`linkly_index::analyse_for_bench`) over the first F files (20,000) of the
//!   generated corpus of N documents (100,000), three rounds, in MB/s of text.
//! - `cargo xtask bench scan`: the vector scan at SciFact's size (10,971 chunks of 384
//!   dimensions, pseudo-random) in f32 and by 8-bit copies, p50 and p99 of 200 searches for k
//!   10 and 300 (`linkly_index::vector::ScanBench`).
//! - `cargo xtask bench kernels`: the encoder's int16, int8 VNNI and AMX bf16 products against
//!   gemm's f32 one on all-MiniLM-L6-v2's shapes, on all cores and on one
//!   (`linkly_models::kernel_timing`); a kernel this CPU lacks is said so.

use std::time::Instant;

use anyhow::bail;
use linkly_index::vector::{ScanBench, random_vectors};
use linkly_models::kernel_timing::{self, Kernel};

pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let report = match args.first().map(String::as_str) {
        Some("analysis") => analysis(&args[1..])?,
        Some("scan") => scan(),
        Some("kernels") => kernels(),
        _ => bail!("usage: cargo xtask bench analysis|scan|kernels"),
    };
    println!("{report}");
    Ok(())
}

fn analysis(args: &[String]) -> anyhow::Result<String> {
    let docs: usize = crate::arg(args, "--docs").map_or(Ok(100_000), |s| s.parse())?;
    let files: usize = crate::arg(args, "--files").map_or(Ok(20_000), |s| s.parse())?;
    let work = crate::target_dir().join("bench");
    let dir = crate::corpus::generated(&work, docs)?;
    let mut texts = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in fs_err::read_dir(&d)?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if texts.len() < files {
                texts.push(fs_err::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    let mut report = format!(
        "analysis pass over {} files of {} ({:.1} MB)\n\n| round | seconds | MB/s | term bytes |\n|---|---|---|---|\n",
        texts.len(),
        dir.display(),
        bytes as f64 / 1e6
    );
    for round in 1..=3 {
        let t = Instant::now();
        let terms: usize = texts
            .iter()
            .map(|text| linkly_index::analyse_for_bench(text))
            .sum();
        let s = t.elapsed().as_secs_f64();
        report.push_str(&format!(
            "| {round} | {s:.3} | {:.1} | {terms} |\n",
            bytes as f64 / 1e6 / s
        ));
    }
    Ok(report)
}

fn scan() -> String {
    let (dim, n) = (384, 10_971);
    let vectors = random_vectors(n, dim, 1);
    let query = vectors[7].clone();
    let mut scan = ScanBench::new(vectors);
    let mut report = format!(
        "vector scan over {n} chunks of {dim} dimensions, 200 searches each\n\n| vectors | k | p50 ms | p99 ms |\n|---|---|---|---|\n"
    );
    for coded in [false, true] {
        if coded {
            let t = Instant::now();
            scan.build_codes();
            report.push_str(&format!(
                "| 8-bit copies made in {:.1} ms | | | |\n",
                t.elapsed().as_secs_f64() * 1e3
            ));
        }
        for k in [10, 300] {
            let ms: Vec<f64> = (0..200)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(scan.search(&query, k));
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            let (p50, p99) = crate::bench::percentiles(ms);
            let kind = if coded { "8-bit copies" } else { "f32" };
            report.push_str(&format!("| {kind} | {k} | {p50:.3} | {p99:.3} |\n"));
        }
    }
    report
}

fn kernels() -> String {
    let mut report = String::from(
        "the encoder's products against gemm's f32 one (mean of 10 products, 500 for 12 rows)\n\n| kernel | rows×k×n | ms | GMAC/s | one thread GMAC/s | gemm f32 ms | gemm GMAC/s | speed-up |\n|---|---|---|---|---|---|---|---|\n",
    );
    for kernel in Kernel::ALL {
        if !kernel.supported() {
            report.push_str(&format!(
                "| {} | not run: this CPU lacks it | | | | | | |\n",
                kernel.name()
            ));
            continue;
        }
        for shape in kernel_timing::SHAPES {
            let (rows, k, n) = shape;
            let Some(t) = kernel_timing::against_gemm(kernel, shape) else {
                report.push_str(&format!(
                    "| {} | {rows}×{k}×{n} | refused | | | | | |\n",
                    kernel.name()
                ));
                continue;
            };
            let gmacs = |s: f64| (rows * k * n) as f64 / s / 1e9;
            report.push_str(&format!(
                "| {} | {rows}×{k}×{n} | {:.3} | {:.0} | {:.0} | {:.3} | {:.0} | {:.2}× |\n",
                kernel.name(),
                t.ours * 1e3,
                gmacs(t.ours),
                gmacs(t.one_thread),
                t.gemm * 1e3,
                gmacs(t.gemm),
                t.gemm / t.ours
            ));
        }
    }
    report
}
