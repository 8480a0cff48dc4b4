#!/usr/bin/env python3
"""Checks the output of examples-c/embedding.c (its default four sentences:
two about a cat, two about interest rates).

usage: check_embedding.py OUTPUT.txt [GOLDEN.txt]

Checks: a 4x4 matrix, every similarity in [-1, 1], the diagonal 1 (within
1e-4), symmetric, each related pair (0-1, 2-3) more similar than every
unrelated pair; with GOLDEN (the reference library's output, made by
ffi-tests/gen_examples_golden.sh) the same header lines (n_embd, token
counts) and every entry within 0.005 of it (measured: equal to the printed
4 decimals). Exits 1 on failure.
"""
import sys


def matrix(path):
    lines = open(path).read().splitlines()
    start = lines.index("cosine similarity:") + 1
    return [[float(x) for x in line.split()] for line in lines[start:] if line.strip()]


m = matrix(sys.argv[1])
errors = []
if len(m) != 4 or any(len(row) != 4 for row in m):
    sys.exit(f"expected a 4x4 matrix, got {m}")
for a in range(4):
    for b in range(4):
        if not -1.0 <= m[a][b] <= 1.0:
            errors.append(f"sim({a},{b}) = {m[a][b]} outside [-1, 1]")
        if abs(m[a][b] - m[b][a]) > 1e-4:
            errors.append(f"sim({a},{b}) != sim({b},{a})")
    if abs(m[a][a] - 1.0) > 1e-4:
        errors.append(f"self-similarity of {a} is {m[a][a]}")
related = min(m[0][1], m[2][3])
unrelated = max(m[0][2], m[0][3], m[1][2], m[1][3])
if related <= unrelated:
    errors.append(f"a related pair ({related}) is not more similar than every unrelated pair ({unrelated})")
worst = 0.0
if len(sys.argv) > 2:
    g = matrix(sys.argv[2])
    worst = max(abs(m[a][b] - g[a][b]) for a in range(4) for b in range(4))
    if worst > 0.005:
        errors.append(f"differs from the reference's matrix by up to {worst:.4f}")
    head = lambda p: open(p).read().split("cosine similarity:")[0]
    if head(sys.argv[1]) != head(sys.argv[2]):
        errors.append("the sentence lines (n_embd, token counts) differ from the reference's")
for e in errors:
    print(e)
print(f"embedding: related >= {related:.4f} > unrelated <= {unrelated:.4f}, max |ours - reference| {worst:.4f}")
sys.exit(1 if errors else 0)
