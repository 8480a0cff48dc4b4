// The vocab/tokenize part of the C API: buffer-size semantics of
// llama_tokenize / llama_token_to_piece / llama_detokenize (minus the
// required size, nothing written past the buffer, no NUL added), invalid
// token ids and NULL handles (failure values, a logged message, no crash),
// empty input, input with NUL bytes, a 10 MB input, special tokens.
//
// usage: test_vocab_api SMOLLM2.gguf GEMMA3.gguf
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <pthread.h>

#include <stdint.h>

#define SENTINEL 0x7eadbeef

static struct llama_model * load_vocab(const char * path) {
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    return llama_model_load_from_file(path, mp);
}

static int32_t tok(const struct llama_vocab * v, const char * s, int32_t len, int32_t * out, int32_t max, bool add, bool parse) {
    return llama_tokenize(v, s, len, out, max, add, parse);
}

static void test_tokenize_buffers(const struct llama_vocab * v, const char * name) {
    const char * s = "Hello world, this is a test.";
    int32_t len = (int32_t) strlen(s);
    int32_t need = tok(v, s, len, NULL, 0, false, false);
    CHECK(need < 0, "%s: a count query returns minus the count (%d)", name, need);
    int32_t n = -need;
    int32_t buf[64];
    for (int i = 0; i < 64; i++) buf[i] = SENTINEL;
    CHECK(tok(v, s, len, buf, n - 1, false, false) == -n, "%s: one short gives -%d", name, n);
    int untouched = 1;
    for (int i = 0; i < 64; i++) untouched &= buf[i] == SENTINEL;
    CHECK(untouched, "%s: a too-small buffer is not written", name);
    CHECK(tok(v, s, len, buf, n, false, false) == n, "%s: an exact buffer gives the count", name);
    CHECK(buf[n] == SENTINEL, "%s: nothing written past the count", name);
    CHECK(tok(v, s, len, buf, -5, false, false) == -n, "%s: a negative n_tokens_max is a too-small buffer", name);

    // empty input
    CHECK(tok(v, "", 0, buf, 64, false, false) == 0, "%s: empty input gives no tokens", name);
    CHECK(tok(v, NULL, 0, buf, 64, false, false) == 0, "%s: NULL text with length 0 gives no tokens", name);
    int32_t ne = tok(v, "", 0, buf, 64, true, false);
    CHECK(ne == (llama_vocab_get_add_bos(v) ? 1 : 0) + (llama_vocab_get_add_eos(v) ? 1 : 0),
          "%s: empty input with add_special gives the added specials only (%d)", name, ne);
    if (llama_vocab_get_add_bos(v)) CHECK(buf[0] == llama_vocab_bos(v), "%s: BOS first", name);

    // bad arguments
    log_clear();
    CHECK(tok(v, s, -1, buf, 64, false, false) == INT32_MIN, "%s: negative text_len fails", name);
    CHECK(log_has("text_len"), "%s: and says why: %s", name, g_log);
    CHECK(tok(NULL, s, len, buf, 64, false, false) == INT32_MIN, "%s: NULL vocab fails", name);
    CHECK(tok(v, NULL, 5, buf, 64, false, false) == INT32_MIN, "%s: NULL text with a length fails", name);
    CHECK(tok(v, s, len, NULL, 64, false, false) == INT32_MIN, "%s: NULL tokens with room claimed fails", name);
}

static void test_nul_bytes(const struct llama_vocab * v, const char * name) {
    const char s[] = "a\0b\0\0c";
    int32_t ids[64];
    int32_t n = tok(v, s, 6, ids, 64, false, false);
    CHECK(n > 0, "%s: input with NUL bytes tokenizes (%d)", name, n);
    char out[64];
    int32_t m = llama_detokenize(v, ids, n, out, sizeof(out), false, false);
    CHECK(m == 6 && memcmp(out, s, 6) == 0, "%s: and detokenizes back to the same 6 bytes (%d)", name, m);
}

static void test_pieces(const struct llama_vocab * v, const char * name) {
    int32_t ids[64];
    int32_t n = tok(v, " world", 6, ids, 64, false, false);
    CHECK(n >= 1, "%s: ' world' tokenizes", name);
    char buf[64];
    memset(buf, 'X', sizeof(buf));
    int32_t len = llama_token_to_piece(v, ids[n - 1], buf, sizeof(buf), 0, false);
    CHECK(len > 0, "%s: a piece", name);
    CHECK(buf[len] == 'X', "%s: no NUL added after the piece", name);
    memset(buf, 'X', sizeof(buf));
    CHECK(llama_token_to_piece(v, ids[n - 1], buf, len - 1, 0, false) == -len, "%s: short buffer gives -%d", name, len);
    CHECK(buf[0] == 'X', "%s: and is not written", name);
    CHECK(llama_token_to_piece(v, ids[n - 1], NULL, 0, 0, false) == -len, "%s: a size query with NULL", name);
    if (n == 1 && buf[0] == 'X') {
        int32_t l2 = llama_token_to_piece(v, ids[0], buf, sizeof(buf), 1, false);
        CHECK(l2 == len - 1 && memcmp(buf, "world", 5) == 0, "%s: lstrip removes the leading space (%d '%.*s')", name,
              l2, l2 > 0 ? l2 : 0, buf);
    }
    // control tokens: empty unless special
    llama_token bos = llama_vocab_bos(v);
    if (bos >= 0 && llama_vocab_is_control(v, bos)) {
        CHECK(llama_token_to_piece(v, bos, buf, sizeof(buf), 0, false) == 0, "%s: BOS piece is empty without special", name);
        int32_t l = llama_token_to_piece(v, bos, buf, sizeof(buf), 0, true);
        const char * text = llama_vocab_get_text(v, bos);
        CHECK(l == (int32_t) strlen(text) && memcmp(buf, text, (size_t) l) == 0, "%s: BOS piece with special is its text", name);
    }
}

