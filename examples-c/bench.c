// bench: prompt processing and generation speed through the C API, like the
// reference's llama-bench: pp = one llama_decode of N_PP tokens, tg = N_TG
// decodes of one token each. Compiled once against llama.h, it runs on
// minfer or on the reference library (pick with LD_LIBRARY_PATH), so the two
// can be measured side by side.
//
// usage: bench MODEL.gguf [N_THREADS] [N_PP] [N_TG] [REPS] [DEPTH]
// prints: pp<N> t/s and tg<N> t/s (median of REPS runs, default 3), the
// model load time (llama_model_load_from_file) and the process's peak RSS.
// DEPTH (0): the tg decodes follow DEPTH tokens already in the cache (as
// llama-bench -d; filled untimed, N_PP tokens per llama_decode), e.g. 4096
// for a decode at a long context. The prompt is processed in micro-batches of
// at most 512 tokens (llama-bench's default n_ubatch), one llama_decode.
// The context holds max(N_PP, DEPTH + N_TG) tokens (the cache is cleared
// between the tests), so with the defaults the peak RSS is that of a
// 512-token context.
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static void quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) level; (void) text; (void) ud;
}

static int cmp_double(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [N_THREADS] [N_PP] [N_TG] [REPS] [DEPTH]\n", argv[0]);
        return 2;
    }
    const int n_threads = argc > 2 ? atoi(argv[2]) : 2;
    const int n_pp = argc > 3 ? atoi(argv[3]) : 512;
    const int n_tg = argc > 4 ? atoi(argv[4]) : 128;
    const int reps = argc > 5 ? atoi(argv[5]) : 3;
    const int depth = argc > 6 ? atoi(argv[6]) : 0;
    if (n_threads < 1 || n_pp < 1 || n_tg < 1 || reps < 1 || depth < 0) {
        fprintf(stderr, "bench: N_THREADS, N_PP, N_TG and REPS must be positive, DEPTH not negative\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    const int64_t t_load0 = llama_time_us();
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    const int64_t t_load1 = llama_time_us();
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) (n_pp > depth + n_tg ? n_pp : depth + n_tg);
    cp.n_batch = (uint32_t) n_pp;
    cp.n_ubatch = (uint32_t) (n_pp < 512 ? n_pp : 512);
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create a context\n"); return 1; }
    llama_memory_t mem = llama_get_memory(ctx);

    struct llama_batch batch = llama_batch_init(n_pp, 0, 1);
    double * pp = calloc((size_t) reps, sizeof(double));
    double * tg = calloc((size_t) reps, sizeof(double));
    for (int r = -1; r < reps; r++) {  // r = -1: warm-up
        llama_memory_clear(mem, true);
        batch.n_tokens = n_pp;
        for (int i = 0; i < n_pp; i++) {
            batch.token[i] = (i * 7919 + 13) % n_vocab;
            batch.pos[i] = i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = i == n_pp - 1;
        }
        int64_t t0 = llama_time_us();
        if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
        int64_t t1 = llama_time_us();
        llama_memory_clear(mem, true);
        // (the cache before the decodes: DEPTH tokens, N_PP at a time)
        for (int p0 = 0; p0 < depth; p0 += n_pp) {
            batch.n_tokens = depth - p0 < n_pp ? depth - p0 : n_pp;
            for (int i = 0; i < batch.n_tokens; i++) {
                batch.token[i] = ((p0 + i) * 7919 + 13) % n_vocab;
                batch.pos[i] = p0 + i;
                batch.logits[i] = 0;
            }
            if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
        }
        batch.n_tokens = 1;
        int64_t t1_tg = llama_time_us();
        for (int i = 0; i < n_tg; i++) {
            batch.token[0] = (i * 104729 + 7) % n_vocab;
            batch.pos[0] = depth + i;
            batch.logits[0] = 1;
            if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
        }
        int64_t t2 = llama_time_us();
        if (r >= 0) {
            pp[r] = n_pp / ((t1 - t0) / 1e6);
            tg[r] = n_tg / ((t2 - t1_tg) / 1e6);
        }
    }
    qsort(pp, (size_t) reps, sizeof(double), cmp_double);
    qsort(tg, (size_t) reps, sizeof(double), cmp_double);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    // (the tg label gains @DEPTH for a decode after DEPTH tokens)
    char tg_label[48];
    snprintf(tg_label, sizeof tg_label, depth > 0 ? "tg%d@%d" : "tg%d", n_tg, depth);
    printf("pp%d %.2f t/s  %s %.2f t/s  (threads %d, median of %d)  load %.2f ms  maxrss %ld kB\n", n_pp, pp[reps / 2],
           tg_label, tg[reps / 2], n_threads, reps, (t_load1 - t_load0) / 1e3, ru.ru_maxrss);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    free(pp);
    free(tg);
    return 0;
}
