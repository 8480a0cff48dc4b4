//! Growable buffers whose start is on a 64-byte cache line: bytes
//! (`AlignedBytes`) and f32 values (`AlignedF32`).
//!
//! Why: the row kernels load whole 64-byte vectors from activation rows whose
//! stride is a multiple of 64 bytes (an F16 product's rows are 6·cols bytes).
//! From a plain `Vec<u8>` (malloc: 16-byte aligned) every one of those loads
//! straddles two cache lines, which Intel cores pay for with a second load
//! slot: the AVX-512 F16 prefill kernel ran at about half its speed that
//! way. The forward pass's f32 buffers (rows of 576, 1536, 64 values...) are
//! aligned for the same reason.

/// One cache line of a buffer.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Element types of an [`Aligned`] buffer.
///
/// # Safety
/// Every bit pattern is a valid value, and the size divides 64 (so a line
/// holds whole values and its start is aligned for them).
pub unsafe trait Plain: Copy + Default + 'static {}
// SAFETY: any byte is a u8; size 1.
unsafe impl Plain for u8 {}
// SAFETY: any 4 bytes are an f32; size 4.
unsafe impl Plain for f32 {}

/// Values starting on a 64-byte boundary; derefs to `[T]`.
pub struct Aligned<T: Plain> {
    lines: Vec<Line>,
    len: usize,
    _values: std::marker::PhantomData<T>,
}

/// Bytes from a cache line (the matmul's activations).
pub type AlignedBytes = Aligned<u8>;
/// f32 values from a cache line (the forward pass's buffers).
pub type AlignedF32 = Aligned<f32>;

impl<T: Plain> Default for Aligned<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Plain> Aligned<T> {
    const PER_LINE: usize = 64 / std::mem::size_of::<T>();

    pub const fn new() -> Self {
        Aligned { lines: Vec::new(), len: 0, _values: std::marker::PhantomData }
    }

    /// A buffer holding `values`.
    pub fn from_slice(values: &[T]) -> Self {
        let mut b = Self::new();
        b.resize(values.len(), T::default());
        b.copy_from_slice(values);
        b
    }

    /// Sets the length to `len` values, as `Vec::resize`: values within the
    /// old length are kept, added ones are `fill`.
    pub fn resize(&mut self, len: usize, fill: T) {
        let old = self.len;
        self.lines.resize(len.div_ceil(Self::PER_LINE), Line([0; 64]));
        self.len = len;
        if len > old {
            self[old..].fill(fill);
        }
    }

    /// The first `len` values, the buffer grown to hold them if it is
    /// shorter; it never shrinks, so a buffer that serves sizes in turn is
    /// not zeroed again each time it grows back. Values kept from earlier
    /// use are not cleared (a new part is the default value).
    pub fn grown_to(&mut self, len: usize) -> &mut [T] {
        if self.len < len {
            self.resize(len, T::default());
        }
        &mut self[..len]
    }

    /// Shortens the buffer to `len` values (no effect if it is shorter).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
}

impl<T: Plain> std::ops::Deref for Aligned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `lines` holds at least `len` values' bytes (resize), its
        // start is 64-aligned (so aligned for T), and any bit pattern is a T
        // (`Plain`).
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr() as *const T, self.len) }
    }
}

impl<T: Plain> std::ops::DerefMut for Aligned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr() as *mut T, self.len) }
    }
}

impl<T: Plain> std::fmt::Debug for Aligned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aligned").field("len", &self.len).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_start_on_a_cache_line_and_keep_values_across_growth() {
        let mut b = AlignedBytes::new();
        assert!(b.is_empty());
        b.resize(100, 0);
        assert_eq!(b.len(), 100);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        b[99] = 7;
        b.resize(10_000, 3);
        assert_eq!(b.as_ptr() as usize % 64, 0);
        assert_eq!((b[99], b[100], b[9_999]), (7, 3, 3));
    }

    #[test]
    fn f32s_start_on_a_cache_line_and_resize_as_a_vec() {
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

    #[test]
    fn grown_to_grows_but_never_shrinks() {
        let mut b = AlignedF32::from_slice(&[1.0, 2.0, 3.0]);
        assert_eq!(b.grown_to(2), &[1.0, 2.0]);
        assert_eq!(b.len(), 3);
        b.grown_to(5)[4] = 9.0;
        assert_eq!(&b[..], &[1.0, 2.0, 3.0, 0.0, 9.0]);
        assert_eq!(b.as_ptr() as usize % 64, 0);
    }
}