static void test_invalid_ids(const struct llama_vocab * v, const char * name) {
    int32_t nv = llama_vocab_n_tokens(v);
    int32_t bad[3] = {-1, nv, INT32_MAX};
    char buf[32];
    for (int i = 0; i < 3; i++) {
        llama_token t = bad[i];
        log_clear();
        CHECK(llama_token_to_piece(v, t, buf, sizeof(buf), 0, true) == 0, "%s: piece of %d fails with 0", name, t);
        CHECK(log_has("out of range"), "%s: with a message: %s", name, g_log);
        CHECK(llama_vocab_get_text(v, t) == NULL, "%s: text of %d is NULL", name, t);
        CHECK(llama_vocab_get_score(v, t) == 0.0f, "%s: score of %d is 0", name, t);
        CHECK(llama_vocab_get_attr(v, t) == LLAMA_TOKEN_ATTR_UNDEFINED, "%s: attr of %d is UNDEFINED", name, t);
        CHECK(!llama_vocab_is_eog(v, t), "%s: %d is not EOG", name, t);
        CHECK(!llama_vocab_is_control(v, t), "%s: %d is not control", name, t);
        llama_token ids[2] = {llama_vocab_n_tokens(v) > 300 ? 300 : 0, t};
        CHECK(llama_detokenize(v, ids, 2, buf, sizeof(buf), false, false) == 0, "%s: detokenize with %d fails with 0", name, t);
    }
    char out[8];
    CHECK(llama_detokenize(v, NULL, 3, out, 8, false, false) == 0, "%s: detokenize NULL tokens fails", name);
    CHECK(llama_detokenize(v, bad, -1, out, 8, false, false) == 0, "%s: detokenize negative count fails", name);
    CHECK(llama_vocab_n_tokens(NULL) == -1, "NULL vocab: n_tokens -1");
    CHECK(llama_vocab_bos(NULL) == -1 && llama_vocab_eot(NULL) == -1, "NULL vocab: special ids -1");
    CHECK(llama_vocab_get_text(NULL, 0) == NULL, "NULL vocab: text NULL");
    CHECK(llama_token_to_piece(NULL, 0, buf, 8, 0, true) == 0, "NULL vocab: piece 0");
}

static void test_detokenize(const struct llama_vocab * v, const char * name) {
    const char * s = "Hello world";
    int32_t ids[64];
    int32_t n = tok(v, s, (int32_t) strlen(s), ids, 64, true, false);
    char buf[128];
    memset(buf, 'X', sizeof(buf));
    int32_t full = llama_detokenize(v, ids, n, buf, sizeof(buf), true, false);
    CHECK(full == (int32_t) strlen(s) && memcmp(buf, s, strlen(s)) == 0, "%s: round trip with remove_special (%d '%.*s')",
          name, full, full > 0 ? full : 0, buf);
    CHECK(buf[full] == 'X', "%s: no NUL added", name);
    memset(buf, 'X', sizeof(buf));
    int32_t shortr = llama_detokenize(v, ids, n, buf, 3, true, false);
    CHECK(shortr < 0 && -shortr >= full, "%s: a short buffer gives minus the size (%d)", name, shortr);
    CHECK(buf[3] == 'X', "%s: nothing past the buffer", name);
    if (llama_vocab_get_add_bos(v) && llama_vocab_is_control(v, ids[0])) {
        int32_t with = llama_detokenize(v, ids, n, buf, sizeof(buf), false, true);
        const char * bos = llama_vocab_get_text(v, ids[0]);
        CHECK(with > full && memcmp(buf, bos, strlen(bos)) == 0, "%s: unparse_special keeps the BOS text", name);
    }
}

static void test_special(const struct llama_vocab * v, const char * name, const char * special_text) {
    int32_t ids[64];
    int32_t n1 = tok(v, special_text, (int32_t) strlen(special_text), ids, 64, false, true);
    CHECK(n1 == 1 && llama_vocab_is_control(v, ids[0]), "%s: '%s' with parse_special is one control token (%d)", name,
          special_text, n1);
    int32_t n2 = tok(v, special_text, (int32_t) strlen(special_text), ids, 64, false, false);
    CHECK(n2 > 1, "%s: without parse_special it is plain text (%d tokens)", name, n2);
}

