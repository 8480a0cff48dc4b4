#!/usr/bin/env python3
"""Writes a valid tiny llama GGUF model and many malformed variants of it.

Usage: gen_bad_gguf.py OUTDIR

OUTDIR receives
  base.gguf   a valid GGUF v3 model the library must load
  *.gguf      malformed variants, each breaking one rule
  cases.tsv   one line per malformed file: filename<TAB>expected substring of
              the message the library logs when it refuses the file
  warn_cases.tsv  valid files with vocabulary oddities that must load with a
              warning: filename<TAB>expected substring of the warning

Only the standard library is used; the GGUF writer below is a small one of
our own (little-endian, as the format requires), so the test does not depend
on the library it tests.
"""

import os
import random
import struct
import sys

# GGUF metadata value types (enum gguf_type).
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)

# ggml tensor types used here.
GGML_F32 = 0
GGML_Q4_0 = 2  # blocks of 32 elements, 18 bytes (f16 scale + 16 nibble bytes)

ALIGN = 32
HEADER_SIZE = 24

# The fewest bytes a key-value pair / tensor info can take (a one-byte key
# and a one-byte value; an empty name with no dimensions). A reader may (and
# ours does) reject header counts that cannot fit in the bytes after the
# header before reading anything else.
MIN_KV_SIZE = 8 + 1 + 4 + 1
MIN_TENSOR_INFO_SIZE = 8 + 4 + 4 + 8

U64_MAX = (1 << 64) - 1
I64_MAX = (1 << 63) - 1


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------

def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & U64_MAX)


def i64(v):
    return struct.pack("<q", v)


def gstr(b, length=None):
    """A GGUF string: u64 length (or the given, possibly lying, length) + bytes."""
    if isinstance(b, str):
        b = b.encode()
    return u64(len(b) if length is None else length) + b


SCALAR_FMT = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
              F32: "<f", BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}


def scalar(vtype, v):
    return struct.pack(SCALAR_FMT[vtype], v)


def array(elem_type, elems, count=None):
    """An array value: elem type u32, count u64, the encoded elements.
    `elems` are already-encoded element bytes (list of bytes)."""
    n = len(elems) if count is None else count
    return u32(elem_type) + u64(n) + b"".join(elems)


class KV:
    """One key-value pair. `payload` is the encoded value (without its type);
    `raw_key` replaces the whole encoded key (length field included)."""

    def __init__(self, key, vtype, payload, raw_key=None):
        self.key = key
        self.vtype = vtype
        self.payload = payload
        self.raw_key = raw_key

    def encode(self):
        k = self.raw_key if self.raw_key is not None else gstr(self.key)
        return k + u32(self.vtype) + self.payload


def kv_u32(key, v):
    return KV(key, U32, u32(v))


def kv_f32(key, v):
    return KV(key, F32, scalar(F32, v))


def kv_str(key, s):
    return KV(key, STR, gstr(s))


class TI:
    """One tensor info. `n_dims` defaults to len(ne); `raw_name` replaces the
    whole encoded name."""

    def __init__(self, name, ne, ttype, offset, n_dims=None, raw_name=None):
        self.name = name
        self.ne = list(ne)
        self.ttype = ttype
        self.offset = offset
        self.n_dims = n_dims
        self.raw_name = raw_name

    def encode(self):
        b = self.raw_name if self.raw_name is not None else gstr(self.name)
        b += u32(len(self.ne) if self.n_dims is None else self.n_dims)
        for n in self.ne:
            b += i64(n)
        return b + u32(self.ttype) + u64(self.offset)


def nbytes(ttype, ne):
    n = 1
    for x in ne:
        n *= x
    if ttype == GGML_F32:
        return 4 * n
    if ttype == GGML_Q4_0:
        assert ne[0] % 32 == 0
        return n // 32 * 18
    raise ValueError(ttype)


def align_up(x, a):
    return (x + a - 1) // a * a


