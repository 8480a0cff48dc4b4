// bench_embed: embedding throughput through the C API: one llama_decode of
// N_SEQ sequences of N_TOK tokens each, in an embeddings context with the
// given pooling. Compiled once against llama.h, it runs on minfer or on the
// reference library (pick with LD_LIBRARY_PATH), so the two can be measured
// side by side (scripts/bench-embed.sh).
//
// usage: bench_embed MODEL.gguf N_THREADS [N_SEQ=16] [N_TOK=128] [REPS=5] [POOLING=1]
//   POOLING: llama_pooling_type (-1 the model's, 0 none, 1 mean, 2 cls,
//   3 last, 4 rank).
// The tokens are pseudo-random in [0, n_vocab), the same on every run; each
// sequence starts with the BOS token where the vocabulary has one. The
// context holds the batch: n_ctx = n_batch = n_ubatch = N_SEQ*N_TOK,
// n_seq_max = N_SEQ. One warm-up decode, then REPS timed decodes (the memory
// cleared before each).
// prints: embed n_seq=16 n_tok=128 threads=2 seqs_per_s=S tokens_per_s=T
// (medians of the REPS decodes).
#include "llama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    if (level >= GGML_LOG_LEVEL_ERROR && level != GGML_LOG_LEVEL_CONT) fputs(text, stderr);
}

static int cmp_double(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf N_THREADS [N_SEQ=16] [N_TOK=128] [REPS=5] [POOLING=1]\n", argv[0]);
        return 2;
    }
    const int n_threads = atoi(argv[2]);
    const int n_seq = argc > 3 ? atoi(argv[3]) : 16;
    const int n_tok = argc > 4 ? atoi(argv[4]) : 128;
    const int reps = argc > 5 ? atoi(argv[5]) : 5;
    const int pooling = argc > 6 ? atoi(argv[6]) : 1;
    if (n_threads < 1 || n_seq < 1 || n_tok < 1 || reps < 1) { fprintf(stderr, "bad arguments\n"); return 2; }
    const int n = n_seq * n_tok;
    llama_log_set(quiet, NULL);
    llama_backend_init();

    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    const llama_token bos = llama_vocab_bos(vocab);

    struct llama_context_params cp = llama_context_default_params();
    cp.embeddings = true;
    cp.pooling_type = (enum llama_pooling_type) pooling;
    cp.n_ctx = (uint32_t) n;
    cp.n_batch = (uint32_t) n;
    cp.n_ubatch = (uint32_t) n;
    cp.n_seq_max = (uint32_t) n_seq;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create a context\n"); return 1; }
    const int pooled = llama_pooling_type(ctx) != LLAMA_POOLING_TYPE_NONE;

    struct llama_batch batch = llama_batch_init(n, 0, 1);
    batch.n_tokens = n;
    uint64_t x = 0x9e3779b97f4a7c15ull;  // xorshift64: the same tokens on every run
    for (int s = 0; s < n_seq; s++) {
        for (int p = 0; p < n_tok; p++) {
            const int i = s * n_tok + p;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            batch.token[i] = p == 0 && bos >= 0 ? bos : (llama_token) (x % (uint64_t) n_vocab);
            batch.pos[i] = p;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = s;
            batch.logits[i] = 1;
        }
    }

    double * seqs_per_s = calloc((size_t) reps, sizeof(double));
    for (int r = -1; r < reps; r++) {  // r = -1: warm-up
        // (NULL for an encoder-only model in the reference, which accepts it)
        llama_memory_clear(llama_get_memory(ctx), true);
        const int64_t t0 = llama_time_us();
        const int rc = llama_decode(ctx, batch);
        const int64_t t1 = llama_time_us();
        if (rc != 0) { fprintf(stderr, "llama_decode returned %d\n", rc); return 1; }
        // the embeddings must be there (not timed)
        const float * e = pooled ? llama_get_embeddings_seq(ctx, n_seq - 1) : llama_get_embeddings_ith(ctx, n - 1);
        if (!e) { fprintf(stderr, "no embeddings\n"); return 1; }
        if (r >= 0) seqs_per_s[r] = n_seq / ((double) (t1 - t0) / 1e6);
    }
    qsort(seqs_per_s, (size_t) reps, sizeof(double), cmp_double);
    const double med = reps % 2 ? seqs_per_s[reps / 2] : (seqs_per_s[reps / 2 - 1] + seqs_per_s[reps / 2]) / 2;
    printf("embed n_seq=%d n_tok=%d threads=%d seqs_per_s=%.3f tokens_per_s=%.1f\n", n_seq, n_tok, n_threads, med,
           med * n_tok);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    free(seqs_per_s);
    return 0;
}
