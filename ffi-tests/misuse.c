// API misuse on a real model (SmolLM2), one case per line: invalid token ids
// in the vocab calls and in batches, bad positions and sequence ids, bad
// n_tokens, logits asked of a token not marked for output, short buffers for
// every buffer-writing call, samplers given empty, all -inf and NaN
// candidates. After each refused decode it prints the KV cache's
// llama_memory_seq_pos_min/max and whether the next decode gives the logits
// it gives without the failed call in between.
//
// Every case runs in a child process, so a case that kills the library
// prints "CRASH <signal>" instead of ending the run: that is how the
// reference library's own answers were recorded (it aborts or throws on a
// few of them). Built against the reference, its output is the golden file
// golden/misuse.txt (gen_misuse_golden.sh); run.sh builds it against ours
// and compares each line with the golden (see compare_misuse.py).
//
// usage: misuse SMOLLM2.gguf [CASE-PREFIX]
#define _POSIX_C_SOURCE 200809L
#include "llama.h"
#include "test_batch.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct llama_model * g_model;
static const struct llama_vocab * g_vocab;
static int g_n_vocab;
static const char * g_only;

static void quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) level; (void) text; (void) ud;
}

// --- running one case in a child -------------------------------------------

static char g_line[4096];
static size_t g_len;

static void out(const char * fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_line + g_len, sizeof(g_line) - g_len, fmt, ap);
    va_end(ap);
    if (n > 0) g_len += (size_t) n < sizeof(g_line) - g_len ? (size_t) n : sizeof(g_line) - g_len - 1;
}

// Runs `fn(arg)` in a child; prints "name: <what it printed>" or how it died.
static void run_case(const char * name, void (*fn)(int), int arg) {
    if (g_only && strncmp(name, g_only, strlen(g_only)) != 0) return;
    int fds[2];
    if (pipe(fds) != 0) { perror("pipe"); exit(1); }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        g_len = 0;
        g_line[0] = 0;
        fn(arg);
        if (write(fds[1], g_line, g_len) < 0) _exit(3);
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0) got += (size_t) r;
    buf[got] = 0;
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        printf("%s: CRASH %s\n", name, sig == SIGABRT ? "SIGABRT" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS"
                                                        : sig == SIGFPE ? "SIGFPE" : "signal");
    } else if (WEXITSTATUS(status) != 0) {
        printf("%s: EXIT %d\n", name, WEXITSTATUS(status));
    } else {
        printf("%s: %s\n", name, buf);
    }
}

// run_case with a printf-formatted name.
static void run_named(void (*fn)(int), int arg, const char * fmt, ...) {
    char name[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    run_case(name, fn, arg);
}

static void print_float(float f) {
    if (isnan(f)) out("nan");
    else out("%.6g", (double) f);
}

// --- vocab calls with invalid token ids -------------------------------------

static llama_token bad_token(int k) {
    switch (k) {
        case 0: return -1;
        case 1: return g_n_vocab;
        case 2: return INT32_MAX;
        default: return INT32_MIN;
    }
}
static const char * bad_token_name[4] = {"-1", "n_vocab", "INT32_MAX", "INT32_MIN"};

static void c_piece(int k) {
    char buf[32];
    memset(buf, 'X', sizeof(buf));
    int32_t a = llama_token_to_piece(g_vocab, bad_token(k), buf, sizeof(buf), 0, false);
    int32_t b = llama_token_to_piece(g_vocab, bad_token(k), buf, sizeof(buf), 0, true);
    out("%d %d buf0=%c", a, b, buf[0]);
}
static void c_detok(int k) {
    llama_token ids[2] = {300, bad_token(k)};
    char buf[32];
    memset(buf, 'X', sizeof(buf));
    out("%d", llama_detokenize(g_vocab, ids, 2, buf, sizeof(buf), false, false));
}
static void c_text(int k) {
    const char * t = llama_vocab_get_text(g_vocab, bad_token(k));
    out("%s", t ? "non-NULL" : "NULL");
}
static void c_score(int k) { print_float(llama_vocab_get_score(g_vocab, bad_token(k))); }
static void c_attr(int k) { out("%d", (int) llama_vocab_get_attr(g_vocab, bad_token(k))); }
static void c_eog(int k) { out("%d", (int) llama_vocab_is_eog(g_vocab, bad_token(k))); }
static void c_control(int k) { out("%d", (int) llama_vocab_is_control(g_vocab, bad_token(k))); }
static void c_token_get_text(int k) { out("%s", llama_token_get_text(g_vocab, bad_token(k)) ? "non-NULL" : "NULL"); }
static void c_token_get_score(int k) { print_float(llama_token_get_score(g_vocab, bad_token(k))); }
static void c_token_get_attr(int k) { out("%d", (int) llama_token_get_attr(g_vocab, bad_token(k))); }
static void c_token_is_eog(int k) { out("%d", (int) llama_token_is_eog(g_vocab, bad_token(k))); }
static void c_token_is_control(int k) { out("%d", (int) llama_token_is_control(g_vocab, bad_token(k))); }

// --- decode: bad batches, then the KV cache and the next logits --------------

#define PREFIX 8

static struct llama_context * new_ctx(void) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_batch = 64;
    cp.n_ubatch = 16;
    cp.n_seq_max = 2;
    cp.n_threads = cp.n_threads_batch = 2;
    return llama_init_from_model(g_model, cp);
}


