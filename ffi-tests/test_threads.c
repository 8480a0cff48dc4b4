// Concurrency: one model shared by 4 contexts decoding on 4 threads at once
// (each result equals the same work done alone), the log callback replaced
// while they decode, llama_backend_init from several threads, the model
// freed while its contexts still run, and an abort raised from another
// thread that stops a long decode and leaves the context usable.
//
// usage: test_threads MODEL.gguf
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define N_THREADS 4
#define N_TOK 24

static struct llama_model * g_model;
static int g_vocab;
static float g_alone[N_THREADS][512];
static float g_together[N_THREADS][512];
static atomic_int g_log_calls;

static void count_log(enum ggml_log_level level, const char * text, void * ud) {
    (void) level; (void) text; (void) ud;
    atomic_fetch_add(&g_log_calls, 1);
}

// Decodes N_TOK tokens derived from `seed` and keeps the last logits.
static int run(int seed, float * out) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 64;
    cp.n_ubatch = 8;
    struct llama_context * ctx = llama_init_from_model(g_model, cp);
    if (!ctx) return -1;
    struct llama_batch b = llama_batch_init(N_TOK, 0, 1);
    b.n_tokens = N_TOK;
    for (int i = 0; i < N_TOK; i++) {
        b.token[i] = (seed * 131 + i * 17) % g_vocab;
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i == N_TOK - 1;
    }
    int rc = llama_decode(ctx, b);
    if (rc == 0) memcpy(out, llama_get_logits_ith(ctx, -1), sizeof(float) * (size_t) g_vocab);
    llama_batch_free(b);
    llama_free(ctx);
    return rc;
}

static void * worker(void * arg) {
    int k = (int) (intptr_t) arg;
    return (void *) (intptr_t) run(k, g_together[k]);
}

static void * init_backend(void * arg) {
    (void) arg;
    for (int i = 0; i < 100; i++) llama_backend_init();
    return NULL;
}

static atomic_int g_stop;
static bool abort_cb(void * data) {
    (void) data;
    return atomic_load(&g_stop) != 0;
}

static void * stopper(void * arg) {
    (void) arg;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&g_stop, 1);
    return NULL;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]); return 2; }
    llama_log_set(capture_log, NULL);

    // llama_backend_init from several threads at once
    pthread_t th[N_THREADS];
    for (int k = 0; k < N_THREADS; k++) pthread_create(&th[k], NULL, init_backend, NULL);
    for (int k = 0; k < N_THREADS; k++) pthread_join(th[k], NULL);

    g_model = llama_model_load_from_file(argv[1], llama_model_default_params());
    CHECK(g_model != NULL, "load");
    if (!g_model) return finish("threads");
    g_vocab = llama_vocab_n_tokens(llama_model_get_vocab(g_model));

    for (int k = 0; k < N_THREADS; k++) CHECK(run(k, g_alone[k]) == 0, "alone %d", k);

    // 4 contexts on 4 threads; the log callback is swapped meanwhile and the
    // caller's model handle is freed while they run.
    for (int k = 0; k < N_THREADS; k++) pthread_create(&th[k], NULL, worker, (void *) (intptr_t) k);
    for (int i = 0; i < 50; i++) {
        llama_log_set(i % 2 ? count_log : capture_log, NULL);
        llama_model_n_embd(NULL);  // logs through whichever callback is in place
    }
    int failed = 0;
    for (int k = 0; k < N_THREADS; k++) {
        void * rc;
        pthread_join(th[k], &rc);
        failed += rc != NULL;
    }
    llama_log_set(capture_log, NULL);
    CHECK(failed == 0, "%d threads failed to decode", failed);
    for (int k = 0; k < N_THREADS; k++) {
        CHECK(memcmp(g_alone[k], g_together[k], sizeof(float) * (size_t) g_vocab) == 0,
              "context %d: identical logits alone and concurrently", k);
    }
    CHECK(atomic_load(&g_log_calls) > 0, "the swapped-in callback received messages");

    // The model freed while a context still uses it.
    struct llama_context * keep = llama_init_from_model(g_model, llama_context_default_params());
    llama_model_free(g_model);
    g_model = (struct llama_model *) llama_get_model(keep);
    float again[512];
    CHECK(run(0, again) == 0 && memcmp(again, g_alone[0], sizeof(float) * (size_t) g_vocab) == 0,
          "a new context on the freed model's handle still decodes");

    // An abort from another thread stops a long decode (checked between ubatches).
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 2048;
    cp.n_batch = 2048;
    cp.n_ubatch = 4;
    cp.abort_callback = abort_cb;
    struct llama_context * slow = llama_init_from_model(g_model, cp);
    struct llama_batch b = llama_batch_init(2048, 0, 1);
    b.n_tokens = 2048;
    for (int i = 0; i < 2048; i++) {
        b.token[i] = i % g_vocab;
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 0;
    }
    pthread_t st;
    pthread_create(&st, NULL, stopper, NULL);
    int64_t t0 = llama_time_us();
    int rc = llama_decode(slow, b);
    pthread_join(st, NULL);
    CHECK(rc == 2, "the abort stopped the decode (rc %d after %lld us)", rc, (long long) (llama_time_us() - t0));
    llama_pos done = llama_memory_seq_pos_max(llama_get_memory(slow), 0);
    CHECK(done >= 0 && done < 2047, "processed ubatches stay (%d)", done);
    atomic_store(&g_stop, 0);
    llama_memory_seq_rm(llama_get_memory(slow), 0, -1, -1);
    b.n_tokens = 4;
    CHECK(llama_decode(slow, b) == 0, "usable after the abort");
    llama_batch_free(b);
    llama_free(slow);

    llama_free(keep);  // releases the model
    return finish("threads");
}
