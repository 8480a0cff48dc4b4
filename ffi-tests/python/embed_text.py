#!/usr/bin/env python3
"""llama-cpp-python 0.3.36, unchanged, on an embedding model (ffi-tests/run.sh's
python group: the real all-MiniLM-L6-v2 converted by scripts/fetch-minilm.sh,
and a synthetic BERT): `Llama(embedding=True).embed(...)` of a batch of
sentences (the model's pooling, normalized and not), of one sentence, and
`create_embedding`, printed as JSON with every float as its exact bits (hex).

usage: embed_text.py MODEL.gguf > OUT.json
(PYTHONPATH=<the sdist's dir>, LLAMA_CPP_LIB_PATH=<the libllama.so's dir>, as
ffi-tests/python/run.sh sets them; run on the reference library, the output is
the golden python/golden/embed-NAME.json)
"""
import json
import struct
import sys

from llama_cpp import Llama

SENTENCES = [
    "The cat sat on the mat.",
    "A kitten was sitting on the rug, purring quietly while the rain fell outside.",
    "Interest rates rose sharply this quarter.",
    "Grüße aus Köln! 東京は晴れ。",
]


def bits(v):
    """A vector (or a list of them) as the hex of each f32."""
    if v and isinstance(v[0], list):
        return [bits(x) for x in v]
    return [struct.pack("<f", x).hex() for x in v]


llm = Llama(model_path=sys.argv[1], embedding=True, n_ctx=512, n_batch=512, n_ubatch=512,
            n_threads=2, n_seq_max=4, verbose=False)
obs = {
    "pooling_type": llm.pooling_type(),
    "n_embd": llm.n_embd(),
    "tokens": [llm.tokenize(s.encode()) for s in SENTENCES],
    "batch": bits(llm.embed(SENTENCES)),
    "batch_normalized": bits(llm.embed(SENTENCES, normalize=True)),
    "one": bits(llm.embed(SENTENCES[0])),
    "create_embedding": bits(llm.create_embedding(SENTENCES[2])["data"][0]["embedding"]),
}
llm.close()
print(json.dumps(obs, indent=1))
