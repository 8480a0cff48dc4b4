//! A growable byte buffer whose start is on a 64-byte cache line.
//!
//! Why: the row kernels load whole 64-byte vectors from activation rows whose
//! stride is a multiple of 64 bytes (an F16 product's rows are 6·cols bytes).
//! From a plain `Vec<u8>` (malloc: 16-byte aligned) every one of those loads
//! straddles two cache lines, which Intel cores pay for with a second load
//! slot: the AVX-512 F16 prefill kernel ran at about half its speed that way
//! on a Xeon (docs/PERFORMANCE.md, sixteenth session).

/// One cache line of the buffer.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Bytes starting on a 64-byte boundary; derefs to `[u8]`.
#[derive(Default)]
pub struct AlignedBytes {
    lines: Vec<Line>,
    len: usize,
}

impl AlignedBytes {
    pub fn new() -> AlignedBytes {
        AlignedBytes::default()
    }

    /// Sets the length to `len` bytes. Bytes within the old length keep
    /// their values; the others hold zero or what an earlier, longer length
    /// left there (callers overwrite what they read). The capacity only grows.
    pub fn resize(&mut self, len: usize) {
        self.lines.resize(len.div_ceil(64), Line([0; 64]));
        self.len = len;
    }
}

impl AlignedBytes {
    /// A buffer holding the bytes of `values`.
    pub fn from_f32s(values: &[f32]) -> AlignedBytes {
        let mut b = AlignedBytes::new();
        b.f32s_sized(values.len()).copy_from_slice(values);
        b
    }

    /// The buffer as `len / 4` f32 values.
    pub fn f32s(&self) -> &[f32] {
        // SAFETY: as in `f32s_mut`, shared.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const f32, self.len / 4) }
    }

    /// The first `n` f32 values, the buffer first grown to hold them (it
    /// never shrinks here; as `resize`, values are kept, not cleared).
    pub fn f32s_sized(&mut self, n: usize) -> &mut [f32] {
        if self.len < 4 * n {
            self.resize(4 * n);
        }
        &mut self.f32s_mut()[..n]
    }

    /// The buffer as `len / 4` f32 values (its start is 64-aligned, so
    /// 4-aligned).
    pub fn f32s_mut(&mut self) -> &mut [f32] {
        // SAFETY: the start is 64-byte aligned, `len / 4` values lie within
        // the `len` initialized bytes, and every bit pattern is a valid f32.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut f32, self.len / 4) }
    }
}

impl std::ops::Deref for AlignedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `lines` holds at least `len` initialized bytes (resize), and
        // a `Line` is plain bytes with no padding.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const u8, self.len) }
    }
}

impl std::ops::DerefMut for AlignedBytes {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut u8, self.len) }
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBytes").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_cache_line_and_keeps_bytes_across_growth() {
        let mut b = AlignedBytes::new();
        assert!(b.is_empty());
        b.resize(100);
        assert_eq!(b.len(), 100);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        b[99] = 7;
        b.resize(10_000);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        assert_eq!((b[99], b[100], b[9_999]), (7, 0, 0));
        b.resize(5);
        assert_eq!(b.len(), 5);
        b.resize(12);
        let f = b.f32s_mut();
        assert_eq!(f.len(), 3);
        f[2] = 1.5;
        assert_eq!(b[8..12], 1.5f32.to_ne_bytes());
        assert_eq!(b.f32s_sized(2), &[0.0, 0.0]);
        assert_eq!(b.f32s_sized(40).len(), 40);
        assert_eq!((b.len(), b.f32s()[2]), (160, 1.5));
        assert_eq!(AlignedBytes::from_f32s(&[1.0, -2.0]).f32s(), &[1.0, -2.0]);
    }
}
