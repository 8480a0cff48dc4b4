// Filling a llama_batch entry in the C tests.
#ifndef MINFER_TEST_BATCH_H
#define MINFER_TEST_BATCH_H

#include "llama.h"

// Entry i of `b`: token `t` at position `p` of sequence `s`, `out`: wants logits.
static inline void batch_put(struct llama_batch * b, int i, llama_token t, llama_pos p, llama_seq_id s, bool out) {
    b->token[i] = t;
    b->pos[i] = p;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = s;
    b->logits[i] = out;
}

#endif
