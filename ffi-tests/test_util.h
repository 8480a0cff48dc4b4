// Shared helpers of the C tests: checks that count instead of aborting, and a
// log callback that records what the library said.
#ifndef MINFER_TEST_UTIL_H
#define MINFER_TEST_UTIL_H

#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_pass = 0;
static int g_fail = 0;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (cond) {                                                    \
            g_pass++;                                                  \
        } else {                                                       \
            g_fail++;                                                  \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
        }                                                              \
    } while (0)

// The last messages the library logged (concatenated, bounded).
static char g_log[1 << 16];
static size_t g_log_len = 0;
static int g_log_count = 0;

static inline void capture_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) user_data;
    size_t n = strlen(text);
    if (g_log_len + n >= sizeof(g_log)) {
        g_log_len = 0;
    }
    memcpy(g_log + g_log_len, text, n);
    g_log_len += n;
    g_log[g_log_len] = 0;
    g_log_count++;
}

static inline void log_clear(void) {
    g_log_len = 0;
    g_log[0] = 0;
    g_log_count = 0;
}

static inline int log_has(const char * needle) {
    return strstr(g_log, needle) != NULL;
}

// A whole file, NUL-terminated (malloc'd; NULL if it cannot be read);
// *len gets its size.
static inline char * read_file(const char * path, size_t * len) {
    FILE * f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char * buf = (char *) malloc((size_t) n + 1);
    if (fread(buf, 1, (size_t) n, f) != (size_t) n) { fclose(f); free(buf); return NULL; }
    fclose(f);
    buf[n] = 0;
    *len = (size_t) n;
    return buf;
}

// dir/name in one of 16 buffers used in turn (so a few can be held at once).
static inline const char * path_in(const char * dir, const char * name) {
    static char buf[16][2048];
    static int k = 0;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

// The logits of the last token after decoding `toks` in a fresh context
// (n_vocab floats, malloc'ed; NULL on failure).
static inline float * last_logits(struct llama_model * m, llama_token * toks, int n) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 16;
    cp.n_threads = 2;
    struct llama_context * ctx = llama_init_from_model(m, cp);
    if (!ctx) return NULL;
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    float * out = NULL;
    if (llama_decode(ctx, llama_batch_get_one(toks, n)) == 0) {
        out = (float *) malloc(sizeof(float) * (size_t) n_vocab);
        memcpy(out, llama_get_logits_ith(ctx, -1), sizeof(float) * (size_t) n_vocab);
    }
    llama_free(ctx);
    return out;
}

// Prints this program's tally and returns its exit code.
static inline int finish(const char * name) {
    printf("%s: %d passed, %d failed\n", name, g_pass, g_fail);
    return g_fail == 0 ? 0 : 1;
}

#endif