static llama_token tok_at(int i) { return (llama_token) (1000 + 37 * i); }

// Decodes the prefix (positions 0..PREFIX-1 of sequence 0), then the next
// token with its logits; writes those logits to `next` (or leaves it).
static int decode_prefix(struct llama_context * ctx) {
    struct llama_batch b = llama_batch_init(PREFIX, 0, 1);
    b.n_tokens = PREFIX;
    for (int i = 0; i < PREFIX; i++) batch_put(&b, i, tok_at(i), i, 0, false);
    int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc;
}

static int decode_next(struct llama_context * ctx, float * next) {
    struct llama_batch b = llama_batch_init(1, 0, 1);
    b.n_tokens = 1;
    batch_put(&b, 0, tok_at(PREFIX), PREFIX, 0, true);
    int rc = llama_decode(ctx, b);
    const float * l = rc == 0 ? llama_get_logits_ith(ctx, -1) : NULL;
    if (l) memcpy(next, l, sizeof(float) * (size_t) g_n_vocab);
    llama_batch_free(b);
    return l ? 0 : -100;
}

// The kinds of bad batches, each made by `make_bad(kind, &b)`.
enum {
    B_TOK_NEG, B_TOK_NVOCAB, B_TOK_MAX, B_TOK_MIN,
    B_SEQ_NSEQMAX, B_SEQ_64, B_SEQ_NEG, B_SEQ_MAX, B_NSEQID_0, B_NSEQID_3,
    B_POS_NEG1, B_POS_NEG100, B_POS_GAP, B_POS_REPEAT, B_POS_DESC, B_POS_DUP, B_POS_MAX,
    B_NTOK_0, B_NTOK_NEG, B_NTOK_65, B_NO_TOKENS,
    B_COUNT
};
static const char * bad_name[B_COUNT] = {
    "token -1", "token n_vocab", "token INT32_MAX", "token INT32_MIN",
    "seq_id n_seq_max", "seq_id 64", "seq_id -1", "seq_id INT32_MAX", "n_seq_id 0", "n_seq_id 3",
    "pos -1", "pos -100", "pos gap (pos_max + 3)", "pos repeated (pos_max)", "positions decreasing",
    "positions duplicated", "pos INT32_MAX",
    "n_tokens 0", "n_tokens -3", "n_tokens 65 > n_batch 64", "token and embd NULL",
};

