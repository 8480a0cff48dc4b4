//! Which bytes of this process's memory are mapped by 2 MiB pages (one PMD
//! each), as Linux reports them through `PAGEMAP_SCAN` (an ioctl on
//! `/proc/self/pagemap`, Linux 6.7 and later).
//!
//! The loader asks this of a model file's mapping: where the page cache
//! holds the file in 2 MiB folios (ext4 from 6.16, xfs earlier) a read maps
//! a whole folio with one TLB entry, and a copy of those bytes onto huge
//! pages would gain a decode nothing; the other blocks it replaces by such
//! copies in place (`AnonymousCopy`). Where the kernel cannot say (older
//! kernels) the answer is `None` and the loader copies whole matrices.

/// One 2 MiB page: the size of a PMD mapping on x86-64 and on aarch64 with
/// 4 KiB pages.
pub const HUGE: usize = 2 << 20;

/// How many of the bytes in `[lo, hi)` lie in 2 MiB mappings now (`None`
/// where the kernel cannot say). Looks at present mappings only: pages not
/// yet faulted in count as not huge.
pub fn huge_mapped_bytes(lo: usize, hi: usize) -> Option<usize> {
    if hi <= lo {
        return Some(0);
    }
    let regions = huge_regions(lo / HUGE * HUGE, hi.next_multiple_of(HUGE))?;
    Some(overlap(&regions, lo, hi))
}

/// The 2 MiB-mapped ranges within `[lo, hi)` (2 MiB-aligned bounds), in
/// order; `None` where the kernel cannot say.
pub fn huge_regions(lo: usize, hi: usize) -> Option<Vec<(usize, usize)>> {
    #[cfg(target_os = "linux")]
    {
        scan::huge_regions(lo, hi)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (lo, hi);
        None
    }
}

/// A private anonymous copy of `len` bytes (a multiple of 2 MiB) on a
/// 2 MiB-aligned range, on huge pages where the system gives them, made
/// aside to be moved over the bytes it copies (`move_over`); unmapped on
/// drop where it was not.
#[cfg(target_os = "linux")]
pub struct AnonymousCopy {
    /// the scratch mapping (`len` + 2 MiB, to align the copy in it)
    scratch: usize,
    scratch_len: usize,
    /// the copy, 2 MiB-aligned inside the scratch mapping
    copy: usize,
    len: usize,
    moved: bool,
}

