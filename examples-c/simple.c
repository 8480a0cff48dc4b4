// simple: load a GGUF model with libllama and show what it is.
//
// usage: simple MODEL.gguf [PROMPT]
//
// Decoding arrives with the forward-pass work; until then this example loads
// the model, prints its description, size and metadata, and tokenizes
// nothing. It is written against llama.h only, so it runs unchanged on
// minfer or on the reference library.
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT]\n", argv[0]);
        return 2;
    }
    llama_backend_init();

    struct llama_model_params mparams = llama_model_default_params();
    struct llama_model * model = llama_model_load_from_file(argv[1], mparams);
    if (model == NULL) {
        fprintf(stderr, "error: unable to load model '%s'\n", argv[1]);
        return 1;
    }

    char desc[256];
    llama_model_desc(model, desc, sizeof(desc));
    printf("model:      %s\n", desc);
    printf("parameters: %llu\n", (unsigned long long) llama_model_n_params(model));
    printf("size:       %.1f MiB\n", (double) llama_model_size(model) / (1024.0 * 1024.0));
    printf("layers:     %d, embedding %d, heads %d (kv %d), trained context %d\n", llama_model_n_layer(model),
           llama_model_n_embd(model), llama_model_n_head(model), llama_model_n_head_kv(model),
           llama_model_n_ctx_train(model));
    printf("vocabulary: %d tokens\n", llama_vocab_n_tokens(llama_model_get_vocab(model)));
    printf("system:     %s\n", llama_print_system_info());

    printf("metadata (%d keys):\n", llama_model_meta_count(model));
    for (int i = 0; i < llama_model_meta_count(model); i++) {
        char key[256];
        char val[128];
        llama_model_meta_key_by_index(model, i, key, sizeof(key));
        int n = llama_model_meta_val_str_by_index(model, i, val, sizeof(val));
        // Long values (chat templates) are cut to fit one line.
        for (char * c = val; *c; c++) {
            if (*c == '\n') *c = ' ';
        }
        printf("  %-40s %s%s\n", key, val, n >= (int) sizeof(val) ? "..." : "");
    }

    llama_model_free(model);
    llama_backend_free();
    return 0;
}