static void make_bad(int kind, struct llama_batch * b) {
    b->n_tokens = 2;
    batch_put(b, 0, tok_at(PREFIX), PREFIX, 0, false);
    batch_put(b, 1, tok_at(PREFIX + 1), PREFIX + 1, 0, true);
    switch (kind) {
        case B_TOK_NEG: b->token[1] = -1; break;
        case B_TOK_NVOCAB: b->token[1] = g_n_vocab; break;
        case B_TOK_MAX: b->token[1] = INT32_MAX; break;
        case B_TOK_MIN: b->token[1] = INT32_MIN; break;
        case B_SEQ_NSEQMAX: b->seq_id[1][0] = 2; break;
        case B_SEQ_64: b->seq_id[1][0] = 64; break;
        case B_SEQ_NEG: b->seq_id[1][0] = -1; break;
        case B_SEQ_MAX: b->seq_id[1][0] = INT32_MAX; break;
        case B_NSEQID_0: b->n_seq_id[1] = 0; break;
        case B_NSEQID_3: b->n_seq_id[1] = 3; b->seq_id[1][1] = 1; b->seq_id[1][2] = 1; break;
        case B_POS_NEG1: b->pos[0] = -1; b->pos[1] = 0; break;
        case B_POS_NEG100: b->pos[1] = -100; break;
        case B_POS_GAP: b->pos[0] = PREFIX + 2; b->pos[1] = PREFIX + 3; break;
        case B_POS_REPEAT: b->pos[0] = PREFIX - 1; b->pos[1] = PREFIX; break;
        case B_POS_DESC: b->pos[0] = PREFIX + 1; b->pos[1] = PREFIX; break;
        case B_POS_DUP: b->pos[1] = PREFIX; break;
        case B_POS_MAX: b->pos[0] = INT32_MAX - 1; b->pos[1] = INT32_MAX; break;
        case B_NTOK_0: b->n_tokens = 0; break;
        case B_NTOK_NEG: b->n_tokens = -3; break;
        case B_NTOK_65:
            b->n_tokens = 65;
            for (int i = 0; i < 65; i++) batch_put(b, i, tok_at(PREFIX + i), PREFIX + i, 0, i == 64);
            break;
        case B_NO_TOKENS: b->token = NULL; break;
    }
}

// rc of the bad decode, the cache's range for sequences 0 and 1 after it, and
// whether the next decode's logits equal those of a context that never saw it.
static void c_bad_batch(int kind) {
    float * want = malloc(sizeof(float) * (size_t) g_n_vocab);
    float * got = malloc(sizeof(float) * (size_t) g_n_vocab);
    struct llama_context * clean = new_ctx();
    if (decode_prefix(clean) != 0 || decode_next(clean, want) != 0) { out("setup failed"); return; }
    llama_free(clean);

    struct llama_context * ctx = new_ctx();
    decode_prefix(ctx);
    struct llama_batch b = llama_batch_init(65, 0, 3);
    llama_token * tokens = b.token;
    make_bad(kind, &b);
    int rc = llama_decode(ctx, b);
    b.token = tokens;
    llama_memory_t mem = llama_get_memory(ctx);
    out("rc=%d seq0=%d..%d seq1=%d..%d", rc, llama_memory_seq_pos_min(mem, 0), llama_memory_seq_pos_max(mem, 0),
        llama_memory_seq_pos_min(mem, 1), llama_memory_seq_pos_max(mem, 1));
    if (rc != 0) {
        int r2 = decode_next(ctx, got);
        out(" next=%s", r2 != 0 ? "failed" : memcmp(want, got, sizeof(float) * (size_t) g_n_vocab) == 0 ? "same" : "differs");
    }
    llama_batch_free(b);
    llama_free(ctx);
    free(want);
    free(got);
}

// llama_batch_get_one with an invalid token: no positions given.
static void c_get_one(int k) {
    struct llama_context * ctx = new_ctx();
    decode_prefix(ctx);
    llama_token t[2] = {tok_at(PREFIX), bad_token(k)};
    int rc = llama_decode(ctx, llama_batch_get_one(t, 2));
    out("rc=%d pos_max=%d", rc, llama_memory_seq_pos_max(llama_get_memory(ctx), 0));
    llama_free(ctx);
}

// --- logits and embeddings of tokens that are not outputs --------------------

static const int32_t ith_index[] = {0, 1, 2, 3, -1, -2, -4, INT32_MAX, INT32_MIN};
#define N_ITH ((int) (sizeof(ith_index) / sizeof(ith_index[0])))

