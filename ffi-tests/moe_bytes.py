#!/usr/bin/env python3
"""The weight bytes one decoded token multiplies by in a mixture-of-experts
GGUF, from its tensor table (the gguf package of the reference source):
prints "ACTIVE ALL", ACTIVE counting each expert tensor at
expert_used_count / expert_count of its bytes (the active parameters), ALL
counting every expert (what a decode reading all experts would take).
Every matrix counts (and the one-row shared-expert gate), no bias; the
token embedding only as the output head of a tied model.

usage: moe_bytes.py MODEL.gguf  (ffi-tests/run.sh: test_moe_bytes)
"""
import sys

import gguf

r = gguf.GGUFReader(sys.argv[1])
arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
n_expert = int(r.fields[f"{arch}.expert_count"].parts[-1][0])
used = int(r.fields[f"{arch}.expert_used_count"].parts[-1][0])
names = {t.name for t in r.tensors}
active = every = 0
for t in r.tensors:
    dims = len([n for n in t.shape if n > 1])
    matrix = dims >= 2 or t.name.endswith("ffn_gate_inp_shexp.weight")
    if t.name.endswith(".bias"):
        matrix = False  # (added, not multiplied: gpt-oss's 2-D expert biases)
    if t.name == "token_embd.weight":
        matrix = "output.weight" not in names
    if not matrix:
        continue
    n = int(t.n_bytes)
    every += n
    active += n * used // n_expert if dims == 3 else n
print(active, every)
