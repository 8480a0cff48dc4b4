#!/usr/bin/env python3
"""llama-cpp-python 0.3.36, unchanged, on a model of one of minfer's families
(ffi-tests/run.sh's python group: the synthetic Q4_K_M model of each family of
golden/parity/families.txt): `Llama(...).create_completion` greedy with
log-probabilities, and seeded, printed as JSON.

usage: family_completion.py MODEL.gguf > OUT.json
(PYTHONPATH=<the sdist's dir>, LLAMA_CPP_LIB_PATH=<the libllama.so's dir>, as
ffi-tests/python/run.sh sets them; run on the reference library, the output is
the golden python/golden/family-FAMILY.json)
"""
import json
import sys

from llama_cpp import Llama


def record(out):
    choice = out["choices"][0]
    rec = {"text": choice["text"], "finish_reason": choice["finish_reason"], "usage": out["usage"]}
    lp = choice.get("logprobs")
    if lp is not None:
        rec["tokens"] = lp["tokens"]
        rec["token_logprobs"] = [None if x is None else round(float(x), 6) for x in lp["token_logprobs"]]
    return rec


llm = Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, logits_all=True, verbose=False)
obs = {
    "greedy": record(llm.create_completion("The capital of France is", max_tokens=16, temperature=0.0, logprobs=1)),
    "seeded": record(llm.create_completion("Once upon a time", max_tokens=16, temperature=0.8, seed=42)),
}
llm.close()
print(json.dumps(obs, indent=1, ensure_ascii=False))
