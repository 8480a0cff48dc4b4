// One llama_decode of consecutive tokens of one sequence, only the last
// token's logits requested: shared by the state tests and state_interop.
#ifndef MINFER_DECODE_UTIL_H
#define MINFER_DECODE_UTIL_H

#include "llama.h"

// Decodes toks[0..n) at positions pos0.. in sequence seq (n <= n_batch);
// returns llama_decode's result.
static inline int decode_tokens(struct llama_context * ctx, const llama_token * toks, int n, llama_pos pos0, llama_seq_id seq) {
    struct llama_batch b = llama_batch_init(n, 0, 1);
    b.n_tokens = n;
    for (int i = 0; i < n; i++) {
        b.token[i] = toks[i];
        b.pos[i] = pos0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = seq;
        b.logits[i] = i == n - 1;
    }
    int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc;
}

#endif
