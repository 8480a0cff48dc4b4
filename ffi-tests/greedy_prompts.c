// Greedy generation from several prompts: for each line of PROMPTS.txt
// ("\n" in a line stands for a newline), the prompt is tokenized with the
// model's special tokens, decoded in one batch, and N tokens are generated
// greedily, one decode per token, in a fresh sequence of the same context.
// Prints one line of token ids per prompt. Compiled once against llama.h,
// run on minfer or the reference (pick with LD_LIBRARY_PATH): the reference's
// output is golden/greedy/<model>.txt (scripts/make-greedy-goldens.sh).
//
// usage: greedy_prompts MODEL.gguf PROMPTS.txt [N]
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) level;
    (void) text;
    (void) ud;
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf PROMPTS.txt [N]\n", argv[0]);
        return 2;
    }
    const int n_gen = argc > 3 ? atoi(argv[3]) : 64;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create a context\n"); return 1; }
    struct llama_sampler * smpl = llama_sampler_init_greedy();
    FILE * f = fopen(argv[2], "r");
    if (!f) { fprintf(stderr, "cannot open %s\n", argv[2]); return 1; }
    char line[1024];
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        // the prompt: the line without its newline, "\n" → newline
        char text[1024];
        size_t n = 0;
        for (const char * p = line; *p && *p != '\n'; p++) {
            if (p[0] == '\\' && p[1] == 'n') { text[n++] = '\n'; p++; } else { text[n++] = *p; }
        }
        text[n] = 0;
        llama_token toks[256];
        int nt = llama_tokenize(vocab, text, (int32_t) n, toks, 256, true, false);
        if (nt <= 0) { fprintf(stderr, "tokenize failed\n"); rc = 1; break; }
        llama_memory_clear(llama_get_memory(ctx), true);
        llama_sampler_reset(smpl);
        struct llama_batch batch = llama_batch_get_one(toks, nt);
        for (int i = 0; i < n_gen; i++) {
            if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "decode failed\n"); rc = 1; break; }
            llama_token t = llama_sampler_sample(smpl, ctx, -1);
            printf("%s%d", i ? " " : "", t);
            toks[0] = t;
            batch = llama_batch_get_one(toks, 1);
        }
        printf("\n");
        if (rc) break;
    }
    fclose(f);
    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