#[cfg(target_os = "linux")]
impl AnonymousCopy {
    /// Copies `[at, at + len)` (readable memory; `len` a multiple of 2 MiB)
    /// onto fresh anonymous memory (`thp`: asked for huge pages).
    ///
    /// # Safety
    ///
    /// `[at, at + len)` must be readable for the whole call.
    pub unsafe fn new(at: usize, len: usize, thp: bool) -> Option<AnonymousCopy> {
        debug_assert!(len.is_multiple_of(HUGE) && len > 0);
        let scratch_len = len.checked_add(HUGE)?;
        // SAFETY: a fresh anonymous private mapping, checked against
        // MAP_FAILED, owned by the value returned (unmapped by its drop or
        // around the moved range); the copy reads [at, at + len), readable
        // by this fn's contract, and writes inside the new mapping.
        unsafe {
            let scratch = libc::mmap(
                std::ptr::null_mut(),
                scratch_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if scratch == libc::MAP_FAILED {
                return None;
            }
            let copy = (scratch as usize).next_multiple_of(HUGE);
            if thp {
                libc::madvise(copy as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
            std::ptr::copy_nonoverlapping(at as *const u8, copy as *mut u8, len);
            Some(AnonymousCopy { scratch: scratch as usize, scratch_len, copy, len, moved: false })
        }
    }

    /// Moves the copy, read-only, over `[at, at + len)` by `mremap`, which
    /// swaps the page tables at once: a concurrent reader sees the old
    /// bytes or the copy, the same bytes. Returns false, the range
    /// unchanged, where a step fails.
    ///
    /// # Safety
    ///
    /// `[at, at + len)` must be 2 MiB-aligned and wholly inside a mapping
    /// of this process whose bytes there are the ones copied and that no
    /// one writes or unmaps meanwhile; after the move, that range is this
    /// anonymous copy (unmapped with the mapping it replaced a part of).
    pub unsafe fn move_over(mut self, at: usize) -> bool {
        // SAFETY: the copy is inside the scratch mapping this value owns;
        // the destination is as this fn's contract says.
        unsafe {
            self.moved = libc::mprotect(self.copy as *mut libc::c_void, self.len, libc::PROT_READ) == 0
                && libc::mremap(
                    self.copy as *mut libc::c_void,
                    self.len,
                    self.len,
                    libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                    at as *mut libc::c_void,
                ) != libc::MAP_FAILED;
        }
        self.moved
    }
}

#[cfg(target_os = "linux")]
impl Drop for AnonymousCopy {
    fn drop(&mut self) {
        let (s, end) = (self.scratch, self.scratch + self.scratch_len);
        // SAFETY: the scratch mapping is this value's; once the copy was
        // moved out, only its two ends around the copy's old place remain.
        unsafe {
            if !self.moved {
                libc::munmap(s as *mut libc::c_void, self.scratch_len);
                return;
            }
            if self.copy > s {
                libc::munmap(s as *mut libc::c_void, self.copy - s);
            }
            if end > self.copy + self.len {
                libc::munmap((self.copy + self.len) as *mut libc::c_void, end - self.copy - self.len);
            }
        }
    }
}

/// The bytes of `[lo, hi)` covered by `regions` (disjoint `[start, end)`
/// ranges).
pub fn overlap(regions: &[(usize, usize)], lo: usize, hi: usize) -> usize {
    regions.iter().map(|&(s, e)| e.min(hi).saturating_sub(s.max(lo))).sum()
}

#[cfg(target_os = "linux")]
mod scan {
    use std::os::fd::AsRawFd;

    /// `struct page_region` of `<linux/fs.h>`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct PageRegion {
        start: u64,
        end: u64,
        categories: u64,
    }

    /// `struct pm_scan_arg` of `<linux/fs.h>` (96 bytes).
    #[repr(C)]
    struct PmScanArg {
        size: u64,
        flags: u64,
        start: u64,
        end: u64,
        walk_end: u64,
        vec: u64,
        vec_len: u64,
        max_pages: u64,
        category_inverted: u64,
        category_mask: u64,
        category_anyof_mask: u64,
        return_mask: u64,
    }

    /// `PAGE_IS_HUGE`: a PMD (or hugetlb) mapping.
    const PAGE_IS_HUGE: u64 = 1 << 6;
    /// `_IOWR('f', 16, struct pm_scan_arg)`
    const PAGEMAP_SCAN: u64 = (3 << 30) | ((std::mem::size_of::<PmScanArg>() as u64) << 16) | ((b'f' as u64) << 8) | 16;

    /// The huge-mapped ranges within `[lo, hi)` (page-aligned), in order.
    pub fn huge_regions(lo: usize, hi: usize) -> Option<Vec<(usize, usize)>> {
        let pagemap = std::fs::File::open("/proc/self/pagemap").ok()?;
        let mut out = Vec::new();
        let mut buf = [PageRegion::default(); 256];
        let mut start = lo as u64;
        while start < hi as u64 {
            let mut arg = PmScanArg {
                size: std::mem::size_of::<PmScanArg>() as u64,
                flags: 0,
                start,
                end: hi as u64,
                walk_end: 0,
                vec: buf.as_mut_ptr() as u64,
                vec_len: buf.len() as u64,
                max_pages: 0,
                category_inverted: 0,
                category_mask: PAGE_IS_HUGE,
                category_anyof_mask: 0,
                return_mask: PAGE_IS_HUGE,
            };
            // the request's C type is `unsigned long` in glibc, `int` in
            // musl: the same 32 bits either way
            let request = PAGEMAP_SCAN as _;
            // SAFETY: `arg` is a valid pm_scan_arg whose `vec` points at
            // `buf`, `vec_len` entries long, which the kernel fills; the
            // scan only reads this process's page tables. An older kernel
            // fails the ioctl (ENOTTY / EINVAL): `None`.
            let n = unsafe { libc::ioctl(pagemap.as_raw_fd(), request, &mut arg) };
            let n = usize::try_from(n).ok()?;
            out.extend(buf.iter().take(n).map(|r| (r.start as usize, r.end as usize)));
            if arg.walk_end <= start {
                return None; // no progress: not a kernel we understand
            }
            start = arg.walk_end;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_counts_only_the_bytes_inside_the_range() {
        let r = [(0, 100), (200, 300), (400, 500)];
        assert_eq!(overlap(&r, 0, 500), 300);
        assert_eq!(overlap(&r, 50, 250), 100);
        assert_eq!(overlap(&r, 100, 200), 0);
        assert_eq!(overlap(&r, 450, 1000), 50);
        assert_eq!(overlap(&[], 0, 1000), 0);
    }

    /// An anonymous mapping asked for huge pages and written: the scan's
    /// count must equal what `/proc/self/smaps` says of that mapping
    /// (`AnonHugePages`), whether or not the system gave huge pages.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_scan_agrees_with_smaps() {
        let len = 4 * HUGE;
        // SAFETY: a fresh anonymous private mapping, checked below, written
        // only within its length and unmapped at the end.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len + HUGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let base = (p as usize).next_multiple_of(HUGE); // 2 MiB-aligned
            libc::madvise(base as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            for i in (0..len).step_by(4096) {
                *((base + i) as *mut u8) = 1;
            }
            let scanned = huge_mapped_bytes(base, base + len);
            let part = huge_mapped_bytes(base + 4096, base + HUGE + 100);
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            libc::munmap(p, len + HUGE);
            let Some(scanned) = scanned else {
                eprintln!("PAGEMAP_SCAN not supported by this kernel: nothing to compare");
                return;
            };
            // the smaps entry of the VMA holding `base`
            let mut anon_huge = None;
            let mut inside = false;
            for line in smaps.lines() {
                if let Some((range, _)) = line.split_once(' ').filter(|(r, _)| r.contains('-')) {
                    let (a, b) = range.split_once('-').unwrap_or(("", ""));
                    if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                        inside = a <= base && base < b;
                        continue;
                    }
                }
                if inside && line.starts_with("AnonHugePages:") {
                    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
                    anon_huge = Some(kb * 1024);
                }
            }
            assert_eq!(Some(scanned), anon_huge, "PAGEMAP_SCAN against smaps");
            assert!(scanned % HUGE == 0 && scanned <= len);
            // a range that starts and ends inside huge pages counts only
            // its own bytes
            if scanned == len {
                assert_eq!(part, Some(HUGE - 4096 + 100));
            }
        }
    }
}