class Model:
    """A GGUF file being assembled: header fields, pairs, tensor infos and the
    data section, any of which a case may change before `build`."""

    def __init__(self, kvs, tis, data):
        self.magic = b"GGUF"
        self.version = 3
        self.n_tensors = None  # None: the real count
        self.n_kv = None
        self.kvs = kvs
        self.tis = tis
        self.data = data  # the data section bytes
        self.pad_align = ALIGN  # alignment used to pad before the data
        self.tail = b""  # appended after the data

    def copy(self):
        m = Model([KV(k.key, k.vtype, k.payload, k.raw_key) for k in self.kvs],
                  [TI(t.name, t.ne, t.ttype, t.offset, t.n_dims, t.raw_name) for t in self.tis],
                  self.data)
        m.magic, m.version, m.n_tensors, m.n_kv = self.magic, self.version, self.n_tensors, self.n_kv
        m.pad_align, m.tail = self.pad_align, self.tail
        return m

    def kv(self, key):
        for k in self.kvs:
            if k.key == key:
                return k
        raise KeyError(key)

    def kv_index(self, key):
        return [k.key for k in self.kvs].index(key)

    def drop_kv(self, key):
        self.kvs = [k for k in self.kvs if k.key != key]

    def ti(self, name):
        for t in self.tis:
            if t.name == name:
                return t
        raise KeyError(name)

    def build(self):
        """Returns (bytes, layout) where layout records where each part is."""
        out = bytearray()
        out += self.magic + u32(self.version)
        out += u64(len(self.tis) if self.n_tensors is None else self.n_tensors)
        out += u64(len(self.kvs) if self.n_kv is None else self.n_kv)
        layout = {"kv": [], "ti": []}
        for k in self.kvs:
            start = len(out)
            out += k.encode()
            layout["kv"].append((start, len(out)))
        for t in self.tis:
            start = len(out)
            out += t.encode()
            layout["ti"].append((start, len(out)))
        layout["info_end"] = len(out)
        data_offset = align_up(len(out), self.pad_align)
        out += b"\0" * (data_offset - len(out))
        layout["data_offset"] = data_offset
        out += self.data + self.tail
        return bytes(out), layout


# ---------------------------------------------------------------------------
# The valid base model
# ---------------------------------------------------------------------------

TOKENS = ["<unk>", "<s>", "</s>", "\u2581a", "\u2581b", "c", "d", "e"]


