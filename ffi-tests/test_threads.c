// Concurrency on a real model (SmolLM2):
// - llama_backend_init / llama_backend_free called from several threads at once;
// - one model shared by 4 contexts decoding on 4 threads at once: every
//   logit and every generated token equals the same work done alone, bit for bit;
// - meanwhile the log callback is replaced (llama_log_set) again and again,
//   and the caller's model handle is freed (llama_model_free) while the
//   contexts still run: the model lives until the last context is freed;
// - an abort callback (llama_set_abort_callback) whose flag is raised from
//   another thread stops a long decode at its next check (2), the ubatches
//   before it stay in the KV cache, the one it stopped leaves no trace, and
//   the context goes on to give the logits a fresh context gives; an abort
//   at the first check leaves the cache exactly as it was.
//
// The log callbacks only touch atomics, so the test itself is race-free
// (scripts/tsan.sh runs it under ThreadSanitizer).
//
// usage: test_threads SMOLLM2.gguf
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"
#include "test_batch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define N_WORKERS 4
#define N_PROMPT 24
#define N_GEN 8

static struct llama_model * g_model;
static int g_vocab;

// --- log callbacks: counters only (safe from any thread)
static atomic_int g_calls_a, g_calls_b, g_released, g_still_used;

static void note(const char * text) {
    if (strstr(text, "releasing the model")) atomic_fetch_add(&g_released, 1);
    if (strstr(text, "context(s) still use this model")) atomic_fetch_add(&g_still_used, 1);
}
static void log_a(enum ggml_log_level level, const char * text, void * ud) {
    (void) level; (void) ud;
    atomic_fetch_add(&g_calls_a, 1);
    note(text);
}
static void log_b(enum ggml_log_level level, const char * text, void * ud) {
    (void) level; (void) ud;
    atomic_fetch_add(&g_calls_b, 1);
    note(text);
}

static struct llama_context * new_ctx(int n_ctx, int n_batch, int n_ubatch) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) n_ctx;
    cp.n_batch = (uint32_t) n_batch;
    cp.n_ubatch = (uint32_t) n_ubatch;
    cp.n_threads = cp.n_threads_batch = 2;  // the pool's workers run too
    return llama_init_from_model(g_model, cp);
}

// Entry i of a batch on sequence 0.
static void put(struct llama_batch * b, int i, llama_token t, llama_pos p, bool out) { batch_put(b, i, t, p, 0, out); }

static llama_token prompt_token(int seed, int i) { return (llama_token) ((seed * 7919 + i * 131 + 17) % g_vocab); }

static llama_token argmax(const float * a, int n) {
    int k = 0;
    for (int i = 1; i < n; i++) if (a[i] > a[k]) k = i;
    return k;
}

// One job: a prompt of N_PROMPT tokens, then N_GEN greedy steps.
struct job {
    int seed;
    struct llama_context * ctx;
    float * logits;          // [g_vocab]: the last step's logits
    llama_token gen[N_GEN];  // the generated tokens
    int rc;
    pthread_barrier_t * ready;  // NULL: run at once
};

static void * run_job(void * arg) {
    struct job * j = arg;
    if (j->ready) pthread_barrier_wait(j->ready);  // the main thread frees the model here
    struct llama_batch b = llama_batch_init(N_PROMPT, 0, 1);
    b.n_tokens = N_PROMPT;
    for (int i = 0; i < N_PROMPT; i++) put(&b, i, prompt_token(j->seed, i), i, i == N_PROMPT - 1);
    j->rc = llama_decode(j->ctx, b);
    for (int s = 0; s < N_GEN && j->rc == 0; s++) {
        const float * l = llama_get_logits_ith(j->ctx, -1);
        if (!l) { j->rc = -100; break; }
        j->gen[s] = argmax(l, g_vocab);
        b.n_tokens = 1;
        put(&b, 0, j->gen[s], N_PROMPT + s, true);
        j->rc = llama_decode(j->ctx, b);
    }
    const float * l = j->rc == 0 ? llama_get_logits_ith(j->ctx, -1) : NULL;
    if (l) memcpy(j->logits, l, sizeof(float) * (size_t) g_vocab);
    llama_batch_free(b);
    return NULL;
}

static void * init_free_backend(void * arg) {
    (void) arg;
    for (int i = 0; i < 200; i++) {
        llama_backend_init();
        if (i % 3 == 2) llama_backend_free();
    }
    return NULL;
}