// A batch of 3 tokens with only the middle one marked for output.
static struct llama_context * decode_middle_output(void) {
    struct llama_context * ctx = new_ctx();
    struct llama_batch b = llama_batch_init(3, 0, 1);
    b.n_tokens = 3;
    for (int i = 0; i < 3; i++) batch_put(&b, i, tok_at(i), i, 0, i == 1);
    int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    if (rc != 0) { llama_free(ctx); return NULL; }
    return ctx;
}

static void c_logits_ith(int k) {
    struct llama_context * ctx = decode_middle_output();
    if (!ctx) { out("setup failed"); return; }
    const float * row = llama_get_logits_ith(ctx, ith_index[k]);
    const float * first = llama_get_logits(ctx);
    out("%s", row == NULL ? "NULL" : row == first ? "output row 0" : "another row");
    llama_free(ctx);
}

static void c_embd_ith(int k) {
    struct llama_context * ctx = decode_middle_output();
    if (!ctx) { out("setup failed"); return; }
    out("%s", llama_get_embeddings_ith(ctx, ith_index[k]) == NULL ? "NULL" : "non-NULL");
    llama_free(ctx);
}

static void c_logits_before_decode(int k) {
    (void) k;
    struct llama_context * ctx = new_ctx();
    out("logits=%s ith0=%s ith-1=%s", llama_get_logits(ctx) ? "non-NULL" : "NULL",
        llama_get_logits_ith(ctx, 0) ? "non-NULL" : "NULL", llama_get_logits_ith(ctx, -1) ? "non-NULL" : "NULL");
    llama_free(ctx);
}

// --- short buffers --------------------------------------------------------

static void show_buf(const char * buf, int n) {
    out(" buf=");
    for (int i = 0; i < n; i++) {
        unsigned char c = (unsigned char) buf[i];
        if (c == 'X') out("X");
        else if (c == 0) out("\\0");
        else if (c >= 32 && c < 127) out("%c", c);
        else out("\\x%02x", c);
    }
}

static const int32_t sizes[] = {0, 1, 2, 5, 6, 7, -1};
#define N_SIZES ((int) (sizeof(sizes) / sizeof(sizes[0])))

static void c_piece_short(int k) {  // " world" is one token of 6 bytes
    llama_token ids[4];
    int n = llama_tokenize(g_vocab, " world", 6, ids, 4, false, false);
    char buf[16];
    memset(buf, 'X', sizeof(buf));
    out("n=%d ret=%d", n, llama_token_to_piece(g_vocab, ids[0], buf, sizes[k], 0, false));
    show_buf(buf, 8);
}

static void c_piece_null(int k) {
    llama_token ids[4];
    llama_tokenize(g_vocab, " world", 6, ids, 4, false, false);
    out("ret=%d", llama_token_to_piece(g_vocab, ids[0], NULL, k, 0, false));
}

static void c_detok_short(int k) {  // "Hello world" in 2 tokens, 11 bytes
    llama_token ids[8];
    int n = llama_tokenize(g_vocab, "Hello world", 11, ids, 8, false, false);
    char buf[32];
    memset(buf, 'X', sizeof(buf));
    int32_t len[] = {0, 1, 5, 10, 11, 12, -1};
    out("n=%d ret=%d", n, llama_detokenize(g_vocab, ids, n, buf, len[k], false, false));
    show_buf(buf, 13);
}

static void c_tokenize_short(int k) {  // "Hello world, again" is 4 tokens
    int32_t ids[16];
    for (int i = 0; i < 16; i++) ids[i] = -7;
    int32_t max[] = {0, 1, 3, 4, 5, -1, INT32_MIN};
    int32_t ret = llama_tokenize(g_vocab, "Hello world, again", 18, ids, max[k], false, false);
    int untouched = 0;
    for (int i = 0; i < 16; i++) untouched += ids[i] == -7;
    out("ret=%d untouched=%d", ret, untouched);
}

static void c_tokenize_null_out(int k) {
    int32_t max[] = {0, 1, 4};
    out("ret=%d", llama_tokenize(g_vocab, "Hello world, again", 18, NULL, max[k], false, false));
}

static const size_t meta_sizes[] = {0, 1, 2, 7, 8, 64};
#define N_META ((int) (sizeof(meta_sizes) / sizeof(meta_sizes[0])))