def base_model():
    rng = random.Random(20240517)
    kvs = [
        kv_str("general.architecture", "llama"),
        kv_str("general.name", "minfer bad-gguf base"),
        kv_u32("general.alignment", ALIGN),
        kv_u32("llama.context_length", 256),
        kv_u32("llama.embedding_length", 64),
        kv_u32("llama.block_count", 1),
        kv_u32("llama.attention.head_count", 4),
        kv_u32("llama.attention.head_count_kv", 2),
        kv_u32("llama.feed_forward_length", 128),
        kv_f32("llama.rope.freq_base", 10000.0),
        kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
        kv_str("tokenizer.ggml.model", "llama"),
        KV("tokenizer.ggml.tokens", ARR, array(STR, [gstr(t) for t in TOKENS])),
        KV("tokenizer.ggml.scores", ARR, array(F32, [scalar(F32, -float(i)) for i in range(len(TOKENS))])),
        KV("tokenizer.ggml.token_type", ARR,
           array(I32, [scalar(I32, 2 if i == 0 else 3 if i < 3 else 1) for i in range(len(TOKENS))])),
        kv_u32("tokenizer.ggml.bos_token_id", 1),
        KV("minfer.test.flag", BOOL, scalar(BOOL, 1)),
        KV("minfer.test.u64", U64, u64(0x0123456789ABCDEF)),
        KV("minfer.test.nested", ARR,
           array(ARR, [array(U8, [bytes([j]) for j in range(n)]) for n in (3, 0, 5)])),
    ]

    specs = [
        ("token_embd.weight", [64, 8], GGML_F32),
        ("output_norm.weight", [64], GGML_F32),
        ("blk.0.attn_q.weight", [64, 64], GGML_Q4_0),
        # The rest of a 1-layer llama (64 wide, 4 heads of 16, 2 kv heads), so
        # that the base model loads; appended so the first three keep their
        # offsets, which the cases below refer to.
        ("blk.0.attn_norm.weight", [64], GGML_F32),
        ("blk.0.attn_k.weight", [64, 32], GGML_F32),
        ("blk.0.attn_v.weight", [64, 32], GGML_F32),
        ("blk.0.attn_output.weight", [64, 64], GGML_Q4_0),
        ("blk.0.ffn_norm.weight", [64], GGML_F32),
        ("blk.0.ffn_gate.weight", [64, 128], GGML_Q4_0),
        ("blk.0.ffn_up.weight", [64, 128], GGML_Q4_0),
        ("blk.0.ffn_down.weight", [128, 64], GGML_Q4_0),
    ]
    tis = []
    data = bytearray()
    for name, ne, ttype in specs:
        data += b"\0" * (align_up(len(data), ALIGN) - len(data))
        tis.append(TI(name, ne, ttype, len(data)))
        if ttype == GGML_F32:
            n = nbytes(ttype, ne) // 4
            data += struct.pack("<%df" % n, *[rng.uniform(-1.0, 1.0) for _ in range(n)])
        else:
            for _ in range(nbytes(ttype, ne) // 18):
                data += struct.pack("<e", rng.uniform(0.001, 0.05))
                data += bytes(rng.randrange(256) for _ in range(16))
    return Model(kvs, tis, bytes(data))


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

def truncation_expectation(length, layout, model):
    """What a reader must complain about when the valid file ends at
    `length`: the header, the header counts (when the pairs and infos they
    announce cannot fit), the pair or tensor info being cut (named "kv[i]" /
    "tensor[i]" in the message), the padding before the data section, or the
    first tensor whose data runs past the end."""
    if length < HEADER_SIZE:
        return "too short for a GGUF header"
    need = len(model.kvs) * MIN_KV_SIZE + len(model.tis) * MIN_TENSOR_INFO_SIZE
    if length - HEADER_SIZE < need:
        return "follow the header"
    for i, (start, end) in enumerate(layout["kv"]):
        if length < end:
            return "kv[%d]" % i
    for i, (start, end) in enumerate(layout["ti"]):
        if length < end:
            return "tensor[%d]" % i
    if length < layout["data_offset"]:
        return "data section"
    for i, t in enumerate(model.tis):
        if layout["data_offset"] + t.offset + nbytes(t.ttype, t.ne) > length:
            return "tensor[%d]" % i
    raise AssertionError("length %d is not truncated" % length)


def truncation_points(base, layout, total):
    """~25 lengths spread over the header, the count-checked start, the
    pairs, the tensor infos, the padding and the data."""
    pts = {1, 3, 4, 7, 8, 16, 23}  # header
    need = len(base.kvs) * MIN_KV_SIZE + len(base.tis) * MIN_TENSOR_INFO_SIZE
    pts |= {24, 100, HEADER_SIZE + need - 1}  # the counts cannot fit yet
    kvs = layout["kv"]
    late = [i for i, (s, e) in enumerate(kvs) if s >= HEADER_SIZE + need]
    for i in late[:: max(1, len(late) // 5)]:  # a few pairs, cut mid-way
        s, e = kvs[i]
        pts.add((s + e) // 2)
    tokens = kvs[base.kv_index("tokenizer.ggml.tokens")]
    # inside the array's count field; inside its last element
    pts |= {tokens[0] + 8 + len("tokenizer.ggml.tokens") + 4 + 4 + 3, tokens[1] - 1}
    pts.add(kvs[-1][1] - 1)  # inside the last pair (the nested array)
    tis = layout["ti"]
    pts.add(tis[0][0] + 10)  # first tensor's name
    pts.add(tis[1][0] + 8 + len("output_norm.weight") + 4 + 3)  # second tensor's ne[0]
    pts.add(tis[2][1] - 1)  # last tensor's offset field
    if layout["info_end"] < layout["data_offset"]:
        pts.add(layout["info_end"])  # the padding before the data section
        pts.add(layout["data_offset"] - 1)
    d = layout["data_offset"]
    pts |= {d, d + 1000, d + base.tis[1].offset + 1, d + base.tis[2].offset + 100, total - 1}
    return sorted(p for p in pts if 0 < p < total)


# mixture-of-experts files (issue 35): the base's FFN replaced by 4
# experts of its shapes (zeros), 2 per token; each case of `cases` breaks
# one rule
def moe(n_expert=4, used=2, up_ne=None, counts=True, fused=False):
    def f(m):
        m.tis = [t for t in m.tis if t.name not in
                 ("blk.0.ffn_gate.weight", "blk.0.ffn_up.weight", "blk.0.ffn_down.weight")]
        data = bytearray(m.data)
        gate_up = ((("blk.0.ffn_gate_up_exps.weight", [64, 256, 4]),) if fused else
                   (("blk.0.ffn_gate_exps.weight", [64, 128, 4]), ("blk.0.ffn_up_exps.weight", up_ne or [64, 128, 4])))
        for name, ne in (("blk.0.ffn_gate_inp.weight", [64, 4]),) + gate_up + (
                ("blk.0.ffn_down_exps.weight", [128, 64, 4]),):
            data += b"\0" * (align_up(len(data), ALIGN) - len(data))
            m.tis.append(TI(name, ne, GGML_F32, len(data)))
            data += b"\0" * nbytes(GGML_F32, ne)
        m.data = bytes(data)
        if counts:
            m.kvs.append(kv_u32("llama.expert_count", n_expert))
            m.kvs.append(kv_u32("llama.expert_used_count", used))
    return f


# dots1 (its router's recipe in its keys): the MoE file above renamed,
# with 4 KV heads (k and v of every head, as the family needs), q/k
# norms, a shared expert, sigmoid gating; each case then breaks one key
def dots1(change=None):
    def f(m):
        moe()(m)
        keep = ("blk.0.attn_k.weight", "blk.0.attn_v.weight")
        m.tis = [t for t in m.tis if t.name not in keep]
        data = bytearray(m.data)
        for name, ne in (("blk.0.attn_k.weight", [64, 64]), ("blk.0.attn_v.weight", [64, 64]),
                         ("blk.0.attn_q_norm.weight", [16]), ("blk.0.attn_k_norm.weight", [16]),
                         ("blk.0.ffn_gate_shexp.weight", [64, 128]), ("blk.0.ffn_up_shexp.weight", [64, 128]),
                         ("blk.0.ffn_down_shexp.weight", [128, 64])):
            data += b"\0" * (align_up(len(data), ALIGN) - len(data))
            m.tis.append(TI(name, ne, GGML_F32, len(data)))
            data += b"\0" * nbytes(GGML_F32, ne)
        m.data = bytes(data)
        for kv in m.kvs:
            if kv.key.startswith("llama."):
                kv.key = "dots1." + kv.key[len("llama."):]
        m.kvs[m.kv_index("general.architecture")] = kv_str("general.architecture", "dots1")
        m.kvs[m.kv_index("dots1.attention.head_count_kv")] = kv_u32("dots1.attention.head_count_kv", 4)
        m.kvs += [kv_u32("dots1.expert_feed_forward_length", 128), kv_u32("dots1.expert_shared_count", 1),
                  kv_u32("dots1.expert_gating_func", 2)]
        if change:
            change(m)
    return f


def cases(base):
    """Yields (filename, bytes, expected substring)."""
    raw, layout = base.build()

    # --- truncations of the valid file
    yield "trunc_0_empty.gguf", b"", "too short for a GGUF header"
    for n in truncation_points(base, layout, len(raw)):
        yield "trunc_%d.gguf" % n, raw[:n], truncation_expectation(n, layout, base)

    def variant(name, expect, fn):
        m = base.copy()
        r = fn(m)
        return name, (r if isinstance(r, bytes) else m.build()[0]), expect

    # --- header
    yield "short_header_20.gguf", raw[:4] + u32(3) + u64(3) + u32(0), "too short for a GGUF header"
    yield "magic_ggml.gguf", b"GGML" + raw[4:], "magic"
    yield "magic_lowercase.gguf", b"gguf" + raw[4:], "magic"
    yield "magic_zero.gguf", b"\0" * len(raw), "magic"
    for v, tag in ((0, "0"), (1, "1"), (4, "4"), (0x03000000, "3_byteswapped")):
        yield "version_%s.gguf" % tag, raw[:4] + u32(v) + raw[8:], "version"
    for tag, n in (("2pow63", 1 << 63), ("u64max", U64_MAX)):
        yield "n_tensors_%s.gguf" % tag, raw[:8] + u64(n) + raw[16:], "n_tensors"
        yield "n_kv_%s.gguf" % tag, raw[:16] + u64(n) + raw[24:], "n_kv"

    # --- keys
    def key_len(length):
        def f(m):
            k = m.kvs[0]
            k.raw_key = u64(length) + k.key.encode()
        return f
    yield variant("key_len_u64max.gguf", "kv[0].key", key_len(U64_MAX))
    # One more than all the bytes after the length field.
    yield variant("key_len_past_eof.gguf", "kv[0].key",
                  key_len(len(raw) - HEADER_SIZE - 8 + 1))

    def late_key_len(m):
        k = m.kv("tokenizer.ggml.model")
        k.raw_key = u64(1 << 40) + k.key.encode()
    yield variant("key_len_huge_later_kv.gguf", "kv[11].key", late_key_len)

    def empty_key(m):
        m.kvs.insert(3, KV("", U32, u32(7)))
    yield variant("key_empty.gguf", "empty", empty_key)

    def dup_key(m):
        m.kvs.append(kv_u32("llama.block_count", 1))
    yield variant("key_duplicate.gguf", "duplicate key", dup_key)

    def dup_key_other_type(m):
        m.kvs.append(kv_str("general.name", "second name"))
    yield variant("key_duplicate_other_type.gguf", "duplicate key", dup_key_other_type)

    # --- value types and values
    def value_type(t):
        def f(m):
            m.kv("llama.context_length").vtype = t
        return f
    yield variant("value_type_13.gguf", "unknown value type", value_type(13))
    yield variant("value_type_u32max.gguf", "unknown value type", value_type(0xFFFFFFFF))

    def bool_byte(b):
        def f(m):
            m.kv("minfer.test.flag").payload = bytes([b])
        return f
    yield variant("bool_2.gguf", "bool", bool_byte(2))
    yield variant("bool_255.gguf", "bool", bool_byte(255))

    def str_value_len(length):
        def f(m):
            m.kv("general.name").payload = gstr("minfer bad-gguf base", length)
        return f
    yield variant("string_value_len_u64max.gguf", "string length", str_value_len(U64_MAX))
    yield variant("string_value_len_past_eof.gguf", "string length", str_value_len(len(raw)))

    def array_count(key, count):
        def f(m):
            k = m.kv(key)
            k.payload = k.payload[:4] + u64(count) + k.payload[12:]
        return f
    yield variant("array_count_2pow62.gguf", "array of 4611686018427387904",
                  array_count("tokenizer.ggml.scores", 1 << 62))
    yield variant("array_count_u64max.gguf", "array of 18446744073709551615",
                  array_count("tokenizer.ggml.token_type", U64_MAX))
    yield variant("array_count_strings_2pow62.gguf", "array of 4611686018427387904",
                  array_count("tokenizer.ggml.tokens", 1 << 62))
    # One element too many: the next pair's bytes are read as scores, and
    # the rest of the file no longer parses where it should.
    yield variant("array_count_plus_one_last_kv.gguf", "kv[18]",
                  array_count("minfer.test.nested", 4))

    def array_elem_type(t):
        def f(m):
            k = m.kv("tokenizer.ggml.scores")
            k.payload = u32(t) + k.payload[4:]
        return f
    yield variant("array_elem_type_13.gguf", "unknown array element type", array_elem_type(13))
    yield variant("array_elem_type_u32max.gguf", "unknown array element type", array_elem_type(0xFFFFFFFF))

    def nested_inner_type(m):
        inner = [array(U8, [b"\1"]), u32(99) + u64(1) + b"\1"]
        m.kv("minfer.test.nested").payload = array(ARR, inner)
    yield variant("array_nested_inner_elem_type.gguf", "unknown array element type", nested_inner_type)

    def token_len(m):
        toks = [gstr(t) for t in TOKENS]
        toks[5] = gstr("c", 1 << 50)
        m.kv("tokenizer.ggml.tokens").payload = array(STR, toks)
    yield variant("array_string_element_len.gguf", "string length", token_len)

    # --- alignment
    def alignment(kv):
        def f(m):
            i = m.kv_index("general.alignment")
            m.kvs[i] = kv
        return f
    yield variant("alignment_0.gguf", "power of two", alignment(kv_u32("general.alignment", 0)))
    yield variant("alignment_3.gguf", "power of two", alignment(kv_u32("general.alignment", 3)))
    yield variant("alignment_48.gguf", "power of two", alignment(kv_u32("general.alignment", 48)))
    # 2^31 is a power of two, but the tensor offsets 2048 and 2304 are not
    # multiples of it, and the data section would have to start 2 GiB in,
    # far past the end of this small file: either is named with the value.
    yield variant("alignment_2pow31.gguf", "2147483648",
                  alignment(kv_u32("general.alignment", 1 << 31)))
    # A valid alignment the tensor offsets (0, 2048, 2304) do not respect.
    yield variant("alignment_4096_offsets_misaligned.gguf", "not a multiple of the alignment",
                  alignment(kv_u32("general.alignment", 4096)))
    yield variant("alignment_type_u64.gguf", "type u32",
                  alignment(KV("general.alignment", U64, u64(32))))
    yield variant("alignment_type_string.gguf", "type u32", alignment(kv_str("general.alignment", "32")))
    yield variant("alignment_type_i32.gguf", "type u32",
                  alignment(KV("general.alignment", I32, scalar(I32, 32))))

    # --- tensor infos
    def ti_set(tname, **kw):
        def f(m):
            t = m.ti(tname)
            for k, v in kw.items():
                setattr(t, k, v)
        return f
    yield variant("n_dims_5.gguf", "n_dims", ti_set("output_norm.weight", n_dims=5, ne=[64, 1, 1, 1, 1]))
    yield variant("n_dims_u32max.gguf", "n_dims", ti_set("output_norm.weight", n_dims=0xFFFFFFFF))
    yield variant("ne_negative.gguf", "negative", ti_set("token_embd.weight", ne=[64, -1]))
    yield variant("ne_i64_min.gguf", "negative", ti_set("output_norm.weight", ne=[-(1 << 63)]))
    yield variant("ne_elements_overflow.gguf", "i64::MAX elements",
                  ti_set("token_embd.weight", ne=[I64_MAX, 2, 1, 1]))
    yield variant("ne_bytes_overflow_f32.gguf", "i64::MAX bytes", ti_set("output_norm.weight", ne=[1 << 62]))
    yield variant("ne_rows_overflow.gguf", "i64::MAX",
                  ti_set("token_embd.weight", ne=[1 << 32, 1 << 32, 1 << 2]))
    yield variant("q4_0_ne0_33.gguf", "block size", ti_set("blk.0.attn_q.weight", ne=[33, 64]))
    yield variant("q4_0_ne0_16.gguf", "block size", ti_set("blk.0.attn_q.weight", ne=[16, 64]))
    yield variant("ttype_u32max.gguf", "unknown ggml type", ti_set("output_norm.weight", ttype=0xFFFFFFFF))
    yield variant("ttype_4_removed.gguf", "removed", ti_set("output_norm.weight", ttype=4))
    yield variant("ttype_43_past_last.gguf", "unknown ggml type 43", ti_set("output_norm.weight", ttype=43))
    yield variant("tensor_name_64.gguf", "64 bytes long", ti_set("output_norm.weight", name="n" * 64))
    yield variant("tensor_name_len_u64max.gguf", "tensor[1].name",
                  ti_set("output_norm.weight", raw_name=u64(U64_MAX) + b"output_norm.weight"))
    yield variant("tensor_name_duplicate.gguf", "duplicate tensor name",
                  ti_set("blk.0.attn_q.weight", name="token_embd.weight"))

    # --- tensor data offsets
    yield variant("offset_misaligned.gguf", "not a multiple of the alignment",
                  ti_set("output_norm.weight", offset=2048 + 1))
    yield variant("offset_overlap.gguf", "overlap", ti_set("output_norm.weight", offset=2048 - 32))
    yield variant("offset_overlap_same.gguf", "overlap", ti_set("blk.0.attn_q.weight", offset=0))
    # u64::MAX is not a multiple of 32; the largest multiple of 32 is, and
    # points past any file.
    yield variant("offset_u64max.gguf", "offset", ti_set("blk.0.attn_q.weight", offset=U64_MAX))
    yield variant("offset_u64max_aligned.gguf", "past the end",
                  ti_set("blk.0.attn_q.weight", offset=U64_MAX & ~31))
    yield variant("offset_2pow40.gguf", "past the end", ti_set("blk.0.attn_q.weight", offset=1 << 40))

    def one_past_end(m):
        # 31 bytes of padding after the last tensor, which moves 32 bytes
        # on: its data now ends one byte past the end of the file.
        m.tail = b"\0" * 31
        m.tis[-1].offset += 32
    yield variant("offset_one_past_end.gguf", "past the end", one_past_end)

    # --- header counts that disagree with the content
    def n_tensors_plus_one(m):
        m.n_tensors = len(m.tis) + 1
    # The tensor infos then start one item late and their data runs out.
    yield variant("n_tensors_plus_one.gguf", "run past the end", n_tensors_plus_one)

    def n_kv_minus_one(m):
        m.n_kv = len(m.kvs) - 1
    # The last pair's bytes are then read as a tensor info.
    yield variant("n_kv_minus_one.gguf", "tensor[0]", n_kv_minus_one)

    # --- model level: a valid GGUF the model loader must refuse
    yield variant("arch_missing.gguf", "general.architecture",
                  lambda m: m.drop_kv("general.architecture"))

    def arch_kv(kv):
        def f(m):
            m.kvs[m.kv_index("general.architecture")] = kv
        return f
    yield variant("arch_type_u32.gguf", "general.architecture has type",
                  arch_kv(kv_u32("general.architecture", 1)))
    # (the message lists the supported families, from the registry of src/model/arch/)
    yield variant("arch_unknown.gguf", "'nosucharch' is not supported by minfer (supported: llama,",
                  arch_kv(kv_str("general.architecture", "nosucharch")))
    yield variant("block_count_missing.gguf", "block_count", lambda m: m.drop_kv("llama.block_count"))

    def add_str_kv(key, v):
        def f(m):
            m.kvs.append(kv_str(key, v))
        return f
    # a rope scaling type nobody knows
    yield variant("rope_scaling_unknown.gguf", "unknown rope scaling type 'spiral'",
                  add_str_kv("llama.rope.scaling.type", "spiral"))
    # a tensor the family does not use (the reference counts them: "wrong
    # number of tensors"), rather than a model decoded without it
    # a weight type minfer does not run (every block type the reference
    # reads now runs; an integer norm does not): refused at load, naming the
    # tensor (I32 takes F32's bytes)
    yield variant("type_i32_norm.gguf", "tensor 'output_norm.weight' has type i32: not implemented yet",
                  ti_set("output_norm.weight", ttype=26))

    def extra_tensor(m):
        # 64 f32 appended to the data section, aligned
        start = align_up(len(m.data), ALIGN)
        m.data = bytes(m.data) + b"\0" * (start - len(m.data)) + b"\0" * 256
        m.tis.append(TI("blk.0.attn_extra.weight", [64], GGML_F32, start))
    yield variant("tensor_unused.gguf", "tensor 'blk.0.attn_extra.weight' is not one the llama family uses",
                  extra_tensor)

    # (no expert count: a dense llama, whose FFN tensors are missing)
    yield variant("moe_expert_count_0.gguf", "missing tensor 'blk.0.ffn_gate.weight'", moe(counts=False))
    yield variant("moe_used_above_count.gguf", "llama.expert_used_count = 5 must be between 1 and llama.expert_count = 4",
                  moe(used=5))
    yield variant("moe_used_0.gguf", "llama.expert_used_count = 0 must be between 1", moe(used=0))
    yield variant("moe_expert_count_huge.gguf", "llama.expert_count = 4096 is above 1024", moe(n_expert=4096))
    yield variant("moe_expert_count_mismatch.gguf", "tensor 'blk.0.ffn_gate_inp.weight' has the wrong shape",
                  moe(n_expert=8))
    yield variant("moe_expert_shape.gguf", "tensor 'blk.0.ffn_up_exps.weight' has the wrong shape",
                  moe(up_ne=[64, 128, 3]))
    # (a fused gate and up, which llama does not read in the reference either)
    yield variant("moe_gate_up_fused.gguf", "missing tensor 'blk.0.ffn_gate_exps.weight'", moe(fused=True))

    def set_u32(key, v):
        def f(m):
            m.kvs[m.kv_index(key)] = kv_u32(key, v)
        return f
    yield variant("dots1_gating_none.gguf", "dots1.expert_gating_func = 0: not a gating function",
                  dots1(lambda m: m.drop_kv("dots1.expert_gating_func")))
    yield variant("dots1_gating_9.gguf", "dots1.expert_gating_func = 9: not a gating function",
                  dots1(set_u32("dots1.expert_gating_func", 9)))
    yield variant("dots1_gating_5.gguf", "dots1.expert_gating_func = 5: not a gating function",
                  dots1(set_u32("dots1.expert_gating_func", 5)))
    yield variant("dots1_shared_0.gguf", "dots1.expert_shared_count must be > 0",
                  dots1(set_u32("dots1.expert_shared_count", 0)))
    yield variant("dots1_kv_heads_2.gguf", "grouped key/value heads are not supported by this family",
                  dots1(set_u32("dots1.attention.head_count_kv", 2)))
    yield variant("dots1_no_expert_ff.gguf", "key not found in model: dots1.expert_feed_forward_length",
                  dots1(lambda m: m.drop_kv("dots1.expert_feed_forward_length")))
    # (the file unbroken loads: warn_cases' dots1_valid_bos_out_of_range)

    def u32_kv(key, v):
        def f(m):
            m.kvs[m.kv_index(key)] = kv_u32(key, v)
        return f
    yield variant("block_count_0.gguf", "llama.block_count = 0 is out of range", u32_kv("llama.block_count", 0))
    yield variant("block_count_100000.gguf", "llama.block_count = 100000 is out of range", u32_kv("llama.block_count", 100000))
    yield variant("head_count_0.gguf", "llama.attention.head_count is 0", u32_kv("llama.attention.head_count", 0))
    yield variant("head_count_kv_3.gguf", "head_count_kv = 3 does not divide", u32_kv("llama.attention.head_count_kv", 3))
    yield variant("embedding_length_missing.gguf", "embedding_length",
                  lambda m: m.drop_kv("llama.embedding_length"))

    def tok_model(m):
        m.kvs[m.kv_index("tokenizer.ggml.model")] = kv_str("tokenizer.ggml.model", "nosuchtok")
    yield variant("tokenizer_model_unknown.gguf", "nosuchtok", tok_model)
    yield variant("tokens_missing.gguf", "tokenizer.ggml.tokens", lambda m: m.drop_kv("tokenizer.ggml.tokens"))

    def tokens_i32(m):
        m.kv("tokenizer.ggml.tokens").payload = array(I32, [scalar(I32, i) for i in range(len(TOKENS))])
    yield variant("tokens_type_i32.gguf", "tokenizer.ggml.tokens is an array of element type i32", tokens_i32)

    # --- weights: a required tensor missing, or of the wrong shape
    def drop_ti(name):
        def f(m):
            m.tis = [t for t in m.tis if t.name != name]
        return f
    yield variant("tensor_missing_ffn_up.gguf", "missing tensor 'blk.0.ffn_up.weight'", drop_ti("blk.0.ffn_up.weight"))
    yield variant("tensor_missing_output_norm.gguf", "missing tensor 'output_norm.weight'",
                  drop_ti("output_norm.weight"))
    yield variant("tensor_wrong_shape_attn_k.gguf", "tensor 'blk.0.attn_k.weight' has the wrong shape",
                  ti_set("blk.0.attn_k.weight", ne=[64, 16]))
    yield variant("tensor_wrong_shape_embd.gguf", "tensor 'token_embd.weight' has the wrong shape",
                  ti_set("token_embd.weight", ne=[32, 16]))
    # --- the vocabulary's own rules
    def scores_short(m):
        m.kv("tokenizer.ggml.scores").payload = array(F32, [scalar(F32, 0.0)])
    yield variant("vocab_scores_short.gguf", "Index out of array bounds for scores (1 < ", scores_short)

    def scores_str(m):
        m.kv("tokenizer.ggml.scores").payload = array(STR, [gstr(b"x") for _ in TOKENS])
    yield variant("vocab_scores_strings.gguf", "invalid gguf type for tokenizer.ggml.scores", scores_str)

    def toktype_short(m):
        m.kv("tokenizer.ggml.token_type").payload = array(I32, [scalar(I32, 1)])
    yield variant("vocab_token_type_short.gguf", "Index out of array bounds for toktypes (1 < ", toktype_short)

    def toktype_f32(m):
        m.kv("tokenizer.ggml.token_type").payload = array(F32, [scalar(F32, 1.0) for _ in TOKENS])
    yield variant("vocab_token_type_f32.gguf", "tokenizer.ggml.token_type is an array of element type f32", toktype_f32)

    def dup_token(m):
        toks = list(TOKENS)
        toks[4] = toks[3]
        m.kv("tokenizer.ggml.tokens").payload = array(STR, [gstr(t) for t in toks])
    yield variant("vocab_duplicate_token.gguf", "appears twice in the vocabulary", dup_token)

    def bos_type(m):
        m.kvs[m.kv_index("tokenizer.ggml.bos_token_id")] = kv_str("tokenizer.ggml.bos_token_id", "1")
    yield variant("vocab_bos_id_string.gguf", "tokenizer.ggml.bos_token_id has wrong type", bos_type)

    def gpt2_no_merges(m):
        m.kvs[m.kv_index("tokenizer.ggml.model")] = kv_str("tokenizer.ggml.model", "gpt2")
    yield variant("vocab_bpe_without_merges.gguf", "cannot find tokenizer merges", gpt2_no_merges)

    def unknown_pre(m):
        m.kvs[m.kv_index("tokenizer.ggml.model")] = kv_str("tokenizer.ggml.model", "gpt2")
        m.kvs.append(KV("tokenizer.ggml.merges", ARR, array(STR, [gstr(b"a b")])))
        m.kvs.append(kv_str("tokenizer.ggml.pre", "nosuchpre"))
    yield variant("vocab_pre_unknown.gguf", "unknown pre-tokenizer type: 'nosuchpre'", unknown_pre)


def warn_cases(base):
    """Valid files with vocabulary oddities the reference accepts with a
    warning: they must load, and the log must say so."""
    def variant(name, expect, fn):
        m = base.copy()
        fn(m)
        return name, m.build()[0], expect

    def bos_far(m):
        m.kvs[m.kv_index("tokenizer.ggml.bos_token_id")] = kv_u32("tokenizer.ggml.bos_token_id", 999)
    yield variant("vocab_bos_out_of_range.gguf", "bad special token: 'tokenizer.ggml.bos_token_id' = 999", bos_far)
    # (the dots1 file the `cases` break, valid: it loads)
    yield variant("dots1_valid_bos_out_of_range.gguf", "bad special token: 'tokenizer.ggml.bos_token_id' = 999",
                  dots1(bos_far))

    def byte_tok(m):
        m.kv("tokenizer.ggml.token_type").payload = array(
            I32, [scalar(I32, 2 if i == 0 else 3 if i < 3 else 6 if i == 5 else 1) for i in range(len(TOKENS))])
    yield variant("vocab_byte_token_malformed.gguf", "byte token(s) do not read <0xHH>", byte_tok)

    def merges_unknown(m):
        m.kvs[m.kv_index("tokenizer.ggml.model")] = kv_str("tokenizer.ggml.model", "gpt2")
        # 4 distinct merges ("c d" and "zz yy" twice); not tokens: "zz yy",
        # "cd" (no space: the reference's pair of empty strings) and "c "
        # (an empty second half)
        merges = [b"c d", b"zz yy", b"c d", b"zz yy", b"cd", b"c "]
        m.kvs.append(KV("tokenizer.ggml.merges", ARR, array(STR, [gstr(x) for x in merges])))
        m.kvs.append(kv_str("tokenizer.ggml.pre", "gpt-2"))
    yield variant("vocab_merges_unknown.gguf", "3 of 4 BPE merges name strings that are not tokens", merges_unknown)

    def eos_default_far(m):
        # SPM's default EOS id (2) exists; an explicit out-of-range EOS keeps it
        m.kvs.append(kv_u32("tokenizer.ggml.eos_token_id", 12345))
    yield variant("vocab_eos_out_of_range.gguf", "bad special token: 'tokenizer.ggml.eos_token_id' = 12345", eos_default_far)


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: %s OUTDIR\n" % sys.argv[0])
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    base = base_model()
    raw, _ = base.build()
    with open(os.path.join(outdir, "base.gguf"), "wb") as f:
        f.write(raw)
    lines = []
    seen = set()
    for name, data, expect in cases(base):
        assert name not in seen, name
        assert "\t" not in expect and "\n" not in expect
        assert data != raw, name
        seen.add(name)
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
        lines.append("%s\t%s\n" % (name, expect))
    with open(os.path.join(outdir, "cases.tsv"), "w") as f:
        f.writelines(lines)
    wlines = []
    for name, data, expect in warn_cases(base):
        assert name not in seen, name
        seen.add(name)
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
        wlines.append("%s\t%s\n" % (name, expect))
    with open(os.path.join(outdir, "warn_cases.tsv"), "w") as f:
        f.writelines(wlines)
    print("wrote base.gguf (%d bytes) and %d malformed files to %s" % (len(raw), len(lines), outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
