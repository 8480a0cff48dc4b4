// Tokenization throughput (MB/s) on a large mixed text (English, code,
// numbers, accents, CJK, Cyrillic, emoji, markup). Compiled once against
// include/llama.h, it runs against either library:
//   LD_LIBRARY_PATH=target/release            bench_tokenize MODEL.gguf [MB]
//   LD_LIBRARY_PATH=<reference lib dir>       bench_tokenize MODEL.gguf [MB]
// With a third argument, the text is that file's bytes, repeated to MB.
#define _POSIX_C_SOURCE 199309L
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void quiet_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level; (void) text; (void) user_data;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf [MB]\n", argv[0]); return 2; }
    double mb = argc > 2 ? atof(argv[2]) : 4.0;
    llama_log_set(quiet_log, NULL);
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const struct llama_vocab * v = llama_model_get_vocab(model);
    const char * parts[] = {"The quick brown fox jumps over the lazy dog. ", "It's 12:45 and we've got 1234567 items. ",
                            "café naïve résumé Ångström ", "你好，世界！今天天气很好。", "Привет, мир! ", "😀🎉👍 ",
                            "\n\n", "def f(x):\n    return x * 2  # double\n", "\t<b>html</b> &amp; ", "    indented   spaces "};
    size_t target = (size_t) (mb * 1024 * 1024), len = 0;
    char * s = malloc(target + 128);
    if (argc > 3) {
        FILE * f = fopen(argv[3], "rb");
        if (!f) { fprintf(stderr, "cannot read %s\n", argv[3]); return 1; }
        while (len < target) {
            size_t k = fread(s + len, 1, target - len, f);
            if (k == 0) { if (len == 0) break; rewind(f); }
            len += k;
        }
        fclose(f);
    }
    for (size_t i = 0; len < target; i++) {
        const char * p = parts[(i * 7 + i / 3) % (sizeof(parts) / sizeof(parts[0]))];
        size_t k = strlen(p);
        memcpy(s + len, p, k);
        len += k;
    }
    int32_t * ids = malloc(sizeof(int32_t) * len);
    double best = 1e30;
    int32_t n = 0;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now();
        n = llama_tokenize(v, s, (int32_t) len, ids, (int32_t) len, false, false);
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    printf("%s: %.1f MB, %d tokens, best of 3: %.3f s, %.2f MB/s\n", argv[1], (double) len / 1048576.0, n, best,
           (double) len / 1048576.0 / best);
    free(ids); free(s);
    llama_model_free(model);
    return 0;
}
