// llama_attach_threadpool / llama_detach_threadpool: contexts attached to
// one ggml pool share one set of worker threads, decode the logits of a
// private pool (also two contexts decoding at once on the shared pool), and
// go back to their own pool when detached.
//
// ggml's pools come from ggml-cpu (outside llama.h), which this test does
// not link: minfer takes only a pool's identity (its structure is ggml's
// and private), so the test stands in for ggml's pools with structs of its
// own. (scripts/run-llama-tools.sh runs llama-bench, which attaches pools
// of the real ggml.)
//
// usage: test_threadpool MODEL.gguf
#define _POSIX_C_SOURCE 200809L // nanosleep
#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <time.h>

struct ggml_threadpool {
    int n_threads;
};

static struct llama_model * g_model;
static int g_vocab;

// The process's thread count (/proc/self/task).
static int n_threads_now(void) {
    DIR * d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent * e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

// The count once it has come down to `want`, or after 1 s: a joined
// thread's task leaves /proc/self/task a moment after pthread_join returns
// (the kernel wakes the joiner before it finishes tearing the thread down),
// so a count taken right after a pool ends can still see its workers.
static int n_threads_settled(int want) {
    int n = n_threads_now();
    for (int i = 0; i < 100 && n != want; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        n = n_threads_now();
    }
    return n;
}

static struct llama_context * new_ctx(int n_threads) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 16;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    return llama_init_from_model(g_model, cp);
}

// The logits of 5 tokens' last position, then of one more token alone.
struct run {
    struct llama_context * ctx;
    float * out; // [2][g_vocab]
    int rc;
};

static void * decode(void * arg) {
    struct run * r = (struct run *) arg;
    llama_memory_clear(llama_get_memory(r->ctx), true);
    llama_token toks[5] = {1, 57, 200, 13, 400}, next = 77;
    r->rc = llama_decode(r->ctx, llama_batch_get_one(toks, 5));
    if (r->rc == 0) memcpy(r->out, llama_get_logits_ith(r->ctx, -1), sizeof(float) * (size_t) g_vocab);
    if (r->rc == 0) r->rc = llama_decode(r->ctx, llama_batch_get_one(&next, 1));
    if (r->rc == 0) memcpy(r->out + g_vocab, llama_get_logits_ith(r->ctx, -1), sizeof(float) * (size_t) g_vocab);
    return NULL;
}

