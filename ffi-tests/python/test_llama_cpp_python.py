#!/usr/bin/env python3
"""llama-cpp-python 0.3.36, unchanged, on the library LLAMA_CPP_LIB_PATH points at.

usage (ffi-tests/python/run.sh sets up the environment and passes the models):
  test_llama_cpp_python.py GOLDEN.json MODEL...            check: ok/FAIL/skip lines and two
                                                           tallies, "llama_cpp_python_behaviour:
                                                           N passed, M failed" and
                                                           "llama_cpp_python_vs_reference: ..."
  test_llama_cpp_python.py --record GOLDEN.json MODEL...   write what this library produces (with
                                                           the reference library: run.sh --record)

The `llama_cpp` package is the pure-Python code of the sdist (PYTHONPATH=<sdist dir>); it loads
libllama.so from $LLAMA_CPP_LIB_PATH. Every observation below is made the same way in both modes
(same calls, same order, same instances), so the golden is what the reference library answers to
exactly these calls.

behaviour (the API works and is self-consistent; what does not follow the logits equals the
reference's): sizes and parameters, metadata, token ids and detokenized bytes, chat prompt token
counts, n_ctx resolution, echo log-probabilities present, a seed repeating, n_threads 1 and 2
bit-identical, n_batch 4 and 64 the same text, and save_state/load_state into a fresh instance
continuing exactly as the original (skipped, with the reason, while llama_state_get_size returns
0, i.e. the state API is not implemented).
vs_reference (what follows the logits): generated text (greedy and seeded, short outputs),
log-probabilities and embeddings (as recorded: rounded to 6 digits) identical to the reference's,
with llama-cpp-python's default flash_attn=False (the reference's attention without flash
attention, src/context/attention_mha.rs) and with flash_attn=True. Every check is required.
"""
import json
import os
import sys

import numpy as np

import llama_cpp
from llama_cpp import Llama

PROMPT = "The capital of France is"
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
TOKENIZE_TEXTS = [
    "Hello, world!",
    "  two leading spaces,\ttabs\tand\nnewlines\n\n",
    "Ünïcödé: 日本語のテキスト, emoji 🙂👍🏽, Ελληνικά",
    "<|im_start|>user\nhi<|im_end|>",
    "<start_of_turn>user\nhi<end_of_turn>",
    "",
]
EMBED_TEXTS = ["The cat sat on the mat.", "Paris is the capital of France."]
N_GREEDY = 12
N_SEEDED = 12
N_CHAT = 8


def small_ctx(model_path):
    # Llama keeps scores[n_ctx, n_vocab] float32 with logits_all: keep gemma-3's (262k vocab) small.
    return 128 if "gemma" in os.path.basename(model_path) else 256


def floats(xs, digits=6):
    return [None if x is None else round(float(x), digits) for x in xs]


def completion_record(out):
    choice = out["choices"][0]
    rec = {"text": choice["text"], "finish_reason": choice["finish_reason"], "usage": out["usage"]}
    lp = choice.get("logprobs")
    if lp is not None:
        rec["tokens"] = lp["tokens"]
        rec["token_logprobs"] = floats(lp["token_logprobs"])
        rec["top_logprobs"] = [None if t is None else {k: round(float(v), 6) for k, v in t.items()}
                               for t in lp["top_logprobs"]]
    return rec


