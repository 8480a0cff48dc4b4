//! Growable buffers whose start is on a 64-byte cache line: bytes
//! (`AlignedBytes`) and f32 values (`AlignedF32`).
//!
//! Why: the row kernels load whole 64-byte vectors from activation rows whose
//! stride is a multiple of 64 bytes (an F16 product's rows are 6·cols bytes).
//! From a plain `Vec<u8>` (malloc: 16-byte aligned) every one of those loads
//! straddles two cache lines, which Intel cores pay for with a second load
//! slot: the AVX-512 F16 prefill kernel ran at about half its speed that way
//! on a Xeon (docs/PERFORMANCE.md, sixteenth session). The forward pass's
//! f32 buffers (rows of 576, 1536, 64 values...) are aligned for the same
//! reason.

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

/// f32 values starting on a 64-byte boundary; derefs to `[f32]`.
#[derive(Default)]
pub struct AlignedF32 {
    lines: Vec<Line>,
    len: usize,
}

impl AlignedF32 {
    pub fn new() -> AlignedF32 {
        AlignedF32::default()
    }

    /// A buffer holding `values`.
    pub fn from_slice(values: &[f32]) -> AlignedF32 {
        let mut b = AlignedF32::new();
        b.resize(values.len(), 0.0);
        b.copy_from_slice(values);
        b
    }

    /// Sets the length to `len` values, as `Vec::resize`: values within the
    /// old length are kept, added ones are `fill`.
    pub fn resize(&mut self, len: usize, fill: f32) {
        let old = self.len;
        self.lines.resize(len.div_ceil(16), Line([0; 64]));
        self.len = len;
        if len > old {
            self[old..].fill(fill);
        }
    }

    /// Shortens the buffer to `len` values (no effect if it is shorter).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

impl std::ops::Deref for AlignedF32 {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: `lines` holds at least 4·`len` initialized bytes (resize),
        // its start is 64-aligned (so 4-aligned), and every bit pattern is a
        // valid f32.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const f32, self.len) }
    }
}

impl std::ops::DerefMut for AlignedF32 {
    fn deref_mut(&mut self) -> &mut [f32] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut f32, self.len) }
    }
}

impl std::fmt::Debug for AlignedF32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedF32").field("len", &self.len).finish()
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
    }

    #[test]
    fn f32_buffer_starts_on_a_cache_line_and_resizes_as_a_vec() {
        let mut b = AlignedF32::from_slice(&[1.0, -2.0]);
        assert_eq!(&b[..], &[1.0, -2.0]);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        b.resize(40, 7.0);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        assert_eq!((b.len(), b[1], b[2], b[39]), (40, -2.0, 7.0, 7.0));
        b.truncate(3);
        assert_eq!(b.len(), 3);
        b.resize(5, 0.5);
        assert_eq!(&b[..], &[1.0, -2.0, 7.0, 0.5, 0.5]);
        b.truncate(10);
        assert_eq!(b.len(), 5);
    }
}