static int same(const float * a, const float * b) {
    return memcmp(a, b, 2 * sizeof(float) * (size_t) g_vocab) == 0;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]); return 2; }
    llama_log_set(capture_log, NULL);
    llama_backend_init();
    g_model = llama_model_load_from_file(argv[1], llama_model_default_params());
    CHECK(g_model != NULL, "load: %s", g_log);
    if (!g_model) return finish("threadpool");
    g_vocab = llama_vocab_n_tokens(llama_model_get_vocab(g_model));
    float * priv = malloc(2 * sizeof(float) * (size_t) g_vocab);
    float * got1 = malloc(2 * sizeof(float) * (size_t) g_vocab);
    float * got2 = malloc(2 * sizeof(float) * (size_t) g_vocab);

    // --- a private pool's logits
    struct llama_context * c1 = new_ctx(2);
    struct llama_context * c2 = new_ctx(2);
    struct run r1 = {c1, priv, -1};
    decode(&r1);
    CHECK(r1.rc == 0, "private pool decode: %s", g_log);

    // --- two contexts of 2 threads attached to one pool: one set of workers
    struct ggml_threadpool a = {2}, b = {2};
    int t0 = n_threads_now();
    llama_attach_threadpool(c1, &a, NULL);
    int t1 = n_threads_now();
    llama_attach_threadpool(c2, &a, NULL);
    int t2 = n_threads_now();
    // (the contexts' 2 threads: the caller's and 1 worker)
    const int workers = 1;
    CHECK(t1 == t0 + workers, "the first attach starts the shared pool's %d workers (%d -> %d threads)", workers, t0, t1);
    CHECK(t2 == t1, "the second context shares them (%d -> %d threads)", t1, t2);
    struct run s1 = {c1, got1, -1}, s2 = {c2, got2, -1};
    decode(&s1);
    CHECK(s1.rc == 0 && same(got1, priv), "the shared pool gives the private pool's logits (prompt and one token)");
    // both at once, on their shared pool
    memset(got1, 0, 2 * sizeof(float) * (size_t) g_vocab);
    pthread_t th1, th2;
    pthread_create(&th1, NULL, decode, &s1);
    pthread_create(&th2, NULL, decode, &s2);
    pthread_join(th1, NULL);
    pthread_join(th2, NULL);
    CHECK(s1.rc == 0 && s2.rc == 0 && same(got1, priv) && same(got2, priv),
          "two contexts decoding at once on one shared pool: the private pool's logits");

    // --- a separate batch pool
    llama_attach_threadpool(c2, &a, &b);
    int t3 = n_threads_now();
    CHECK(t3 == t2 + 1, "a second ggml pool gets its own worker (%d -> %d threads)", t2, t3);
    decode(&s2);
    CHECK(s2.rc == 0 && same(got2, priv), "threadpool and threadpool_batch: the same logits");

    // --- detached: back to the context's own pool; the shared pool ends
    // with its last context
    llama_detach_threadpool(c1);
    llama_detach_threadpool(c2);
    int t4 = n_threads_settled(t0);
    CHECK(t4 == t0, "detached: the shared pools' workers are gone (%d threads, %d before)", t4, t0);
    decode(&s1);
    CHECK(s1.rc == 0 && same(got1, priv), "detached: the private pool again");
    // attaching NULL detaches
    llama_attach_threadpool(c1, &a, NULL);
    llama_attach_threadpool(c1, NULL, NULL);
    CHECK(n_threads_settled(t0) == t0, "attaching NULL detaches");

    // --- misuse: no crash, a message
    log_clear();
    llama_attach_threadpool(NULL, &a, NULL);
    CHECK(log_has("ctx is NULL"), "attach to a NULL context: %s", g_log);
    log_clear();
    llama_detach_threadpool(NULL);
    CHECK(log_has("ctx is NULL"), "detach a NULL context: %s", g_log);

    // --- thread counts: a context of another count gets a pool of its own;
    // llama_set_n_threads moves an attached context to a pool of its new count
    struct llama_context * c3 = new_ctx(3);
    int t5 = n_threads_now();
    llama_attach_threadpool(c1, &a, NULL);
    int t6 = n_threads_now();
    llama_attach_threadpool(c3, &a, NULL);
    int t7 = n_threads_now();
    CHECK(t6 == t5 + 1 && t7 == t6 + 2, "a 3-thread context on the same ggml pool gets 3 threads (%d -> %d -> %d)", t5, t6, t7);
    struct run s3 = {c3, got2, -1};
    decode(&s3);
    CHECK(s3.rc == 0 && same(got2, priv), "the 3-thread pool: the same logits");
    llama_set_n_threads(c1, 3, 3);
    CHECK(llama_n_threads(c1) == 3, "n_threads 3");
    int t8 = n_threads_settled(t7);
    // (c1's own pool grows by 1; its attached pool is now c3's; the 2-thread one ends)
    CHECK(t8 == t7 + 1 - 1, "after llama_set_n_threads the context shares the 3-thread pool (%d -> %d)", t7, t8);
    decode(&s1);
    CHECK(s1.rc == 0 && same(got1, priv), "and decodes the same logits");
    llama_detach_threadpool(c1);
    llama_free(c3);
    llama_set_n_threads(c1, 2, 2);

    // a context freed while attached; the pool lives on for the other
    llama_attach_threadpool(c1, &a, NULL);
    llama_attach_threadpool(c2, &a, NULL);
    llama_free(c1);
    decode(&s2);
    CHECK(s2.rc == 0 && same(got2, priv), "a context freed while attached: the other still decodes on the pool");
    llama_free(c2);
    int t9 = n_threads_settled(t0 - 2);
    CHECK(t9 == t0 - 2, "every pool's workers gone with the contexts (%d threads)", t9);
    llama_model_free(g_model);
    free(priv);
    free(got1);
    free(got2);
    return finish("threadpool");
}