def observe(model_path):
    """Every call of the test on one model; returns {"name": value} (JSON-serialisable)."""
    obs = {}
    n_ctx = small_ctx(model_path)
    llm = Llama(model_path=model_path, n_ctx=n_ctx, n_batch=64, n_ubatch=64, n_threads=2,
                logits_all=True, seed=1234, verbose=False)

    # --- the model as llama-cpp-python sees it
    obs["model"] = {
        "n_vocab": llm.n_vocab(), "n_embd": llm.n_embd(), "n_ctx": llm.n_ctx(),
        "n_ctx_train": llm._model.n_ctx_train(), "token_bos": llm.token_bos(),
        "token_eos": llm.token_eos(), "chat_format": llm.chat_format,
        "n_threads": llama_cpp.llama_n_threads(llm.ctx),
        "n_threads_batch": llama_cpp.llama_n_threads_batch(llm.ctx),
        "n_batch": llama_cpp.llama_n_batch(llm.ctx), "n_ubatch": llama_cpp.llama_n_ubatch(llm.ctx),
    }
    obs["metadata"] = dict(sorted(llm.metadata.items()))

    # --- tokenize / detokenize (four flag combinations)
    toks = []
    for text in TOKENIZE_TEXTS:
        for add_bos in (False, True):
            for special in (False, True):
                ids = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=special)
                toks.append({"text": text, "add_bos": add_bos, "special": special, "ids": ids,
                             "detok": llm.detokenize(ids).hex(),
                             "detok_special": llm.detokenize(ids, special=True).hex()})
    obs["tokenize"] = toks

    # --- completions on the logits_all instance
    obs["greedy"] = completion_record(llm.create_completion(
        PROMPT, max_tokens=N_GREEDY, temperature=0.0, logprobs=3))
    obs["echo"] = completion_record(llm.create_completion(
        PROMPT, max_tokens=1, temperature=0.0, logprobs=1, echo=True))
    obs["seeded"] = [completion_record(llm.create_completion(
        PROMPT, max_tokens=N_SEEDED, temperature=0.8, seed=seed)) for seed in (42, 43, 42)]
    chat = llm.create_chat_completion(messages=CHAT, max_tokens=N_CHAT, temperature=0.0)
    obs["chat"] = {"content": chat["choices"][0]["message"]["content"], "usage": chat["usage"]}
    llm.close()

    # --- flash attention on (llama-cpp-python's default is off: flash_attn=False sets
    # LLAMA_FLASH_ATTN_TYPE_DISABLED, and the reference then runs another attention)
    llm = Llama(model_path=model_path, n_ctx=n_ctx, n_batch=64, n_ubatch=64, n_threads=2,
                logits_all=True, seed=1234, verbose=False, flash_attn=True)
    obs["fa_greedy"] = completion_record(llm.create_completion(
        PROMPT, max_tokens=N_GREEDY, temperature=0.0, logprobs=3))
    obs["fa_seeded"] = [completion_record(llm.create_completion(
        PROMPT, max_tokens=N_SEEDED, temperature=0.8, seed=seed)) for seed in (42, 43)]
    llm.close()

    # --- n_ctx = 0: the model's training context
    llm = Llama(model_path=model_path, n_ctx=0, n_batch=8, n_ubatch=8, n_threads=2, verbose=False)
    obs["n_ctx_0"] = {"n_ctx": llm.n_ctx(), "n_batch": llama_cpp.llama_n_batch(llm.ctx)}
    llm.close()

    # --- threads and batch size: the same greedy completion with its log-probabilities
    # (logits_all) on 1 and 2 threads, and with the prompt decoded 4 tokens at a time
    variants = {}
    for name, threads, batch in (("threads1", 1, 64), ("threads2", 2, 64), ("batch4", 2, 4)):
        llm = Llama(model_path=model_path, n_ctx=n_ctx, n_batch=batch, n_ubatch=batch,
                    n_threads=threads, logits_all=True, seed=1234, verbose=False)
        rec = completion_record(llm.create_completion(
            PROMPT, max_tokens=N_GREEDY, temperature=0.0, logprobs=1))
        rec["n_threads"] = llama_cpp.llama_n_threads(llm.ctx)
        rec["n_batch"] = llama_cpp.llama_n_batch(llm.ctx)
        variants[name] = rec
        llm.close()
    obs["params"] = variants

    # --- save_state after the prompt, load_state into a fresh instance, continue there
    obs["state"] = observe_state(model_path, n_ctx)

    # --- embeddings: mean pooling of two inputs (normalized), and per-token (no pooling)
    llm = Llama(model_path=model_path, embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                n_ctx=n_ctx, n_batch=64, n_ubatch=64, n_threads=2, verbose=False)
    obs["embed_mean"] = [floats(v) for v in llm.embed(EMBED_TEXTS, normalize=True)]
    llm.close()
    llm = Llama(model_path=model_path, embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE,
                n_ctx=n_ctx, n_batch=64, n_ubatch=64, n_threads=2, verbose=False)
    per_token = llm.embed(EMBED_TEXTS[0])
    obs["embed_none"] = {"n_tokens": len(per_token), "last": floats(per_token[-1])}
    llm.close()

    # --- a LoRA adapter (lora_path, lora_scale: llama_adapter_lora_init and
    # llama_set_adapters_lora), where run.sh wrote one for this model
    lora = os.environ.get("LORA_" + os.path.basename(model_path).split("-")[0].upper())
    if lora:
        llm = Llama(model_path=model_path, lora_path=lora, lora_scale=0.8, n_ctx=n_ctx, n_batch=64,
                    n_ubatch=64, n_threads=2, logits_all=True, seed=1234, verbose=False)
        obs["lora_greedy"] = completion_record(llm.create_completion(
            PROMPT, max_tokens=N_GREEDY, temperature=0.0, logprobs=3))
        llm.close()
    return obs


