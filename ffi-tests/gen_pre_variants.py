#!/usr/bin/env python3
"""Writes copies of a vocab-only GGUF (no tensors) with `tokenizer.ggml.pre`
(or, for `model=NAME`, `tokenizer.ggml.model`) replaced, one per name, so
every pre-tokenizer the reference knows can be compared with it on a real
BPE vocabulary.

usage: gen_pre_variants.py BASE.gguf OUTDIR NAME... (model=NAME for a tokenizer model)
"""
import struct, sys, re
base = sys.argv[1]; outdir = sys.argv[2]; names = sys.argv[3:]
data = open(base, 'rb').read()
def patch(data, key, newval):
    kb = key.encode()
    i = data.find(struct.pack('<Q', len(kb)) + kb)
    if i < 0:
        # insert a new kv: bump n_kv (header: magic u32, version u32, n_tensors u64, n_kv u64) and append after header
        n_kv = struct.unpack_from('<Q', data, 16)[0]
        kv = struct.pack('<Q', len(kb)) + kb + struct.pack('<I', 8) + struct.pack('<Q', len(newval)) + newval
        return data[:16] + struct.pack('<Q', n_kv + 1) + data[24:24] + kv + data[24:]
    j = i + 8 + len(kb)
    t = struct.unpack_from('<I', data, j)[0]; assert t == 8
    vl = struct.unpack_from('<Q', data, j + 4)[0]
    return data[:j + 4] + struct.pack('<Q', len(newval)) + newval + data[j + 12 + vl:]
assert struct.unpack_from('<Q', data, 8)[0] == 0, "has tensors"
for n in names:
    key, val = ('tokenizer.ggml.model', n.split('=')[1]) if n.startswith('model=') else ('tokenizer.ggml.pre', n)
    d = patch(data, key, val.encode())
    open(f"{outdir}/{n.replace('=','_')}.gguf", 'wb').write(d)