static void test_backend_init_free(const char * path) {
    pthread_t th[N_WORKERS];
    for (int k = 0; k < N_WORKERS; k++) pthread_create(&th[k], NULL, init_free_backend, NULL);
    for (int k = 0; k < N_WORKERS; k++) pthread_join(th[k], NULL);
    llama_backend_init();
    g_model = llama_model_load_from_file(path, llama_model_default_params());
    CHECK(g_model != NULL, "the library works after backend init/free from %d threads", N_WORKERS);
}

static void test_shared_model(void) {
    struct job alone[N_WORKERS], together[N_WORKERS];
    for (int k = 0; k < N_WORKERS; k++) {
        alone[k] = (struct job) {.seed = k, .logits = malloc(sizeof(float) * (size_t) g_vocab)};
        alone[k].ctx = new_ctx(256, 64, 16);
        run_job(&alone[k]);
        CHECK(alone[k].rc == 0, "job %d alone: rc %d", k, alone[k].rc);
        llama_free(alone[k].ctx);
    }

    // The contexts are made first; then, while their threads decode, the
    // main thread frees its model handle and swaps the log callback.
    pthread_barrier_t ready;
    pthread_barrier_init(&ready, NULL, N_WORKERS + 1);
    pthread_t th[N_WORKERS];
    for (int k = 0; k < N_WORKERS; k++) {
        together[k] = (struct job) {.seed = k, .logits = malloc(sizeof(float) * (size_t) g_vocab), .ready = &ready};
        together[k].ctx = new_ctx(256, 64, 16);
        CHECK(together[k].ctx != NULL, "context %d", k);
        pthread_create(&th[k], NULL, run_job, &together[k]);
    }
    pthread_barrier_wait(&ready);
    llama_model_free(g_model);
    g_model = NULL;
    for (int i = 0; i < 2000; i++) {
        llama_log_set(i % 2 ? log_b : log_a, NULL);
        llama_model_n_embd(NULL);  // logs through whichever callback is in place
    }
    for (int k = 0; k < N_WORKERS; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&ready);
    CHECK(atomic_load(&g_still_used) == 1, "llama_model_free said the contexts still use the model");
    CHECK(atomic_load(&g_released) == 0, "the model is not released while its contexts live");

    int identical = 0;
    for (int k = 0; k < N_WORKERS; k++) {
        CHECK(together[k].rc == 0, "job %d on its thread: rc %d", k, together[k].rc);
        bool same = together[k].rc == 0 && memcmp(alone[k].gen, together[k].gen, sizeof(alone[k].gen)) == 0
                    && memcmp(alone[k].logits, together[k].logits, sizeof(float) * (size_t) g_vocab) == 0;
        CHECK(same, "job %d: the same tokens and bit-identical logits alone and on 4 threads", k);
        identical += same;
        // The model is still usable through a live context.
        if (k == N_WORKERS - 1) {
            const struct llama_model * m = llama_get_model(together[k].ctx);
            CHECK(llama_model_n_embd(m) == 576, "the freed handle's model is alive while a context holds it");
        }
        llama_free(together[k].ctx);
        CHECK(atomic_load(&g_released) == (k == N_WORKERS - 1), "released with the last context only (after %d)", k);
        free(alone[k].logits);
        free(together[k].logits);
    }
    int a = atomic_load(&g_calls_a), b = atomic_load(&g_calls_b);
    CHECK(a >= 1000 && b >= 1000, "both swapped callbacks received messages (%d, %d)", a, b);
    printf("info: %d of %d concurrent jobs bit-identical to alone; log callbacks called %d + %d times\n", identical,
           N_WORKERS, a, b);
}

// --- abort
static atomic_int g_stop, g_asked, g_asked_after_stop;

static bool abort_cb(void * data) {
    (void) data;
    atomic_fetch_add(&g_asked, 1);
    if (atomic_load(&g_stop)) {
        atomic_fetch_add(&g_asked_after_stop, 1);
        return true;
    }
    return false;
}

static int64_t g_t_start, g_t_stop, g_t_fresh;

// Raises the flag half-way through the decode (by the time the same decode
// took in a fresh context), once it has asked at least once.
static void * stopper(void * arg) {
    (void) arg;
    struct timespec ts = {0, 100 * 1000};
    while (atomic_load(&g_asked) < 1 || llama_time_us() - g_t_start < g_t_fresh / 2) nanosleep(&ts, NULL);
    g_t_stop = llama_time_us();
    atomic_store(&g_stop, 1);
    return NULL;
}

#define N_LONG 256
#define UB 32