static void c_meta_val_str(int k) {  // general.architecture = "llama"
    char buf[80];
    memset(buf, 'X', sizeof(buf));
    out("ret=%d", llama_model_meta_val_str(g_model, "general.architecture", buf, meta_sizes[k]));
    show_buf(buf, 8);
}
// The index of general.architecture (the order of the keys is the library's own).
static int32_t arch_index(void) {
    char key[256];
    for (int32_t i = 0; i < llama_model_meta_count(g_model); i++) {
        llama_model_meta_key_by_index(g_model, i, key, sizeof(key));
        if (strcmp(key, "general.architecture") == 0) return i;
    }
    return -1;
}
static void c_meta_key(int k) {
    char buf[80];
    memset(buf, 'X', sizeof(buf));
    out("ret=%d", llama_model_meta_key_by_index(g_model, arch_index(), buf, meta_sizes[k]));
    show_buf(buf, 9);
}
static void c_meta_val(int k) {
    char buf[80];
    memset(buf, 'X', sizeof(buf));
    out("ret=%d", llama_model_meta_val_str_by_index(g_model, arch_index(), buf, meta_sizes[k]));
    show_buf(buf, 9);
}
static void c_meta_missing(int k) {
    char buf[80];
    memset(buf, 'X', sizeof(buf));
    out("ret=%d", llama_model_meta_val_str(g_model, "no.such.key", buf, meta_sizes[k]));
    show_buf(buf, 3);
}
static void c_meta_null_buf(int k) {
    (void) k;
    int32_t a = llama_model_meta_val_str(g_model, "general.architecture", NULL, 0);
    int32_t b = llama_model_meta_key_by_index(g_model, arch_index(), NULL, 0);
    int32_t c = llama_model_meta_val_str_by_index(g_model, arch_index(), NULL, 0);
    out("%d %d %d", a, b, c);
}
static void c_model_desc(int k) {
    char buf[80];
    memset(buf, 'X', sizeof(buf));
    out("ret=%d", llama_model_desc(g_model, buf, meta_sizes[k]));
    show_buf(buf, 9);
}

// --- samplers on degenerate candidate arrays -------------------------------

enum { A_EMPTY, A_ONE, A_ALL_NEG_INF, A_SOME_NAN, A_ALL_NAN, A_INF_AND_NAN, A_POS_INF, A_KINDS };
static const char * arr_name[A_KINDS] = {"empty", "one", "all -inf", "some NaN", "all NaN", "-inf and NaN", "+inf"};

static void fill_arr(int kind, llama_token_data * d, size_t * n) {
    static const float base[8] = {1.0f, 0.0f, 3.0f, 2.0f, -1.0f, 0.5f, -2.0f, 4.0f};
    *n = kind == A_EMPTY ? 0 : kind == A_ONE ? 1 : 8;
    for (int i = 0; i < 8; i++) {
        d[i].id = i;
        d[i].p = 0.0f;
        switch (kind) {
            case A_ALL_NEG_INF: d[i].logit = -INFINITY; break;
            case A_SOME_NAN: d[i].logit = i % 3 == 1 ? NAN : base[i]; break;
            case A_ALL_NAN: d[i].logit = NAN; break;
            case A_INF_AND_NAN: d[i].logit = i % 2 ? NAN : -INFINITY; break;
            case A_POS_INF: d[i].logit = i == 2 || i == 5 ? INFINITY : base[i]; break;
            default: d[i].logit = base[i]; break;
        }
    }
}

enum {
    S_GREEDY, S_DIST, S_TOP_K, S_TOP_P, S_MIN_P, S_TYPICAL, S_TEMP, S_TEMP_0, S_TEMP_EXT, S_XTC, S_TOP_N_SIGMA,
    S_MIROSTAT, S_MIROSTAT_V2, S_PENALTIES, S_LOGIT_BIAS, S_DRY, S_ADAPTIVE_P, S_CHAIN, S_KINDS
};
static const char * smpl_name[S_KINDS] = {"greedy", "dist", "top_k 3", "top_p 0.9", "min_p 0.1", "typical 0.9",
                                          "temp 0.7", "temp 0", "temp_ext", "xtc", "top_n_sigma 1", "mirostat",
                                          "mirostat_v2", "penalties", "logit_bias", "dry", "adaptive_p",
                                          "default chain"};

