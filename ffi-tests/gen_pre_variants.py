#!/usr/bin/env python3
"""Writes copies of a vocab-only GGUF (no tensors) with `tokenizer.ggml.pre`
(or, for `model=NAME`, `tokenizer.ggml.model`) replaced, one per name, so
every pre-tokenizer the reference knows can be compared with it on a real
BPE vocabulary.

usage: gen_pre_variants.py BASE.gguf OUTDIR NAME... (model=NAME for a tokenizer model;
       synth=rwkv for a small synthetic RWKV vocabulary)
"""
import struct, sys, re
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



def gguf_str(b):
    return struct.pack('<Q', len(b)) + b


def write_synth_rwkv(path):
    """A small RWKV-world style vocab-only GGUF: every byte as a token
    (printable ASCII as itself, the rest as \\xHH) plus multi-byte words."""
    toks = []
    for b in range(256):
        c = chr(b)
        toks.append(c.encode() if 0x20 < b < 0x7f and c != '\\' else ('\\x%02x' % b).encode())
    words = ["the", " the", "ing", "tion", " and", "hello", " world", "Hello", "\\n\\n", "  ", "    ", "\\t\\t",
             "café", "你好", "世界", "привет", " мир", "😀", "12", "123", "1234", "http", "://", "www", ".com",
             "<s>", "</s>", "ab", "abc", "abcd", "bc", "cd", "de", "def", "de\\x00f"]
    for w in words:
        e = w.encode()
        if e not in toks:
            toks.append(e)
    kvs = []
    def kv(key, vtype, payload):
        kvs.append(gguf_str(key.encode()) + struct.pack('<I', vtype) + payload)
    kv("general.architecture", 8, gguf_str(b"rwkv6"))
    kv("tokenizer.ggml.model", 8, gguf_str(b"rwkv"))
    kv("tokenizer.ggml.tokens", 9, struct.pack('<IQ', 8, len(toks)) + b"".join(gguf_str(t) for t in toks))
    kv("tokenizer.ggml.token_type", 9, struct.pack('<IQ', 5, len(toks)) + b"".join(struct.pack('<i', 1) for _ in toks))
    data = b"GGUF" + struct.pack('<I', 3) + struct.pack('<Q', 0) + struct.pack('<Q', len(kvs)) + b"".join(kvs)
    open(path, 'wb').write(data)


def main():
    base = sys.argv[1]; outdir = sys.argv[2]; names = sys.argv[3:]
    data = open(base, 'rb').read()
    assert struct.unpack_from('<Q', data, 8)[0] == 0, "has tensors"
    for n in names:
        if n == "synth=rwkv":
            write_synth_rwkv(f"{outdir}/synth_rwkv.gguf")
            continue
        key, val = ('tokenizer.ggml.model', n.split('=')[1]) if n.startswith('model=') else ('tokenizer.ggml.pre', n)
        d = patch(data, key, val.encode())
        open(f"{outdir}/{n.replace('=','_')}.gguf", 'wb').write(d)


if __name__ == "__main__":
    main()