static void test_abort(const char * path) {
    g_model = llama_model_load_from_file(path, llama_model_default_params());
    CHECK(g_model != NULL, "reload");
    if (!g_model) return;
    struct llama_batch b = llama_batch_init(N_LONG, 0, 1);
    float * want = malloc(sizeof(float) * (size_t) g_vocab);

    // The logits of the last of N_LONG tokens, decoded at once by a fresh context.
    struct llama_context * fresh = new_ctx(512, N_LONG, UB);
    b.n_tokens = N_LONG;
    for (int i = 0; i < N_LONG; i++) put(&b, i, prompt_token(9, i), i, i == N_LONG - 1);
    int64_t t0 = llama_time_us();
    CHECK(llama_decode(fresh, b) == 0, "fresh decode");
    g_t_fresh = llama_time_us() - t0;
    memcpy(want, llama_get_logits_ith(fresh, -1), sizeof(float) * (size_t) g_vocab);
    llama_free(fresh);

    // Stopped from another thread in the middle.
    struct llama_context * ctx = new_ctx(512, N_LONG, UB);
    llama_set_abort_callback(ctx, abort_cb, NULL);
    pthread_t st;
    g_t_start = llama_time_us();
    pthread_create(&st, NULL, stopper, NULL);
    int rc = llama_decode(ctx, b);
    int64_t t_end = llama_time_us();
    pthread_join(st, NULL);
    llama_memory_t mem = llama_get_memory(ctx);
    int done = llama_memory_seq_pos_max(mem, 0) + 1;
    CHECK(rc == 2, "the abort stopped the decode: rc %d", rc);
    CHECK(atomic_load(&g_asked_after_stop) == 1, "it stopped at the first check after the flag (asked %d times after)",
          atomic_load(&g_asked_after_stop));
    CHECK(done > 0 && done < N_LONG && done % UB == 0, "the ubatches before the stopped one stay (%d tokens)", done);
    CHECK(llama_memory_seq_pos_min(mem, 0) == (done > 0 ? 0 : -1), "pos_min %d", llama_memory_seq_pos_min(mem, 0));
    CHECK(llama_get_logits_ith(ctx, -1) == NULL, "no output of an aborted batch's unfinished part");
    printf("info: abort raised %.1f ms into the decode (%.1f ms alone) returned %.2f ms later, %d of %d tokens kept\n",
           1e-3 * (double) (g_t_stop - g_t_start), 1e-3 * (double) g_t_fresh, 1e-3 * (double) (t_end - g_t_stop), done,
           N_LONG);

    // The context goes on from where it stopped and ends where the fresh one did.
    atomic_store(&g_stop, 0);
    b.n_tokens = N_LONG - done;
    for (int i = done; i < N_LONG; i++) put(&b, i - done, prompt_token(9, i), i, i == N_LONG - 1);
    CHECK(llama_decode(ctx, b) == 0, "decode after the abort");
    const float * got = llama_get_logits_ith(ctx, -1);
    CHECK(got && memcmp(got, want, sizeof(float) * (size_t) g_vocab) == 0,
          "after the abort the context gives the fresh context's logits, bit for bit");

    // An abort at the first check leaves the cache exactly as it was.
    llama_memory_clear(mem, true);
    b.n_tokens = 16;
    for (int i = 0; i < 16; i++) put(&b, i, prompt_token(9, i), i, false);
    CHECK(llama_decode(ctx, b) == 0, "prefix");
    atomic_store(&g_stop, 1);
    atomic_store(&g_asked_after_stop, 0);
    b.n_tokens = N_LONG - 16;
    for (int i = 16; i < N_LONG; i++) put(&b, i - 16, prompt_token(9, i), i, i == N_LONG - 1);
    CHECK(llama_decode(ctx, b) == 2 && atomic_load(&g_asked_after_stop) == 1, "an immediate abort gives 2");
    CHECK(llama_memory_seq_pos_min(mem, 0) == 0 && llama_memory_seq_pos_max(mem, 0) == 15, "the cache is unchanged (%d..%d)",
          llama_memory_seq_pos_min(mem, 0), llama_memory_seq_pos_max(mem, 0));
    llama_set_abort_callback(ctx, NULL, NULL);
    CHECK(llama_decode(ctx, b) == 0, "the same batch without the callback");
    got = llama_get_logits_ith(ctx, -1);
    CHECK(got && memcmp(got, want, sizeof(float) * (size_t) g_vocab) == 0, "and the fresh context's logits");

    llama_free(ctx);
    llama_batch_free(b);
    free(want);
    llama_model_free(g_model);
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s SMOLLM2.gguf\n", argv[0]); return 2; }
    llama_log_set(log_a, NULL);
    test_backend_init_free(argv[1]);
    if (!g_model) return finish("threads");
    g_vocab = llama_vocab_n_tokens(llama_model_get_vocab(g_model));
    test_shared_model();
    llama_log_set(log_a, NULL);
    test_abort(argv[1]);
    llama_backend_free();
    return finish("threads");
}