static struct llama_sampler * make_sampler(int kind) {
    switch (kind) {
        case S_GREEDY: return llama_sampler_init_greedy();
        case S_DIST: return llama_sampler_init_dist(42);
        case S_TOP_K: return llama_sampler_init_top_k(3);
        case S_TOP_P: return llama_sampler_init_top_p(0.9f, 1);
        case S_MIN_P: return llama_sampler_init_min_p(0.1f, 1);
        case S_TYPICAL: return llama_sampler_init_typical(0.9f, 1);
        case S_TEMP: return llama_sampler_init_temp(0.7f);
        case S_TEMP_0: return llama_sampler_init_temp(0.0f);
        case S_TEMP_EXT: return llama_sampler_init_temp_ext(0.8f, 0.5f, 1.0f);
        case S_XTC: return llama_sampler_init_xtc(1.0f, 0.1f, 1, 42);
        case S_TOP_N_SIGMA: return llama_sampler_init_top_n_sigma(1.0f);
        case S_MIROSTAT: return llama_sampler_init_mirostat(8, 42, 5.0f, 0.1f, 100);
        case S_MIROSTAT_V2: return llama_sampler_init_mirostat_v2(42, 5.0f, 0.1f);
        case S_PENALTIES: {
            struct llama_sampler * s = llama_sampler_init_penalties(8, 64, 1.3f, 0.5f, 0.5f);
            llama_sampler_accept(s, 2);
            llama_sampler_accept(s, 7);
            llama_sampler_accept(s, 2);
            return s;
        }
        case S_LOGIT_BIAS: {
            struct llama_logit_bias lb[2] = {{3, 5.0f}, {7, -INFINITY}};
            return llama_sampler_init_logit_bias(8, 2, lb);
        }
        case S_DRY: {
            const char * br[1] = {"\n"};
            struct llama_sampler * s = llama_sampler_init_dry(g_vocab, 0.8f, 1.75f, 2, 64, br, 1);
            for (int i = 0; i < 6; i++) llama_sampler_accept(s, i % 3);
            return s;
        }
        case S_ADAPTIVE_P: return llama_sampler_init_adaptive_p(0.5f, 0.9f, 42);
        default: {
            struct llama_sampler * c = llama_sampler_chain_init(llama_sampler_chain_default_params());
            llama_sampler_chain_add(c, llama_sampler_init_top_k(40));
            llama_sampler_chain_add(c, llama_sampler_init_top_p(0.95f, 1));
            llama_sampler_chain_add(c, llama_sampler_init_min_p(0.05f, 1));
            llama_sampler_chain_add(c, llama_sampler_init_temp(0.8f));
            llama_sampler_chain_add(c, llama_sampler_init_dist(42));
            return c;
        }
    }
}

static void c_sampler(int code) {
    int kind = code / A_KINDS, arr = code % A_KINDS;
    llama_token_data d[8];
    size_t n;
    fill_arr(arr, d, &n);
    llama_token_data_array cur = {d, n, -1, false};
    struct llama_sampler * s = make_sampler(kind);
    llama_sampler_apply(s, &cur);
    out("size=%zu selected=%lld sorted=%d [", cur.size, (long long) cur.selected, (int) cur.sorted);
    for (size_t i = 0; i < cur.size && i < 8; i++) {
        out("%s%d:", i ? " " : "", cur.data[i].id);
        print_float(cur.data[i].logit);
    }
    out("]");
    // Accepting the selected token (as llama_sampler_sample does) survives too.
    if (cur.selected >= 0 && (size_t) cur.selected < cur.size) llama_sampler_accept(s, cur.data[cur.selected].id);
    llama_sampler_free(s);
}