def observe_state(model_path, n_ctx):
    """Greedy continuation of PROMPT on the instance that evaluated it, and on a fresh instance
    that only received its saved state: the fresh one re-evaluates the prompt's last token and
    reads every earlier position from the restored KV cache."""
    kw = dict(model_path=model_path, n_ctx=n_ctx, n_batch=64, n_ubatch=64, n_threads=2,
              seed=1234, verbose=False)
    llm = Llama(**kw)
    llm.eval(llm.tokenize(PROMPT.encode("utf-8")))
    size = int(llama_cpp.llama_state_get_size(llm.ctx))
    if size == 0:
        llm.close()
        return {"skip": "llama_state_get_size returned 0 after a decode: the library does not "
                        "implement the state API yet (save_state would save nothing)"}
    state = llm.save_state()
    original = llm.create_completion(PROMPT, max_tokens=N_GREEDY, temperature=0.0)
    llm.close()
    fresh = Llama(**kw)
    try:
        fresh.load_state(state)
        restored = fresh.create_completion(PROMPT, max_tokens=N_GREEDY, temperature=0.0)
        restored_text = restored["choices"][0]["text"]
    except RuntimeError as e:
        restored_text = f"<load_state failed: {e}>"
    fresh.close()
    return {"state_bytes_nonzero": state.llama_state_size > 0,
            "original": original["choices"][0]["text"], "restored": restored_text}


# ---------------------------------------------------------------------------------------------
# checks

class Tally:
    """Two groups: "behaviour" (the API works and is self-consistent; tokenizer, metadata and
    template results equal the reference's) and "vs_reference" (outputs that follow the logits:
    generated text, log-probabilities, embeddings, compared with the reference's)."""

    def __init__(self):
        self.counts = {"behaviour": [0, 0], "vs_reference": [0, 0]}

    def check(self, cond, what, detail="", group="behaviour"):
        self.counts[group][0 if cond else 1] += 1
        if cond:
            print(f"ok   {what}")
        else:
            print(f"FAIL {what}" + (f": {detail}" if detail else ""))

    def ref(self, cond, what, detail=""):
        self.check(cond, what, detail, group="vs_reference")

    @staticmethod
    def skip(what, reason):
        print(f"skip {what}: {reason}")


def max_logprob_diff(ours, ref):
    """Largest |difference| over the shared top tokens' log-probabilities (and the chosen token's
    when both chose it), over the steps whose context is the same: up to and including the first
    step where the chosen tokens differ (after it the two continue different texts)."""
    worst = 0.0
    steps = zip(ours.get("tokens") or [], ref.get("tokens") or [], ours.get("token_logprobs") or [],
                ref.get("token_logprobs") or [], ours.get("top_logprobs") or [], ref.get("top_logprobs") or [])
    for tok_a, tok_b, a, b, ta, tb in steps:
        if tok_a == tok_b and a is not None and b is not None:
            worst = max(worst, abs(a - b))
        for tok in set(ta or {}) & set(tb or {}):
            worst = max(worst, abs(ta[tok] - tb[tok]))
        if tok_a != tok_b:
            break
    return worst


def common_prefix_words(a, b):
    n = 0
    for x, y in zip(a.split(" "), b.split(" ")):
        if x != y:
            break
        n += 1
    return n


