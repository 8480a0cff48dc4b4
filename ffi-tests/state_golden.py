#!/usr/bin/env python3
"""Continuation logits of ffi-tests/state_interop.c against the reference's.
Standard library only.

usage:
  state_golden.py top10 LOGITS             the 10 largest logits of each token, one line per
                                           token: "id:logit ..." (how golden/state/*/top10.txt
                                           were made from the reference's direct.logits)
  state_golden.py check LOGITS TOP10 TOL   each token's top-1 equals the reference's, and the
                                           logits of the reference's top 10 ids are within TOL;
                                           prints the largest difference
"""
import array
import sys

N_CONT = 4


def rows(path):
    a = array.array("f", open(path, "rb").read())
    n = len(a) // N_CONT
    return [a[i * n:(i + 1) * n] for i in range(N_CONT)]


def top10(row):
    return sorted(range(len(row)), key=lambda i: (-row[i], i))[:10]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "top10":
        for row in rows(sys.argv[2]):
            print(" ".join(f"{i}:{row[i]:.6f}" for i in top10(row)))
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        ours, tol = rows(sys.argv[2]), float(sys.argv[4])
        ref = [[(int(i), float(v)) for i, v in (p.split(":") for p in line.split())] for line in open(sys.argv[3])]
        worst, same_top1 = 0.0, 0
        for row, want in zip(ours, ref):
            same_top1 += top10(row)[0] == want[0][0]
            worst = max([worst] + [abs(row[i] - v) for i, v in want])
        print(f"top-1 equal for {same_top1}/{len(ref)} tokens, largest |logit - reference| over its top 10: {worst:.4f}")
        return 0 if same_top1 == len(ref) == N_CONT and worst <= tol else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
