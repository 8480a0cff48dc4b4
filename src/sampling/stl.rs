//! libstdc++'s (GCC 12) `std::sort` and `std::partial_sort`, step for step.
//!
//! Neither is stable, so the order in which they leave equal keys is part of
//! the reference's behaviour: after a sort, ties among logits decide which
//! token sits at which index, and the samplers that walk the sorted array
//! (dist, top-p, mirostat …) then pick by index. Reimplementing the exact
//! algorithms (introsort with median-of-three and a final insertion sort;
//! heap select + sort_heap) makes our tie order the reference's.
//!
//! Indices are bounds-checked; the "unguarded" loops of libstdc++ stop at
//! the same places because the comparator is the same.

/// `_S_threshold` of stl_algo.h.
const THRESHOLD: usize = 16;

/// `std::sort(v.begin(), v.end(), comp)`.
pub fn sort<T: Copy>(v: &mut [T], comp: &impl Fn(&T, &T) -> bool) {
    let n = v.len();
    if n == 0 {
        return;
    }
    let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize; // __lg(n) * 2
    introsort_loop(v, 0, n, depth, comp);
    final_insertion_sort(v, 0, n, comp);
}

/// `std::partial_sort(v.begin(), v.begin() + middle, v.end(), comp)`.
pub fn partial_sort<T: Copy>(v: &mut [T], middle: usize, comp: &impl Fn(&T, &T) -> bool) {
    partial_sort_range(v, 0, middle, v.len(), comp);
}

fn partial_sort_range<T: Copy>(v: &mut [T], first: usize, middle: usize, last: usize, comp: &impl Fn(&T, &T) -> bool) {
    heap_select(v, first, middle, last, comp);
    sort_heap(v, first, middle, comp);
}

fn heap_select<T: Copy>(v: &mut [T], first: usize, middle: usize, last: usize, comp: &impl Fn(&T, &T) -> bool) {
    make_heap(v, first, middle, comp);
    if middle == first {
        // an empty heap: libstdc++ still compares against *first (which is
        // then the tail's first element) and swaps; kept verbatim
        for i in middle..last {
            if comp(&v[i], &v[first]) {
                pop_heap(v, first, middle, i, comp);
            }
        }
        return;
    }
    // the hot loop of top-k: scan the tail against the heap's top
    let (head, tail) = v[first..last].split_at_mut(middle - first);
    let len = head.len();
    let mut top = head[0];
    for x in tail.iter_mut() {
        if comp(x, &top) {
            // __pop_heap(first, middle, i): *i = *first, then sift the old *i down
            let value = *x;
            *x = top;
            adjust_heap(head, 0, 0, len, value, comp);
            top = head[0];
        }
    }
}

fn make_heap<T: Copy>(v: &mut [T], first: usize, last: usize, comp: &impl Fn(&T, &T) -> bool) {
    let len = last - first;
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let value = v[first + parent];
        adjust_heap(v, first, parent, len, value, comp);
        if parent == 0 {
            return;
        }
        parent -= 1;
    }
}

fn sort_heap<T: Copy>(v: &mut [T], first: usize, mut last: usize, comp: &impl Fn(&T, &T) -> bool) {
    while last - first > 1 {
        last -= 1;
        pop_heap(v, first, last, last, comp);
    }
}

fn pop_heap<T: Copy>(v: &mut [T], first: usize, last: usize, result: usize, comp: &impl Fn(&T, &T) -> bool) {
    let value = v[result];
    v[result] = v[first];
    adjust_heap(v, first, 0, last - first, value, comp);
}

fn adjust_heap<T: Copy>(
    v: &mut [T],
    first: usize,
    mut hole: usize,
    len: usize,
    value: T,
    comp: &impl Fn(&T, &T) -> bool,
) {
    let top = hole;
    let mut second = hole;
    // the C++ code uses signed distances: (len - 1) / 2 with len >= 1 here
    while len >= 1 && second < (len - 1) / 2 {
        second = 2 * (second + 1);
        if comp(&v[first + second], &v[first + second - 1]) {
            second -= 1;
        }
        v[first + hole] = v[first + second];
        hole = second;
    }
    if len >= 2 && (len & 1) == 0 && second == (len - 2) / 2 {
        second = 2 * (second + 1);
        v[first + hole] = v[first + second - 1];
        hole = second - 1;
    }
    // __push_heap
    let mut parent = hole.wrapping_sub(1) / 2;
    while hole > top && comp(&v[first + parent], &value) {
        v[first + hole] = v[first + parent];
        hole = parent;
        parent = hole.wrapping_sub(1) / 2;
    }
    v[first + hole] = value;
}

