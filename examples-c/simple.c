// simple: greedy text generation with libllama, in C.
//
// usage: simple MODEL.gguf [-n N_PREDICT] [--ids] [PROMPT]
//
// Tokenizes the prompt, decodes it in one batch, then generates N_PREDICT
// tokens (default 32) greedily, one llama_decode per token, printing each
// piece as it comes. With --ids it prints token ids instead of text, two
// lines "prompt: ID ..." and "generated: ID ..." (the bindings' tests compare
// with them). Written against llama.h only, so it runs unchanged on minfer or
// on the reference library.
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [-n N_PREDICT] [--ids] [PROMPT]\n", argv[0]);
        return 2;
    }
    const char * model_path = argv[1];
    int n_predict = 32;
    int arg = 2;
    if (arg + 1 < argc && strcmp(argv[arg], "-n") == 0) {
        n_predict = atoi(argv[arg + 1]);
        arg += 2;
    }
    bool print_ids = false;
    if (arg < argc && strcmp(argv[arg], "--ids") == 0) {
        print_ids = true;
        arg++;
    }
    const char * prompt = arg < argc ? argv[arg] : "Hello my name is";

    llama_backend_init();
    struct llama_model * model = llama_model_load_from_file(model_path, llama_model_default_params());
    if (model == NULL) {
        fprintf(stderr, "error: unable to load model '%s'\n", model_path);
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);

    // --- tokenize: the first call asks for the size
    const int n_prompt = -llama_tokenize(vocab, prompt, (int32_t) strlen(prompt), NULL, 0, true, true);
    llama_token * tokens = malloc(sizeof(llama_token) * (size_t) (n_prompt > 0 ? n_prompt : 1));
    if (n_prompt <= 0 || llama_tokenize(vocab, prompt, (int32_t) strlen(prompt), tokens, n_prompt, true, true) < 0) {
        fprintf(stderr, "error: failed to tokenize the prompt\n");
        return 1;
    }

    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t) (n_prompt + n_predict);
    cparams.n_batch = (uint32_t) n_prompt;
    cparams.no_perf = false;
    struct llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == NULL) {
        fprintf(stderr, "error: failed to create the context\n");
        return 1;
    }
    struct llama_sampler_chain_params sparams = llama_sampler_chain_default_params();
    sparams.no_perf = false;
    struct llama_sampler * smpl = llama_sampler_chain_init(sparams);
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());

    // --- print the prompt token by token
    char buf[256];
    if (print_ids) {
        printf("prompt:");
        for (int i = 0; i < n_prompt; i++) {
            printf(" %d", tokens[i]);
        }
        printf("\ngenerated:");
    }
    for (int i = 0; i < n_prompt && !print_ids; i++) {
        int n = llama_token_to_piece(vocab, tokens[i], buf, sizeof(buf), 0, true);
        if (n < 0) {
            fprintf(stderr, "error: failed to convert token to piece\n");
            return 1;
        }
        fwrite(buf, 1, (size_t) n, stdout);
    }

    // --- decode the prompt, then one token at a time
    struct llama_batch batch = llama_batch_get_one(tokens, n_prompt);
    const int64_t t_start = ggml_time_us();
    int n_decoded = 0;
    llama_token next;
    for (int n_pos = 0; n_pos + batch.n_tokens < n_prompt + n_predict;) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "error: llama_decode failed\n");
            return 1;
        }
        n_pos += batch.n_tokens;
        next = llama_sampler_sample(smpl, ctx, -1);
        if (llama_vocab_is_eog(vocab, next)) {
            break;
        }
        if (print_ids) {
            printf(" %d", next);
        } else {
            int n = llama_token_to_piece(vocab, next, buf, sizeof(buf), 0, true);
            if (n < 0) {
                fprintf(stderr, "error: failed to convert token to piece\n");
                return 1;
            }
            fwrite(buf, 1, (size_t) n, stdout);
        }
        fflush(stdout);
        batch = llama_batch_get_one(&next, 1);
        n_decoded++;
    }
    // the text's last line is out before the timing line on stderr, also
    // when both go to one pipe or file
    printf("\n");
    fflush(stdout);
    const double secs = (double) (ggml_time_us() - t_start) / 1e6;
    fprintf(stderr, "decoded %d tokens in %.2f s, speed: %.2f t/s\n", n_decoded, secs, n_decoded / secs);
    llama_perf_sampler_print(smpl);
    llama_perf_context_print(ctx);

    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    free(tokens);
    llama_backend_free();
    return 0;
}
