//! CPU features detected at run time (reported by llama_print_system_info;
//! the kernels of a later issue choose their code path from the same facts).

/// `(name, present)` for every SIMD feature minfer knows of on this target.
pub fn features() -> Vec<(&'static str, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        vec![
            ("SSE3", std::arch::is_x86_feature_detected!("sse3")),
            ("SSSE3", std::arch::is_x86_feature_detected!("ssse3")),
            ("AVX", std::arch::is_x86_feature_detected!("avx")),
            ("AVX2", std::arch::is_x86_feature_detected!("avx2")),
            ("F16C", std::arch::is_x86_feature_detected!("f16c")),
            ("FMA", std::arch::is_x86_feature_detected!("fma")),
            ("BMI2", std::arch::is_x86_feature_detected!("bmi2")),
            ("AVX512", std::arch::is_x86_feature_detected!("avx512f")),
            ("AVX512_VNNI", std::arch::is_x86_feature_detected!("avx512vnni")),
        ]
    }
    #[cfg(target_arch = "aarch64")]
    {
        vec![
            ("NEON", std::arch::is_aarch64_feature_detected!("neon")),
            ("DOTPROD", std::arch::is_aarch64_feature_detected!("dotprod")),
            ("FP16_VA", std::arch::is_aarch64_feature_detected!("fp16")),
        ]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Vec::new()
    }
}

/// Bytes of this CPU's (per-core) L2 cache, where the C library reports it
/// (glibc on Linux reads it from `cpuid`); `None` elsewhere.
pub fn l2_cache_bytes() -> Option<usize> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_LEVEL2_CACHE_SIZE) };
        usize::try_from(n).ok().filter(|&n| n > 0)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}