// llama_sampler_sample at an index that is not an output, or past the batch.
static void c_sample_bad_idx(int k) {
    struct llama_context * ctx = decode_middle_output();
    if (!ctx) { out("setup failed"); return; }
    struct llama_sampler * s = llama_sampler_init_greedy();
    int32_t idx[] = {0, 3, -2, INT32_MAX};
    llama_token t = llama_sampler_sample(s, ctx, idx[k]);
    out("%s", t == LLAMA_TOKEN_NULL ? "LLAMA_TOKEN_NULL" : t >= 0 && t < g_n_vocab ? "a token" : "invalid");
    llama_sampler_free(s);
    llama_free(ctx);
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s SMOLLM2.gguf [CASE-PREFIX]\n", argv[0]); return 2; }
    g_only = argc > 2 ? argv[2] : NULL;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    g_model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!g_model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    g_vocab = llama_model_get_vocab(g_model);
    g_n_vocab = llama_vocab_n_tokens(g_vocab);

    struct { const char * name; void (*fn)(int); } vocab_calls[] = {
        {"llama_token_to_piece", c_piece}, {"llama_detokenize", c_detok}, {"llama_vocab_get_text", c_text},
        {"llama_vocab_get_score", c_score}, {"llama_vocab_get_attr", c_attr}, {"llama_vocab_is_eog", c_eog},
        {"llama_vocab_is_control", c_control}, {"llama_token_get_text", c_token_get_text},
        {"llama_token_get_score", c_token_get_score}, {"llama_token_get_attr", c_token_get_attr},
        {"llama_token_is_eog", c_token_is_eog}, {"llama_token_is_control", c_token_is_control},
    };
    for (size_t f = 0; f < sizeof(vocab_calls) / sizeof(vocab_calls[0]); f++) {
        for (int k = 0; k < 4; k++) {
            run_named(vocab_calls[f].fn, k, "vocab %s token %s", vocab_calls[f].name, bad_token_name[k]);
        }
    }
    for (int k = 0; k < B_COUNT; k++) {
        run_named(c_bad_batch, k, "decode %s", bad_name[k]);
    }
    for (int k = 0; k < 4; k++) {
        run_named(c_get_one, k, "decode llama_batch_get_one token %s", bad_token_name[k]);
    }
    for (int k = 0; k < N_ITH; k++) {
        run_named(c_logits_ith, k, "outputs llama_get_logits_ith %d (only token 1 of 3 is an output)", ith_index[k]);
        run_named(c_embd_ith, k, "outputs llama_get_embeddings_ith %d (embeddings off)", ith_index[k]);
    }
    run_case("outputs logits before any decode", c_logits_before_decode, 0);
    for (int k = 0; k < 4; k++) {
        run_named(c_sample_bad_idx, k, "outputs llama_sampler_sample idx case %d", k);
    }
    for (int k = 0; k < N_SIZES; k++) {
        run_named(c_piece_short, k, "buffer llama_token_to_piece length %d", sizes[k]);
        run_named(c_detok_short, k, "buffer llama_detokenize case %d", k);
        run_named(c_tokenize_short, k, "buffer llama_tokenize case %d", k);
    }
    for (int k = 0; k < 3; k++) {
        run_named(c_piece_null, k, "buffer llama_token_to_piece NULL buffer length %d", k);
        run_named(c_tokenize_null_out, k, "buffer llama_tokenize NULL tokens case %d", k);
    }
    for (int k = 0; k < N_META; k++) {
        run_named(c_meta_val_str, k, "buffer llama_model_meta_val_str size %zu", meta_sizes[k]);
        run_named(c_meta_key, k, "buffer llama_model_meta_key_by_index size %zu", meta_sizes[k]);
        run_named(c_meta_val, k, "buffer llama_model_meta_val_str_by_index size %zu", meta_sizes[k]);
        run_named(c_meta_missing, k, "buffer llama_model_meta_val_str missing key size %zu", meta_sizes[k]);
        run_named(c_model_desc, k, "buffer llama_model_desc size %zu", meta_sizes[k]);
    }
    run_case("buffer meta NULL buffers", c_meta_null_buf, 0);
    for (int s = 0; s < S_KINDS; s++) {
        for (int a = 0; a < A_KINDS; a++) {
            run_named(c_sampler, s * A_KINDS + a, "sampler %s on %s", smpl_name[s], arr_name[a]);
        }
    }
    llama_model_free(g_model);
    return 0;
}
