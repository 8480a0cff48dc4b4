#!/usr/bin/env python3
"""corpus.json (a JSON array of strings) → one hex-encoded UTF-8 string per
line, for the C golden test (which then needs no JSON parser)."""
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    corpus = json.load(f)
with open(sys.argv[2], "w") as out:
    for s in corpus:
        out.write(s.encode("utf-8", "surrogatepass").hex() + "\n")
