// Deterministic random inputs (special-token soup with overlapping cuts,
// random code points from many scripts, random bytes including invalid
// UTF-8) tokenized with all four flag combinations and detokenized; prints
// one line per case. Run against this library and the reference library
// (LD_LIBRARY_PATH) and diff the outputs.
//
// usage: fuzz_tokenize MODEL.gguf [N_CASES] [SEED]
#include "llama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level; (void) text; (void) user_data;
}

static uint64_t g_rng;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
    return (uint32_t) (g_rng >> 11);
}

static size_t put_utf8(char * o, uint32_t c) {
    if (c < 0x80) { o[0] = (char) c; return 1; }
    if (c < 0x800) { o[0] = (char) (0xC0 | (c >> 6)); o[1] = (char) (0x80 | (c & 63)); return 2; }
    if (c < 0x10000) { o[0] = (char) (0xE0 | (c >> 12)); o[1] = (char) (0x80 | ((c >> 6) & 63)); o[2] = (char) (0x80 | (c & 63)); return 3; }
    o[0] = (char) (0xF0 | (c >> 18)); o[1] = (char) (0x80 | ((c >> 12) & 63)); o[2] = (char) (0x80 | ((c >> 6) & 63)); o[3] = (char) (0x80 | (c & 63));
    return 4;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf [N] [SEED]\n", argv[0]); return 2; }
    int n_cases = argc > 2 ? atoi(argv[2]) : 500;
    g_rng = argc > 3 ? strtoull(argv[3], NULL, 10) : 88172645463325252ULL;
    llama_log_set(quiet_log, NULL);
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { printf("load failed\n"); return 1; }
    const struct llama_vocab * v = llama_model_get_vocab(model);
    int nv = llama_vocab_n_tokens(v);
    int * specials = malloc(sizeof(int) * (size_t) nv);
    int ns = 0;
    for (int t = 0; t < nv; t++) {
        int a = (int) llama_vocab_get_attr(v, t);
        if (a & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED | LLAMA_TOKEN_ATTR_UNKNOWN)) specials[ns++] = t;
    }
    static const uint32_t ranges[][2] = {{0x20, 0x7e}, {0x09, 0x0d}, {0xa0, 0x17f}, {0x300, 0x36f}, {0x370, 0x3ff},
        {0x400, 0x4ff}, {0x590, 0x6ff}, {0x900, 0x97f}, {0xe00, 0xe7f}, {0x1100, 0x11ff}, {0x2000, 0x206f},
        {0x2190, 0x23ff}, {0x3000, 0x30ff}, {0x4e00, 0x9fff}, {0xac00, 0xd7a3}, {0xff00, 0xffef}, {0x1f300, 0x1f64f},
        {0x20000, 0x2a6df}, {0x30, 0x39}, {0x0, 0x1f}};
    const int nr = sizeof(ranges) / sizeof(ranges[0]);
    char * s = malloc(1 << 16);
    int32_t * ids = malloc(sizeof(int32_t) * (1 << 16));
    char * out = malloc(1 << 18);
    for (int c = 0; c < n_cases; c++) {
        size_t len = 0;
        int pieces = 1 + (int) (rnd() % 12);
        for (int p = 0; p < pieces; p++) {
            uint32_t kind = rnd() % 8;
            if (kind <= 1 && ns > 0) { // a special token's text, whole or cut
                const char * t = llama_vocab_get_text(v, specials[rnd() % (uint32_t) ns]);
                size_t tl = strlen(t), a = 0, b = tl;
                if (kind == 1 && tl > 1) { a = rnd() % tl; b = a + 1 + rnd() % (tl - a); }
                if (len + (b - a) < 60000) { memcpy(s + len, t + a, b - a); len += b - a; }
            } else if (kind == 2) { // random bytes
                int k = 1 + (int) (rnd() % 4);
                for (int i = 0; i < k; i++) s[len++] = (char) (rnd() & 0xff);
            } else if (kind == 3) { // whitespace runs
                int k = 1 + (int) (rnd() % 6);
                for (int i = 0; i < k; i++) s[len++] = " \t\n\r "[rnd() % 5];
            } else { // code points from a script
                const uint32_t * r = ranges[rnd() % (uint32_t) nr];
                int k = 1 + (int) (rnd() % 8);
                for (int i = 0; i < k; i++) len += put_utf8(s + len, r[0] + rnd() % (r[1] - r[0] + 1));
            }
        }
        for (int flags = 0; flags < 4; flags++) {
            bool add = flags & 1, parse = flags & 2;
            int32_t n = llama_tokenize(v, s, (int32_t) len, ids, 1 << 16, add, parse);
            uint64_t h = 1469598103934665603ULL;
            for (int i = 0; i < n; i++) { h ^= (uint32_t) ids[i]; h *= 1099511628211ULL; }
            int32_t m = n > 0 ? llama_detokenize(v, ids, n, out, 1 << 18, flags & 1, parse) : 0;
            uint64_t hd = 1469598103934665603ULL;
            for (int i = 0; i < m; i++) { hd ^= (uint8_t) out[i]; hd *= 1099511628211ULL; }
            printf("%d %d n=%d ids=%016llx det=%d %016llx\n", c, flags, n, (unsigned long long) h, m, (unsigned long long) hd);
        }
    }
    free(s); free(ids); free(out); free(specials);
    llama_model_free(model);
    return 0;
}
