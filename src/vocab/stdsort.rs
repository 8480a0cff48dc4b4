//! libstdc++'s `std::sort` (GCC 12: introsort, median-of-three pivot,
//! heapsort past the depth limit, final insertion sort), step for step.
//!
//! The reference sorts its special-token cache by text length with
//! `std::sort`, which is not stable: the order among tokens of equal length
//! is whatever this algorithm leaves, and it decides which of two
//! overlapping equal-length special tokens splits the text first.

const THRESHOLD: usize = 16;

pub fn sort_by<T: Copy>(v: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    let n = v.len();
    if n > 1 {
        let lg = (usize::BITS - 1 - n.leading_zeros()) as usize;
        introsort_loop(v, 0, n, lg * 2, less);
        final_insertion_sort(v, 0, n, less);
    }
}

fn introsort_loop<T: Copy>(
    v: &mut [T],
    first: usize,
    mut last: usize,
    mut depth: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    while last - first > THRESHOLD {
        if depth == 0 {
            heap_sort(v, first, last, less);
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, first, last, less);
        introsort_loop(v, cut, last, depth, less);
        last = cut;
    }
}

fn partition_pivot<T: Copy>(v: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(v, first, first + 1, mid, last - 1, less);
    unguarded_partition(v, first + 1, last, first, less)
}

fn move_median_to_first<T: Copy>(
    v: &mut [T],
    result: usize,
    a: usize,
    b: usize,
    c: usize,
    less: &impl Fn(&T, &T) -> bool,
) {
    let m = if less(&v[a], &v[b]) {
        if less(&v[b], &v[c]) {
            b
        } else if less(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if less(&v[a], &v[c]) {
        a
    } else if less(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(result, m);
}

fn unguarded_partition<T: Copy>(
    v: &mut [T],
    mut first: usize,
    mut last: usize,
    pivot: usize,
    less: &impl Fn(&T, &T) -> bool,
) -> usize {
    loop {
        while less(&v[first], &v[pivot]) {
            first += 1;
        }
        last -= 1;
        while less(&v[pivot], &v[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

fn final_insertion_sort<T: Copy>(v: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    if last - first > THRESHOLD {
        insertion_sort(v, first, first + THRESHOLD, less);
        for i in first + THRESHOLD..last {
            unguarded_linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, first, last, less);
    }
}

fn insertion_sort<T: Copy>(v: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if less(&v[i], &v[first]) {
            let val = v[i];
            v.copy_within(first..i, first + 1);
            v[first] = val;
        } else {
            unguarded_linear_insert(v, i, less);
        }
    }
}

fn unguarded_linear_insert<T: Copy>(v: &mut [T], mut last: usize, less: &impl Fn(&T, &T) -> bool) {
    let val = v[last];
    let mut next = last - 1;
    while less(&val, &v[next]) {
        v[last] = v[next];
        last = next;
        next -= 1;
    }
    v[last] = val;
}

fn heap_sort<T: Copy>(v: &mut [T], first: usize, last: usize, less: &impl Fn(&T, &T) -> bool) {
    let h = &mut v[first..last];
    let len = h.len();
    if len >= 2 {
        let mut parent = (len - 2) / 2;
        loop {
            let val = h[parent];
            adjust_heap(h, parent, len, val, less);
            if parent == 0 {
                break;
            }
            parent -= 1;
        }
    }
    let mut end = len;
    while end > 1 {
        end -= 1;
        let val = h[end];
        h[end] = h[0];
        adjust_heap(h, 0, end, val, less);
    }
}

fn adjust_heap<T: Copy>(h: &mut [T], mut hole: usize, len: usize, val: T, less: &impl Fn(&T, &T) -> bool) {
    let top = hole;
    let mut child = hole;
    while child < (len.saturating_sub(1)) / 2 {
        child = 2 * (child + 1);
        if less(&h[child], &h[child - 1]) {
            child -= 1;
        }
        h[hole] = h[child];
        hole = child;
    }
    if len & 1 == 0 && len >= 2 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        h[hole] = h[child - 1];
        hole = child - 1;
    }
    let mut parent = hole.wrapping_sub(1) / 2;
    while hole > top && less(&h[parent], &val) {
        h[hole] = h[parent];
        hole = parent;
        parent = hole.wrapping_sub(1) / 2;
    }
    h[hole] = val;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lens() -> Vec<u32> {
        // a fixed pseudo-random list of lengths with many ties
        let mut x: u32 = 12345;
        (0..200)
            .map(|_| {
                x = x.wrapping_mul(1103515245).wrapping_add(12345);
                (x >> 16) % 9
            })
            .collect()
    }

    #[test]
    fn sorts_like_libstdcxx() {
        let l = lens();
        let mut ids: Vec<u32> = (0..l.len() as u32).collect();
        sort_by(&mut ids, &|&a: &u32, &b: &u32| l[a as usize] > l[b as usize]);
        assert!(ids.windows(2).all(|w| l[w[0] as usize] >= l[w[1] as usize]));
        // std::sort (GCC 12) on the same input, by length descending
        assert_eq!(ids[..20], EXPECTED);
    }

    const EXPECTED: [u32; 20] =
        [120, 89, 36, 95, 28, 87, 41, 86, 143, 164, 22, 185, 107, 127, 161, 110, 119, 154, 78, 70];

    fn checksum(ids: &[u32]) -> u64 {
        ids.iter().fold(0u64, |h, &i| h.wrapping_mul(1000003).wrapping_add(u64::from(i)))
    }

    #[test]
    fn full_order_and_heap_sort_like_libstdcxx() {
        let l = lens();
        let less = |&a: &u32, &b: &u32| l[a as usize] > l[b as usize];
        let mut ids: Vec<u32> = (0..l.len() as u32).collect();
        sort_by(&mut ids, &less);
        assert_eq!(checksum(&ids), 16116131639095008228);
        // std::partial_sort(first, last, last): the depth-limit fallback
        let mut ids: Vec<u32> = (0..l.len() as u32).collect();
        let n = ids.len();
        heap_sort(&mut ids, 0, n, &less);
        assert_eq!(checksum(&ids), 1456335320923375774);
    }
}