def cosine(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def same_text(t, name, ours, ref):
    t.ref(ours == ref, f"{name}: text equals the reference's",
            f"{ours!r} vs {ref!r} (first {common_prefix_words(ours, ref)} words agree)")


def check_model(t, name, obs, ref):
    t.check(obs["model"] == ref["model"], f"{name}: sizes, special tokens, chat format, context "
            "parameters as with the reference", f"{obs['model']} vs {ref['model']}")
    diff = sorted(k for k in set(obs["metadata"]) | set(ref["metadata"])
                  if obs["metadata"].get(k) != ref["metadata"].get(k))
    t.check(not diff, f"{name}: Llama.metadata ({len(ref['metadata'])} keys) equals the reference's",
            f"differing keys: {diff}")

    bad = [f"{r['text']!r} bos={r['add_bos']} special={r['special']}"
           for o, r in zip(obs["tokenize"], ref["tokenize"]) if o != r]
    t.check(len(obs["tokenize"]) == len(ref["tokenize"]) and not bad,
            f"{name}: tokenize/detokenize of {len(ref['tokenize'])} cases equal the reference's",
            "; ".join(bad))
    for o in obs["tokenize"]:
        if not o["special"] and not o["add_bos"]:
            t.check(bytes.fromhex(o["detok"]) == o["text"].encode("utf-8"),
                    f"{name}: detokenize(tokenize({o['text'][:24]!r})) round-trips",
                    bytes.fromhex(o["detok"]).decode("utf-8", "replace"))

    g, rg = obs["greedy"], ref["greedy"]
    same_text(t, f"{name}: greedy completion ({N_GREEDY} tokens)", g["text"], rg["text"])
    t.ref(g["tokens"] == rg["tokens"], f"{name}: greedy tokens equal the reference's")
    d = max_logprob_diff(g, rg)
    t.ref(g == rg, f"{name}: greedy log-probabilities (top 3) identical to the reference's",
          f"max diff {d:.6f}")
    e, re_ = obs["echo"], ref["echo"]
    t.check(e["tokens"][:-1] == re_["tokens"][:-1] and e["token_logprobs"][0] is None
            and None not in e["token_logprobs"][1:],
            f"{name}: echo=True returns the prompt tokens with log-probabilities (none for the first)")
    d = max_logprob_diff(e, re_)
    t.ref(e == re_, f"{name}: prompt log-probabilities (logits_all) identical to the reference's",
          f"max diff {d:.6f}")

    s, rs = obs["seeded"], ref["seeded"]
    for i, seed in enumerate((42, 43)):
        same_text(t, f"{name}: seeded completion (seed {seed}, temperature 0.8, {N_SEEDED} tokens)",
                  s[i]["text"], rs[i]["text"])
    t.check(s[2]["text"] == s[0]["text"], f"{name}: the same seed gives the same completion")

    c, rc = obs["chat"], ref["chat"]
    t.check(c["usage"]["prompt_tokens"] == rc["usage"]["prompt_tokens"],
            f"{name}: chat template renders to the reference's prompt length "
            f"({rc['usage']['prompt_tokens']} tokens)")
    same_text(t, f"{name}: greedy chat completion ({N_CHAT} tokens)", c["content"], rc["content"])

    g, rg = obs["fa_greedy"], ref["fa_greedy"]
    same_text(t, f"{name}: flash_attn=True greedy completion", g["text"], rg["text"])
    d = max_logprob_diff(g, rg)
    t.ref(d == 0.0, f"{name}: flash_attn=True greedy log-probabilities (top 3) identical to the "
          f"reference's (max diff {d:.4f})")
    for i, seed in enumerate((42, 43)):
        same_text(t, f"{name}: flash_attn=True seeded completion (seed {seed})",
                  obs["fa_seeded"][i]["text"], ref["fa_seeded"][i]["text"])

    t.check(obs["n_ctx_0"] == ref["n_ctx_0"], f"{name}: n_ctx=0 resolves as with the reference "
            f"({ref['n_ctx_0']})", f"{obs['n_ctx_0']}")

    p, rp = obs["params"], ref["params"]
    t.check(p["threads1"]["n_threads"] == 1 and p["threads2"]["n_threads"] == 2
            and p["batch4"]["n_batch"] == 4, f"{name}: n_threads and n_batch reach the context")
    t.check(p["threads1"]["token_logprobs"] == p["threads2"]["token_logprobs"]
            and p["threads1"]["text"] == p["threads2"]["text"],
            f"{name}: 1 and 2 threads give bit-identical log-probabilities")
    t.check(p["batch4"]["text"] == p["threads2"]["text"],
            f"{name}: n_batch 4 (prompt in several decodes) gives the n_batch 64 text")
    for k in ("threads2", "batch4"):
        same_text(t, f"{name}: {k} greedy completion", p[k]["text"], rp[k]["text"])
        t.ref(p[k]["token_logprobs"] == rp[k]["token_logprobs"],
              f"{name}: {k} log-probabilities identical to the reference's",
              f"max diff {max_logprob_diff(p[k], rp[k]):.6f}")

    cos = [cosine(a, b) for a, b in zip(obs["embed_mean"], ref["embed_mean"])]
    norms = [float(np.linalg.norm(v)) for v in obs["embed_mean"]]
    t.ref(obs["embed_mean"] == ref["embed_mean"] and len(cos) == len(EMBED_TEXTS)
          and all(abs(n - 1) < 1e-4 for n in norms),
          f"{name}: embed (mean pooling, normalized, {len(EMBED_TEXTS)} inputs in one batch) "
          f"identical to the reference's", f"cosines {', '.join(f'{c:.6f}' for c in cos)}")
    en, ren = obs["embed_none"], ref["embed_none"]
    c = cosine(en["last"], ren["last"])
    t.ref(en == ren, f"{name}: embed (no pooling): {ren['n_tokens']} token vectors, the last "
          f"identical to the reference's", f"cosine {c:.6f}")

    if "lora_greedy" in ref:
        lg, rlg = obs.get("lora_greedy"), ref["lora_greedy"]
        t.check(lg is not None, f"{name}: Llama(lora_path=...) loads the adapter")
        if lg is not None:
            t.check(lg["token_logprobs"] != obs["greedy"]["token_logprobs"],
                    f"{name}: the adapter changes the log-probabilities")
            same_text(t, f"{name}: greedy completion with a LoRA adapter (lora_scale 0.8)", lg["text"], rlg["text"])
            t.ref(lg == rlg, f"{name}: LoRA greedy log-probabilities (top 3) identical to the reference's",
                  f"max diff {max_logprob_diff(lg, rlg):.6f}")

    st, rst = obs["state"], ref["state"]
    if "skip" in st:
        t.skip(f"{name}: save_state/load_state", st["skip"])
    else:
        t.check(st["state_bytes_nonzero"] and st["restored"] == st["original"],
                f"{name}: load_state into a fresh instance continues as the original",
                f"{st['restored']!r} vs {st['original']!r}")
        if "skip" not in rst:
            same_text(t, f"{name}: continuation after load_state", st["restored"], rst["original"])


def main(argv):
    record = argv[1:2] == ["--record"]
    args = argv[2:] if record else argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    golden_path, models = args[0], args[1:]
    lib = os.environ.get("LLAMA_CPP_LIB_PATH")
    if not lib:
        sys.exit("LLAMA_CPP_LIB_PATH is not set")
    print(f"llama_cpp {llama_cpp.__version__} from {os.path.dirname(llama_cpp.__file__)}, "
          f"library {lib}/libllama.so")
    obs = {os.path.basename(m): observe(m) for m in models}
    if record:
        with open(golden_path, "w") as f:
            json.dump(obs, f, indent=1, ensure_ascii=False, sort_keys=True)
            f.write("\n")
        print(f"wrote {golden_path}")
        return 0
    with open(golden_path) as f:
        golden = json.load(f)
    t = Tally()
    for name, o in obs.items():
        if name not in golden:
            t.check(False, f"{name}: golden exists")
            continue
        check_model(t, name, o, golden[name])
    for group, (n_pass, n_fail) in t.counts.items():
        print(f"llama_cpp_python_{group}: {n_pass} passed, {n_fail} failed")
    return 1 if any(n_fail for _, n_fail in t.counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