fn introsort_loop<T: Copy>(
    v: &mut [T],
    first: usize,
    mut last: usize,
    mut depth: usize,
    comp: &impl Fn(&T, &T) -> bool,
) {
    while last - first > THRESHOLD {
        if depth == 0 {
            partial_sort_range(v, first, last, last, comp);
            return;
        }
        depth -= 1;
        let cut = unguarded_partition_pivot(v, first, last, comp);
        introsort_loop(v, cut, last, depth, comp);
        last = cut;
    }
}

fn move_median_to_first<T: Copy>(
    v: &mut [T],
    result: usize,
    a: usize,
    b: usize,
    c: usize,
    comp: &impl Fn(&T, &T) -> bool,
) {
    let pick = if comp(&v[a], &v[b]) {
        if comp(&v[b], &v[c]) {
            b
        } else if comp(&v[a], &v[c]) {
            c
        } else {
            a
        }
    } else if comp(&v[a], &v[c]) {
        a
    } else if comp(&v[b], &v[c]) {
        c
    } else {
        b
    };
    v.swap(result, pick);
}

fn unguarded_partition<T: Copy>(
    v: &mut [T],
    mut first: usize,
    mut last: usize,
    pivot: usize,
    comp: &impl Fn(&T, &T) -> bool,
) -> usize {
    loop {
        while comp(&v[first], &v[pivot]) {
            first += 1;
        }
        last -= 1;
        while comp(&v[pivot], &v[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

fn unguarded_partition_pivot<T: Copy>(v: &mut [T], first: usize, last: usize, comp: &impl Fn(&T, &T) -> bool) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(v, first, first + 1, mid, last - 1, comp);
    unguarded_partition(v, first + 1, last, first, comp)
}

fn final_insertion_sort<T: Copy>(v: &mut [T], first: usize, last: usize, comp: &impl Fn(&T, &T) -> bool) {
    if last - first > THRESHOLD {
        insertion_sort(v, first, first + THRESHOLD, comp);
        for i in first + THRESHOLD..last {
            unguarded_linear_insert(v, i, comp);
        }
    } else {
        insertion_sort(v, first, last, comp);
    }
}

fn insertion_sort<T: Copy>(v: &mut [T], first: usize, last: usize, comp: &impl Fn(&T, &T) -> bool) {
    if first == last {
        return;
    }
    for i in first + 1..last {
        if comp(&v[i], &v[first]) {
            let val = v[i];
            v.copy_within(first..i, first + 1);
            v[first] = val;
        } else {
            unguarded_linear_insert(v, i, comp);
        }
    }
}

fn unguarded_linear_insert<T: Copy>(v: &mut [T], mut last: usize, comp: &impl Fn(&T, &T) -> bool) {
    let val = v[last];
    let mut next = last - 1;
    while comp(&val, &v[next]) {
        v[last] = v[next];
        last = next;
        next -= 1;
    }
    v[last] = val;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn sort_and_partial_sort_order_keys() {
        let mut s = 7u64;
        for n in [0usize, 1, 2, 5, 16, 17, 100, 1000, 5000] {
            let v: Vec<(i32, u32)> = (0..n).map(|i| ((lcg(&mut s) % 50) as i32, i as u32)).collect();
            let comp = |a: &(i32, u32), b: &(i32, u32)| a.0 > b.0;
            let mut a = v.clone();
            sort(&mut a, &comp);
            assert!(a.windows(2).all(|w| w[0].0 >= w[1].0));
            let mut ids: Vec<u32> = a.iter().map(|x| x.1).collect();
            ids.sort();
            assert_eq!(ids, (0..n as u32).collect::<Vec<_>>());
            for k in [0, 1, n / 3, n].into_iter().filter(|&k| k <= n) {
                let mut b = v.clone();
                partial_sort(&mut b, k, &comp);
                let mut full: Vec<i32> = v.iter().map(|x| x.0).collect();
                full.sort_by(|x, y| y.cmp(x));
                assert_eq!(b[..k].iter().map(|x| x.0).collect::<Vec<_>>(), full[..k].to_vec());
            }
        }
    }

    #[test]
    fn introsort_depth_limit_path_is_exercised() {
        // all-equal keys force the partitions to the middle; a saw-tooth
        // input stresses median-of-three; both must still sort
        let mut v: Vec<(i32, u32)> =
            (0..4096u32).map(|i| ((i % 7) as i32 * if i % 2 == 0 { 1 } else { -1 }, i)).collect();
        sort(&mut v, &|a: &(i32, u32), b: &(i32, u32)| a.0 < b.0);
        assert!(v.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
