#!/usr/bin/env python3
"""Compares two embedding files of ffi-tests/parity/embeddings.c (raw
little-endian float32, rows of N_EMBD): per row, the largest absolute
difference and the cosine similarity (in double), then the line
`rows R max_abs_diff X min_cosine Y` over all rows.

usage: compare_embd.py A.bin B.bin N_EMBD
exit: 0; 1 if the files differ in size (or hold no whole number of rows);
2 on bad arguments. Python 3 standard library only.
"""
import array
import math
import sys


def load(path):
    a = array.array("f")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) % 4:
        sys.exit(f"compare_embd: {path}: {len(data)} bytes, not whole float32s")
    a.frombytes(data)
    if sys.byteorder != "little":
        a.byteswap()
    return a


def main():
    if len(sys.argv) != 4:
        print("usage: compare_embd.py A.bin B.bin N_EMBD", file=sys.stderr)
        return 2
    n_embd = int(sys.argv[3])
    if n_embd <= 0:
        print("compare_embd: N_EMBD must be positive", file=sys.stderr)
        return 2
    a, b = load(sys.argv[1]), load(sys.argv[2])
    if len(a) != len(b):
        print(f"compare_embd: sizes differ: {len(a) * 4} and {len(b) * 4} bytes", file=sys.stderr)
        return 1
    if len(a) % n_embd:
        print(f"compare_embd: {len(a)} floats are not rows of {n_embd}", file=sys.stderr)
        return 1
    rows = len(a) // n_embd
    worst_diff, worst_cos = 0.0, 1.0
    for r in range(rows):
        ra, rb = a[r * n_embd:(r + 1) * n_embd], b[r * n_embd:(r + 1) * n_embd]
        diff = max((abs(x - y) for x, y in zip(ra, rb)), default=0.0)
        nan = any(math.isnan(x) for x in ra) or any(math.isnan(y) for y in rb)
        dot = sum(x * y for x, y in zip(ra, rb))
        na = math.sqrt(sum(x * x for x in ra))
        nb = math.sqrt(sum(y * y for y in rb))
        if na == 0.0 or nb == 0.0:
            cos = 1.0 if na == nb else 0.0  # two zero rows agree
        else:
            cos = dot / (na * nb)
        # a NaN anywhere makes the row the worst
        if nan or math.isnan(diff) or math.isnan(cos):
            diff, cos = math.inf, -math.inf
        print(f"row {r} max_abs_diff {diff:.9g} cosine {cos:.12f}")
        worst_diff = max(worst_diff, diff)
        worst_cos = min(worst_cos, cos)
    print(f"rows {rows} max_abs_diff {worst_diff:.9g} min_cosine {worst_cos:.12f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
