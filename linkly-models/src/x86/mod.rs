//! Matrix kernels that need `unsafe` (x86-64 instruction sets, and one checked call into the
//! `gemm` crate), and the read-only memory map of prepared files: the workspace's one module
//! allowed it.
//!
//! - [`int8`]: int8 products on AVX-512 VNNI (`vpdpbusd`), opt-in (`LINKLY_EMBED_ENGINE=int8`).
//! - [`amx`]: bf16 products on AMX tiles (`tdpbf16ps`), the default where the CPU has them.
//! - [`bf16`]: bf16 products on AVX-512 BF16 (`vdpbf16ps`), for CPUs with it but no AMX.
//! - [`matmul`]: f32 products through the `gemm` crate called directly (raw pointers), on every
//!   architecture, since candle's matmul reads `/proc/cpuinfo` at each call.
//! - [`map`]: a file mapped read-only ([`crate::prepared`]'s weights and vector snapshots), on
//!   every platform.
//!
//! Why `unsafe`: the AVX-512 loads and stores take raw pointers, the AMX instructions have no
//! stable intrinsics (they are written with `asm!`) and need the kernel's permission (a system
//! call), and functions compiled for those instruction sets may only be called where the CPU
//! has them; `gemm`'s own entry point takes raw pointers and strides, which [`matmul::product`]
//! checks against its slices before the call; a memory map is sound only while its file does not change, which [`map::map`] gets from prepared files being renamed into place, never rewritten. Each kernel's type ([`int8::QuantLinear`], [`amx::AmxLinear`], [`bf16::Bf16Linear`]) can only be built
//! where its instructions run (`None` elsewhere), and checks every slice length its pointer
//! arithmetic relies on before a kernel runs; each `unsafe` block says why it is sound. Tests
//! hold each kernel to a scalar reference of the same arithmetic and to the exact f32 product,
//! and the encoder's vectors to the f32 ones on the real model (`embedder/mod.rs`).

#![allow(unsafe_code)]

/// The mask of the first `n` of 16 lanes (all 16 from 16 on): the live part of a panel's
/// register, or of a row's last 16 values, in the AVX-512 kernels ([`bf16`], [`int8`]).
#[cfg(target_arch = "x86_64")]
fn first_lanes(n: usize) -> std::arch::x86_64::__mmask16 {
    if n >= 16 { 0xffff } else { (1u16 << n) - 1 }
}

/// `tile::<M>(args)` for the `M = $rows` rows of a kernel call (1 to 6), the row count the
/// AVX-512 kernels ([`bf16`], [`int8`]) are compiled for; the caller's `unsafe` block says why
/// the call is sound.
macro_rules! call_with_rows {
    ($rows:expr, $($tile:ident)::+, ($($arg:expr),* $(,)?)) => {
        match $rows {
            6 => $($tile)::+::<6>($($arg),*),
            5 => $($tile)::+::<5>($($arg),*),
            4 => $($tile)::+::<4>($($arg),*),
            3 => $($tile)::+::<3>($($arg),*),
            2 => $($tile)::+::<2>($($arg),*),
            _ => $($tile)::+::<1>($($arg),*),
        }
    };
}
use call_with_rows;

pub(crate) mod amx;
pub(crate) mod bf16;
pub(crate) mod int8;
pub(crate) mod map;
pub(crate) mod matmul;
