// End-to-end seeded generation: a prompt, then 128 tokens sampled with the
// default chain (top_k 40 -> top_p 0.95 -> min_p 0.05 -> temp 0.8 ->
// dist(seed)) through llama_sampler_sample, one decode per token. Prints the
// token ids per seed. The same program against the reference library gives
// golden/generate_seeded.txt (gen_sampler_golden.sh); identical output
// needs logits close enough that no draw lands on the other side of a
// boundary, so run.sh reports how many tokens agree before the first
// difference.
//
// usage: generate_seeded MODEL.gguf [n_tokens] [seeds...]
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
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [n_tokens] [seeds...]\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    const int n_gen = argc > 2 ? atoi(argv[2]) : 128;
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    const char * prompt = "The three most important inventions of the last century are";
    llama_token toks[256];
    const int n_prompt = llama_tokenize(vocab, prompt, (int32_t) strlen(prompt), toks, 256, true, false);
    if (n_prompt <= 0) {
        fprintf(stderr, "tokenize failed\n");
        return 1;
    }
    const int n_seeds = argc > 3 ? argc - 3 : 3;
    for (int s = 0; s < n_seeds; s++) {
        const uint32_t seed = argc > 3 ? (uint32_t) strtoul(argv[3 + s], NULL, 10) : (uint32_t) (42 + s);
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 512;
        cp.n_batch = 512;
        cp.n_threads = 2;
        cp.n_threads_batch = 2;
        struct llama_context * ctx = llama_init_from_model(model, cp);
        if (!ctx) {
            fprintf(stderr, "context failed\n");
            return 1;
        }
        struct llama_sampler * ch = llama_sampler_chain_init(llama_sampler_chain_default_params());
        if (seed == 0) {  // seed 0: greedy, to tell the logits from the sampling
            llama_sampler_chain_add(ch, llama_sampler_init_greedy());
        } else {
            llama_sampler_chain_add(ch, llama_sampler_init_top_k(40));
            llama_sampler_chain_add(ch, llama_sampler_init_top_p(0.95f, 1));
            llama_sampler_chain_add(ch, llama_sampler_init_min_p(0.05f, 1));
            llama_sampler_chain_add(ch, llama_sampler_init_temp(0.8f));
            llama_sampler_chain_add(ch, llama_sampler_init_dist(seed));
        }
        llama_batch batch = llama_batch_get_one(toks, n_prompt);
        printf("seed %u:", (unsigned) seed);
        llama_token cur;
        for (int i = 0; i < n_gen; i++) {
            if (llama_decode(ctx, batch) != 0) {
                printf(" [decode failed]");
                break;
            }
            cur = llama_sampler_sample(ch, ctx, -1);
            printf(" %d", cur);
            if (llama_vocab_is_eog(vocab, cur)) {
                break;
            }
            batch = llama_batch_get_one(&cur, 1);
        }
        printf("\n");
        fflush(stdout);
        llama_sampler_free(ch);
        llama_free(ctx);
    }
    llama_model_free(model);
    return 0;
}
