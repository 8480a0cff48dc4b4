// Seed-for-seed parity of the samplers that read a vocabulary (grammar,
// DRY sequence breakers, infill) over the real vocabularies of the test
// models (SmolLM2: 49,152 tokens; gemma-3: 262,144), with pseudo-random
// logits. golden/vocab_samplers.txt is the reference library's output
// (gen_sampler_golden.sh); run.sh diffs ours against it.
//
// While the tokenizer is not in the library, the vocabulary-dependent
// constructors fail and this program prints "SKIP: ..." (run.sh reports a
// skip, neither pass nor fail).
//
// usage: vocab_sampler_golden GRAMMARS_DIR MODEL.gguf...
#include "llama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t g_x;

static void fill(llama_token_data * d, int n, float scale) {
    for (int i = 0; i < n; i++) {
        g_x ^= g_x << 13;
        g_x ^= g_x >> 17;
        g_x ^= g_x << 5;
        d[i].id = i;
        d[i].logit = (float) (g_x >> 8) / 16777216.0f * scale;
        d[i].p = 0.0f;
    }
}

// runs a chain for n_steps, printing a hash of the chosen tokens and the first 30
static void run(const char * what, struct llama_sampler * ch, const struct llama_vocab * v, int n_steps, int mode) {
    const int nv = llama_vocab_n_tokens(v);
    llama_token_data * d = malloc(sizeof(*d) * (size_t) nv);
    uint64_t h = 1469598103934665603ull;
    int first[30];
    int n = 0;
    for (int step = 0; step < n_steps; step++) {
        fill(d, nv, mode == 0 ? 4.0f : 3.0f);
        if (mode == 0) {  // grammar: make ending likely once allowed
            d[llama_vocab_eos(v)].logit += 6.0f;
        } else if (mode == 1) {  // DRY: a few favourites so that repeats happen
            for (int k = 0; k < 12; k++) d[(k * 37 + 198) % nv].logit += 6.0f;
            d[198].logit += 3.0f;
        } else {  // infill: EOG now and then
            d[llama_vocab_eos(v)].logit += (step % 7 == 0) ? 4.0f : 0.0f;
        }
        llama_token_data_array cur = { d, (size_t) nv, -1, false };
        llama_sampler_apply(ch, &cur);
        if (cur.selected < 0 || (size_t) cur.selected >= cur.size) {
            break;
        }
        const llama_token t = cur.data[cur.selected].id;
        if (mode == 0 && llama_vocab_is_eog(v, t)) {
            break;
        }
        llama_sampler_accept(ch, t);
        h = (h ^ (uint32_t) t) * 1099511628211ull;
        if (n < 30) first[n] = t;
        n++;
    }
    printf("%s: %d tokens, hash %016llx:", what, n, (unsigned long long) h);
    for (int i = 0; i < n && i < 30; i++) printf(" %d", first[i]);
    printf("\n");
    free(d);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s GRAMMARS_DIR MODEL.gguf...\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/json.gbnf", argv[1]);
    FILE * f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return 2;
    }
    static char json[1 << 16];
    const size_t len = fread(json, 1, sizeof(json) - 1, f);
    json[len] = 0;
    fclose(f);

    for (int a = 2; a < argc; a++) {
        struct llama_model_params mp = llama_model_default_params();
        mp.vocab_only = true;
        struct llama_model * model = llama_model_load_from_file(argv[a], mp);
        if (!model) {
            fprintf(stderr, "cannot load %s\n", argv[a]);
            return 2;
        }
        const struct llama_vocab * v = llama_model_get_vocab(model);
        const char * name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];

        struct llama_sampler * probe = llama_sampler_init_grammar(v, json, "root");
        if (!probe) {
            printf("SKIP: the vocabulary-dependent samplers need the tokenizer\n");
            llama_model_free(model);
            return 0;
        }
        llama_sampler_free(probe);

        printf("== %s\n", name);
        for (int seed = 1; seed <= 2; seed++) {
            struct llama_sampler * ch = llama_sampler_chain_init(llama_sampler_chain_default_params());
            llama_sampler_chain_add(ch, llama_sampler_init_grammar(v, json, "root"));
            llama_sampler_chain_add(ch, llama_sampler_init_dist((uint32_t) seed));
            char what[64];
            snprintf(what, sizeof(what), "json grammar -> dist(%d)", seed);
            g_x = 777u + (uint32_t) seed;
            run(what, ch, v, 100, 0);
            llama_sampler_free(ch);
        }
        {
            const char * br[4] = { "\n", ":", "\"", "*" };
            struct llama_sampler * ch = llama_sampler_chain_init(llama_sampler_chain_default_params());
            llama_sampler_chain_add(ch, llama_sampler_init_dry(v, 0.8f, 1.75f, 2, 256, br, 4));
            llama_sampler_chain_add(ch, llama_sampler_init_top_k(8));
            llama_sampler_chain_add(ch, llama_sampler_init_dist(99));
            g_x = 4242;
            run("dry(breakers) -> top_k 8 -> dist", ch, v, 400, 1);
            llama_sampler_free(ch);
        }
        {
            struct llama_sampler * ch = llama_sampler_chain_init(llama_sampler_chain_default_params());
            llama_sampler_chain_add(ch, llama_sampler_init_top_k(50));
            llama_sampler_chain_add(ch, llama_sampler_init_infill(v));
            llama_sampler_chain_add(ch, llama_sampler_init_dist(99));
            g_x = 4243;
            run("top_k 50 -> infill -> dist", ch, v, 400, 2);
            llama_sampler_free(ch);
        }
        llama_model_free(model);
    }
    return 0;
}
