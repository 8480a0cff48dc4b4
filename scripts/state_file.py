#!/usr/bin/env python3
"""Reads llama.cpp state bytes (the format of llama.cpp 0c1e570, which
minfer writes too) and compares two of them. Standard library only.

Kinds, told apart by their first word: session file ('ggsn'), sequence file
('ggsq'), sequence state (0xaf143cd8), otherwise a whole state (arch name).
See src/context/state.rs for the layout.

usage:
  state_file.py dump FILE              structure, one line per item (K/V data as value ranges)
  state_file.py compare A B [TOL]      A and B must have the same structure (every byte outside
                                       the K/V data equal); prints the largest |difference|
                                       of the K/V values and fails if it exceeds TOL (default: any)
  state_file.py derive SESSION OUTDIR  writes state.bin, seq.bin (sequence 0) and seqfile.bin
                                       from a session file of one sequence (for that case the
                                       reference's sequence state holds the whole state's memory)
"""
import struct
import sys

SESSION_MAGIC, SEQ_MAGIC, IO_MAGIC = 0x6767736E, 0x67677371, 0xAF143CD8


class Reader:
    def __init__(self, data):
        self.d, self.at = data, 0
        self.items = []  # (name, bytes) for metadata; ("data", type, bytes) for K/V

    def take(self, n):
        if self.at + n > len(self.d):
            raise ValueError(f"truncated at byte {self.at} (needs {n} more)")
        b = self.d[self.at:self.at + n]
        self.at += n
        return b

    def word(self, name, fmt="<I"):
        b = self.take(struct.calcsize(fmt))
        self.items.append((name, b))
        return struct.unpack(fmt, b)[0]

    def data(self, name, ty, n):
        self.items.append((name, ty, self.take(n)))


def parse_cache(r, label):
    n_stream = r.word(f"{label}.n_stream")
    for s in range(n_stream):
        p = f"{label}.stream{s}"
        count = r.word(f"{p}.cell_count")
        if count == 0:
            continue
        for i in range(count):
            r.word(f"{p}.cell{i}.pos", "<i")
            n_seq = r.word(f"{p}.cell{i}.n_seq_id")
            for j in range(n_seq):
                r.word(f"{p}.cell{i}.seq{j}", "<i")
        v_trans = r.word(f"{p}.v_trans")
        n_layer = r.word(f"{p}.n_layer")
        for il in range(n_layer):
            ty = r.word(f"{p}.k{il}.type", "<i")
            row = r.word(f"{p}.k{il}.row_bytes", "<Q")
            r.data(f"{p}.k{il}.data", ty, row * count)
        for il in range(n_layer):
            ty = r.word(f"{p}.v{il}.type", "<i")
            if v_trans:
                el = r.word(f"{p}.v{il}.elem_bytes")
                n_embd = r.word(f"{p}.v{il}.n_embd_v_gqa")
                r.data(f"{p}.v{il}.data", ty, el * n_embd * count)
            else:
                row = r.word(f"{p}.v{il}.row_bytes", "<Q")
                r.data(f"{p}.v{il}.data", ty, row * count)


def parse(data):
    r = Reader(data)
    magic = struct.unpack_from("<I", data)[0] if len(data) >= 4 else None
    if magic in (SESSION_MAGIC, SEQ_MAGIC):
        r.word("magic")
        r.word("version")
        n = r.word("n_token")
        r.items.append(("tokens", r.take(4 * n)))
    elif magic == IO_MAGIC:
        r.word("io_magic")
        r.word("seq_id", "<i")
    if magic not in (SEQ_MAGIC, IO_MAGIC):
        n = r.word("arch_len")
        r.items.append(("arch", r.take(n)))
    k = 0
    while r.at < len(data):  # one cache, or gemma3's two
        parse_cache(r, f"cache{k}")
        k += 1
    return r.items


def values(ty, b):
    if ty == 1:
        return struct.unpack(f"<{len(b) // 2}e", b)
    if ty == 0:
        return struct.unpack(f"<{len(b) // 4}f", b)
    raise ValueError(f"K/V type {ty}")


def dump(path):
    for it in parse(open(path, "rb").read()):
        if len(it) == 2:
            name, b = it
            if name in ("arch",):
                print(f"{name} {b.decode(errors='replace')}")
            elif name == "tokens":
                print(f"tokens {list(struct.unpack(f'<{len(b) // 4}i', b))}")
            else:
                print(f"{name} {int.from_bytes(b, 'little', signed=name.endswith(('pos', 'seq_id')) or '.seq' in name)}")
        else:
            name, ty, b = it
            v = values(ty, b)
            print(f"{name} {len(b)} bytes" + (f" [{min(v):.4g}, {max(v):.4g}]" if v else ""))


def compare(a_path, b_path, tol):
    a, b = parse(open(a_path, "rb").read()), parse(open(b_path, "rb").read())
    if len(a) != len(b):
        print(f"different structure: {len(a)} vs {len(b)} items")
        return 1
    worst, n_data, n_equal = 0.0, 0, 0
    for x, y in zip(a, b):
        if x[0] != y[0] or len(x) != len(y):
            print(f"different structure at {x[0]} / {y[0]}")
            return 1
        if len(x) == 2:
            if x[1] != y[1]:
                print(f"{x[0]} differs: {x[1].hex()} vs {y[1].hex()}")
                return 1
            continue
        if x[1] != y[1] or len(x[2]) != len(y[2]):
            print(f"{x[0]}: type or size differs")
            return 1
        n_data += 1
        n_equal += x[2] == y[2]
        worst = max([worst] + [abs(p - q) for p, q in zip(values(x[1], x[2]), values(y[1], y[2]))])
    print(f"same structure ({len(a)} items); K/V blocks byte-identical: {n_equal}/{n_data}; max |K/V difference| {worst:.4g}")
    return 0 if tol is None or worst <= tol else 1


def derive(session, outdir):
    d = open(session, "rb").read()
    magic, version, n = struct.unpack_from("<III", d)
    assert magic == SESSION_MAGIC and version == 10, "not a session file"
    head, state = d[:12 + 4 * n], d[12 + 4 * n:]
    (arch_len,) = struct.unpack_from("<I", state)
    memory = state[4 + arch_len:]
    open(f"{outdir}/state.bin", "wb").write(state)
    open(f"{outdir}/seq.bin", "wb").write(struct.pack("<Ii", IO_MAGIC, 0) + memory)
    open(f"{outdir}/seqfile.bin", "wb").write(struct.pack("<III", SEQ_MAGIC, 3, n) + head[12:] + memory)
    open(f"{outdir}/session.bin", "wb").write(d)
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "dump" and len(sys.argv) == 3:
        dump(sys.argv[2])
    elif cmd == "compare" and len(sys.argv) in (4, 5):
        sys.exit(compare(sys.argv[2], sys.argv[3], float(sys.argv[4]) if len(sys.argv) == 5 else None))
    elif cmd == "derive" and len(sys.argv) == 4:
        sys.exit(derive(sys.argv[2], sys.argv[3]))
    else:
        print(__doc__)
        sys.exit(2)
