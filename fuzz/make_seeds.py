#!/usr/bin/env python3
"""Writes the committed seed inputs of the tokenize, gbnf and decode fuzz
targets into fuzz/seeds/<target>/ (the gguf_parse seeds come from
`cargo test --lib gguf::tests::write_fuzz_seeds -- --ignored`).

usage: python3 fuzz/make_seeds.py   (from the repository root)
The input layouts are documented at the top of each fuzz_targets/*.rs."""
import os
import struct

ROOT = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(ROOT, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def i32s(*v):
    return b"".join(struct.pack("<i", x) for x in v)


# --- tokenize: [vocab] [flags] [cap] [4 ids] text
texts = [
    ("ascii", "Hello world! The quick brown fox, 12345 times.".encode()),
    ("specials", "<s>[INST] hi [/INST]</s><|im_start|>user\n<|endoftext|><unk>".encode()),
    ("unicode", "Grüße, мир! 你好世界 こんにちは 🙂🚀 \u00a0\u2009tab\tnl\n".encode()),
    ("code", b"def f(x):\n    return x**2  # comment\n\n\n\tif (a&&b) { }"),
    ("bytes", bytes([0xff, 0xfe, 0xc3, 0x28, 0xe2, 0x82, 0x00, 0x01, 0x80, 0xbf, 0xf0, 0x9f, 0x98])),
    ("spaces", b"   leading  and   trailing   \n\n \r\n  "),
]
for vi in range(21):
    name, text = texts[vi % len(texts)]
    flags = (vi * 37) & 0xFF
    write("tokenize", f"v{vi:02d}_{name}", bytes([vi, flags, 4]) + i32s(0, 1, -1, 1 << 20) + text)

# --- gbnf: [flags] grammar NUL [pattern NUL trigger] steps
grammars = {
    "list": b'root ::= item+\nitem ::= "- " [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ "\\n"\n',
    "arith": b'root  ::= (expr "=" ws term "\\n")+\nexpr  ::= term ([-+*/] term)*\n'
             b'term  ::= ident | num | "(" ws expr ")" ws\nident ::= [a-z] [a-z0-9_]* ws\n'
             b'num   ::= [0-9]+ ws\nws    ::= [ \\t\\n]*\n',
    "json": b'root ::= object\nvalue ::= object | array | string | number | ("true" | "false" | "null") ws\n'
            b'object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws\n'
            b'array ::= "[" ws ( value ("," ws value)* )? "]" ws\n'
            b'string ::= "\\"" ( [^"\\\\\\x7F\\x00-\\x1F] | "\\\\" (["\\\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\\"" ws\n'
            b'number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n'
            b'ws ::= | " " | "\\n" [ \\t]{0,20}\n',
    "reps": b'root ::= "a"{2,5} "b"? ("c" | "d")* [x-z]{3}\n',
    "tokens": b'root ::= <[1]> "x" !<[2]> <[3]>\n',
    "expr_root": b'expr ::= "(" expr ")" | "1"\nroot ::= expr\n',
}
for i, (name, g) in enumerate(sorted(grammars.items())):
    steps = bytes((i * 53 + k * 17) & 0x7F for k in range(24))
    write("gbnf", name, bytes([0x00]) + g + b"\0" + steps)
write("gbnf", "lazy_pattern", bytes([0x03]) + grammars["list"] + b"\0" + b"[\\s\\S]*?(- )" + b"\0"
      + i32s(7) + bytes(range(24)))

# --- decode: [n_ctx, n_batch, n_ubatch, n_seq_max, flags, pooling, reserved] ops
# decode op: 0, mode, n_alloc - 1, n_seq_alloc - 1 (0: one), n_tokens selector, n_tokens - 1, seq0,
# then per token: id, output byte
def decode_op(mode, n, seq=0, out_every=3):
    b = bytes([0, mode, n - 1, 0, 0, n - 1, seq])
    for i in range(n):
        b += bytes([(i * 7 + 3) & 0xFF])            # token id
        b += bytes([0 if i % out_every == 0 else 1])  # output flag byte (& 3 == 0 -> output)
    return b

ctx = bytes([8, 32, 16, 2, 0, 0, 0])
write("decode", "two_batches", ctx + decode_op(0, 8) + decode_op(0, 4))
write("decode", "auto_pos_then_rm", ctx + decode_op(1, 6) + bytes([3, 0, 2, 4]) + decode_op(5, 3))
write("decode", "two_seqs_cp_keep", bytes([8, 32, 16, 3, 2, 0, 0]) + decode_op(0, 5, 0) + decode_op(0, 5, 1)
      + bytes([4, 0, 2, 0, 240]) + bytes([5, 1]) + bytes([10, 0]))
write("decode", "shift_div", ctx + decode_op(0, 10) + bytes([6, 0, 2, 240, 5]) + bytes([7, 0, 0, 240, 2])
      + decode_op(1, 2))
write("decode", "embeddings_mean", bytes([4, 16, 16, 2, 1, 2, 0]) + decode_op(4, 6) + bytes([9, 0, 0]))
write("decode", "get_one", ctx + bytes([2, 5, 1, 2, 3, 4, 5]) + bytes([9, 0, 0]) + bytes([8, 1]))
