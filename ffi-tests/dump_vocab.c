// Prints what the vocab getters of llama.h return for a model (vocab_only):
// the special ids and flags, then a digest of every token's text, score,
// attributes, is_eog / is_control and pieces (special or not, lstrip), so the
// output of this library and of the reference library can be compared (the
// goldens in ffi-tests/golden/vocab/ come from the reference).
//
// usage: dump_vocab MODEL.gguf [--tokens]   (--tokens: one line per token)
#include "llama.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void quiet_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level; (void) text; (void) user_data;
}

static uint64_t fnv(uint64_t h, const void * p, size_t n) {
    const unsigned char * b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ULL; }
    return h;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf [--tokens]\n", argv[0]); return 2; }
    int per_token = argc > 2 && strcmp(argv[2], "--tokens") == 0;
    llama_log_set(quiet_log, NULL);
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { printf("load failed\n"); return 1; }
    const struct llama_vocab * v = llama_model_get_vocab(model);
    int n = llama_vocab_n_tokens(v);
    printf("n_tokens %d type %d\n", n, (int) llama_vocab_type(v));
    printf("bos %d eos %d eot %d sep %d nl %d pad %d mask %d\n", llama_vocab_bos(v), llama_vocab_eos(v),
           llama_vocab_eot(v), llama_vocab_sep(v), llama_vocab_nl(v), llama_vocab_pad(v), llama_vocab_mask(v));
    printf("fim pre %d suf %d mid %d pad %d rep %d sep %d\n", llama_vocab_fim_pre(v), llama_vocab_fim_suf(v),
           llama_vocab_fim_mid(v), llama_vocab_fim_pad(v), llama_vocab_fim_rep(v), llama_vocab_fim_sep(v));
    printf("add_bos %d add_eos %d add_sep %d\n", llama_vocab_get_add_bos(v), llama_vocab_get_add_eos(v),
           llama_vocab_get_add_sep(v));
    int32_t n_sup = -1;
    llama_vocab_get_suppress_tokens(v, &n_sup);
    printf("suppress %d\n", n_sup);
    uint64_t h = 0xcbf29ce484222325ULL;
    int n_eog = 0, n_ctrl = 0;
    printf("eog:");
    for (int t = 0; t < n; t++) {
        if (llama_vocab_is_eog(v, t)) { printf(" %d", t); n_eog++; }
    }
    printf("\n");
    static char buf[4][65536];
    for (int t = 0; t < n; t++) {
        const char * text = llama_vocab_get_text(v, t);
        float score = llama_vocab_get_score(v, t);
        int attr = (int) llama_vocab_get_attr(v, t);
        int eog = llama_vocab_is_eog(v, t), ctrl = llama_vocab_is_control(v, t);
        n_ctrl += ctrl;
        int32_t len[4] = {
            llama_token_to_piece(v, t, buf[0], sizeof(buf[0]), 0, false),
            llama_token_to_piece(v, t, buf[1], sizeof(buf[1]), 0, true),
            llama_token_to_piece(v, t, buf[2], sizeof(buf[2]), 1, true),
            llama_token_to_piece(v, t, buf[3], 0, 0, true),
        };
        h = fnv(h, text, strlen(text) + 1);
        h = fnv(h, &score, sizeof(score));
        h = fnv(h, &attr, sizeof(attr));
        h = fnv(h, &eog, sizeof(eog));
        h = fnv(h, &ctrl, sizeof(ctrl));
        for (int i = 0; i < 4; i++) {
            h = fnv(h, &len[i], sizeof(len[i]));
            if (i < 3 && len[i] > 0) h = fnv(h, buf[i], (size_t) len[i]);
        }
        if (per_token) {
            printf("%d attr %d eog %d ctrl %d score %.6g len %d %d %d %d text '%s' piece '%.*s'\n", t, attr, eog, ctrl,
                   (double) score, len[0], len[1], len[2], len[3], text, len[1] > 0 ? len[1] : 0, buf[1]);
        }
    }
    printf("control %d eog %d digest %016llx\n", n_ctrl, n_eog, (unsigned long long) h);
    llama_model_free(model);
    return 0;
}