static void test_big(const struct llama_vocab * v, const char * name) {
    const char * parts[] = {"The quick brown fox jumps over the lazy dog. ", "1234567890 ", "café naïve résumé ",
                            "你好，世界！", "Привет мир ", "😀🎉 ", "\n\n", "def f(x):\n    return x * 2\n", "\t<b>html</b> "};
    size_t target = 10u << 20, len = 0;
    char * s = malloc(target + 64);
    for (size_t i = 0; len < target; i++) {
        const char * p = parts[(i * 7 + i / 3) % (sizeof(parts) / sizeof(parts[0]))];
        size_t k = strlen(p);
        memcpy(s + len, p, k);
        len += k;
    }
    int32_t * ids = malloc(sizeof(int32_t) * len);
    int32_t n = tok(v, s, (int32_t) len, ids, (int32_t) len, false, false);
    CHECK(n > 1000000, "%s: 10 MB input tokenized (%d tokens)", name, n);
    char * back = malloc(len + 1024);
    int32_t m = llama_detokenize(v, ids, n, back, (int32_t) len + 1024, false, false);
    CHECK(m == (int32_t) len && memcmp(back, s, len) == 0, "%s: and detokenized back to the same bytes (%d of %zu)",
          name, m, len);
    free(back);
    free(ids);
    free(s);
}


// kv overrides reach the vocabulary's scalar keys (as in the reference)
static void test_overrides(const char * gemma_path) {
    struct llama_model_kv_override ov[3];
    memset(ov, 0, sizeof(ov));
    ov[0].tag = LLAMA_KV_OVERRIDE_TYPE_BOOL;
    strcpy(ov[0].key, "tokenizer.ggml.add_bos_token");
    ov[0].val_bool = false;
    ov[1].tag = LLAMA_KV_OVERRIDE_TYPE_BOOL;
    strcpy(ov[1].key, "tokenizer.ggml.add_eos_token");
    ov[1].val_bool = true;
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    mp.kv_overrides = ov;
    struct llama_model * m = llama_model_load_from_file(gemma_path, mp);
    CHECK(m != NULL, "gemma3 loads with tokenizer overrides");
    if (!m) return;
    const struct llama_vocab * v = llama_model_get_vocab(m);
    CHECK(!llama_vocab_get_add_bos(v) && llama_vocab_get_add_eos(v), "the overrides are applied");
    int32_t ids[8];
    int32_t n = tok(v, "", 0, ids, 8, true, false);
    CHECK(n == 1 && ids[0] == llama_vocab_eos(v), "empty input with add_special is just EOS (%d)", n);
    llama_model_free(m);
}

// one vocabulary used from several threads at once gives the same tokens
struct tjob {
    const struct llama_vocab * v;
    const char * s;
    int32_t len;
    int32_t * ids;
    int32_t n;
};

static void * tjob_run(void * p) {
    struct tjob * j = p;
    for (int rep = 0; rep < 20; rep++) {
        j->n = llama_tokenize(j->v, j->s, j->len, j->ids, 4096, true, true);
    }
    return NULL;
}

static void test_threads(const struct llama_vocab * v, const char * name) {
    const char * s = "<|im_start|>user\nHello, wörld! 你好 12345 <start_of_turn>\n\n   x = [1, 2, 3]  # ok\n";
    int32_t len = (int32_t) strlen(s);
    int32_t want[4096];
    int32_t nw = tok(v, s, len, want, 4096, true, true);
    struct tjob jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i].v = v; jobs[i].s = s; jobs[i].len = len; jobs[i].n = -1;
        jobs[i].ids = malloc(sizeof(int32_t) * 4096);
        pthread_create(&th[i], NULL, tjob_run, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].n == nw && memcmp(jobs[i].ids, want, sizeof(int32_t) * (size_t) nw) == 0,
              "%s: thread %d tokenizes as the main thread", name, i);
        free(jobs[i].ids);
    }
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SMOLLM2.gguf GEMMA3.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(capture_log, NULL);
    const char * names[2] = {"smollm2", "gemma3"};
    const char * specials[2] = {"<|im_start|>", "<start_of_turn>"};
    for (int i = 0; i < 2; i++) {
        struct llama_model * m = load_vocab(argv[1 + i]);
        CHECK(m != NULL, "load %s", argv[1 + i]);
        if (!m) continue;
        const struct llama_vocab * v = llama_model_get_vocab(m);
        test_tokenize_buffers(v, names[i]);
        test_nul_bytes(v, names[i]);
        test_pieces(v, names[i]);
        test_invalid_ids(v, names[i]);
        test_detokenize(v, names[i]);
        test_special(v, names[i], specials[i]);
        test_threads(v, names[i]);
        if (!getenv("VOCAB_API_SKIP_BIG")) test_big(v, names[i]);
        llama_model_free(m);
    }
    test_overrides(argv[2]);
    return finish("vocab_api");
}
