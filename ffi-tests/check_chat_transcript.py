#!/usr/bin/env python3
"""Checks a transcript of examples-c/chat.c against the chatml template.

usage: check_chat_transcript.py INPUT.txt STDOUT.txt TRANSCRIPT [SYSTEM]

INPUT.txt holds the user lines given to chat on stdin, STDOUT.txt what it
printed (each reply followed by a newline), TRANSCRIPT the records it wrote with
--transcript ("prompt N\\n<N bytes>\\n" or "reply N\\n<N bytes>\\n", in the
order the text was fed to the model). Checks: one non-empty reply per user
line, the printed replies equal the generated pieces, and the text fed to
the model equals the chatml formatting (SmolLM2's template, detected as
"chatml" by llama_chat_apply_template) of the whole conversation, built
here independently: every prompt record is exactly what the template adds
after the text already fed. Prints one line per failed check and exits 1.
"""
import sys

users = open(sys.argv[1], encoding="utf-8").read().splitlines()
printed = open(sys.argv[2], "rb").read()
data = open(sys.argv[3], "rb").read()
system = sys.argv[4].encode() if len(sys.argv) > 4 else None

records, i = [], 0
while i < len(data):
    nl = data.index(b"\n", i)
    kind, n = data[i:nl].split()
    n = int(n)
    records.append((kind.decode(), data[nl + 1:nl + 1 + n]))
    i = nl + 1 + n + 1

# the replies: the reply pieces between prompts
turns = []
for kind, text in records:
    if kind == "prompt":
        turns.append([text, b""])
    else:
        turns[-1][1] += text
errors = []
if len(turns) != len(users):
    errors.append(f"{len(turns)} prompts for {len(users)} user lines")
for t, (_, reply) in enumerate(turns):
    if not reply.strip():
        errors.append(f"turn {t}: empty reply")

if printed != b"".join(reply + b"\n" for _, reply in turns):
    errors.append("the printed replies differ from the generated pieces")


def chatml(messages, add_ass):
    out = b"".join(b"<|im_start|>" + r + b"\n" + c + b"<|im_end|>\n" for r, c in messages)
    return out + (b"<|im_start|>assistant\n" if add_ass else b"")


messages = [(b"system", system)] if system is not None else []
fed = b""
for t, (prompt, reply) in enumerate(turns):
    messages.append((b"user", users[t].encode()))
    expected = chatml(messages, True)
    if not expected.startswith(fed) or prompt != expected[len(fed):]:
        errors.append(f"turn {t}: prompt {prompt!r} is not the template's continuation {expected[len(fed):]!r}")
    fed = expected + reply
    messages.append((b"assistant", reply))
for e in errors:
    print(e)
print(f"chat transcript: {len(turns)} turns, {len(fed)} bytes fed, {len(errors)} problems")
sys.exit(1 if errors else 0)
