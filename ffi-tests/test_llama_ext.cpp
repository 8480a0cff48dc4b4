// The C++ staging API of llama.cpp's src/llama-ext.h (compat/llama-ext.cpp,
// libllama-ext.so) on real models.
//
//   test_llama_ext MODEL...             prints what the functions return; the same
//                                       program linked to the reference library
//                                       (LD_LIBRARY_PATH=<its lib dir>, which defines
//                                       them itself) printed golden/llama_ext.txt
//   test_llama_ext --minfer MODEL...    checks the calls the reference cannot make
//                                       without aborting (per-layer input embeddings
//                                       that were never requested) and the refusals
//                                       of minfer's compat library; ends with
//                                       "test_llama_ext: N passed, M failed"
//
// Built against minfer's include/llama.h and the reference's src/llama-ext.h:
//   g++ -std=c++17 -Iinclude -I<llama.cpp>/src ffi-tests/test_llama_ext.cpp -L... -lllama -lllama-ext
// (libllama before libllama-ext: with the reference's library first in
// LD_LIBRARY_PATH, its own definitions are the ones called).
#include "llama.h"
#ifndef LLAMA_API
#define LLAMA_API
#endif
#include "llama-ext.h"

#include <cstdio>
#include <cstring>
#include <string>

static int n_pass = 0, n_fail = 0;

static void check(bool cond, const char * what) {
    if (cond) {
        n_pass++;
        printf("ok   %s\n", what);
    } else {
        n_fail++;
        printf("FAIL %s\n", what);
    }
}

// keeps the library's messages (model loading, our refusals) out of stdout
static std::string g_log;
static void quiet_log(ggml_log_level, const char * text, void *) {
    g_log += text;
}

int main(int argc, char ** argv) {
    int first = 1;
    const bool minfer_only = argc > 1 && strcmp(argv[1], "--minfer") == 0;
    if (minfer_only) {
        first = 2;
    }
    if (argc <= first) {
        fprintf(stderr, "usage: %s [--minfer] MODEL...\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();

    for (int a = first; a < argc; a++) {
        const char * base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        llama_model_params mp = llama_model_default_params();
        llama_model * model = llama_model_load_from_file(argv[a], mp);
        if (!model) {
            printf("FAIL %s: load\n", base);
            n_fail++;
            continue;
        }
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 256;
        llama_context * ctx = llama_init_from_model(model, cp);
        if (!ctx) {
            printf("FAIL %s: context\n", base);
            n_fail++;
            llama_model_free(model);
            continue;
        }
        const llama_vocab * vocab = llama_model_get_vocab(model);
        const uint32_t n_tok_embd = (uint32_t) llama_vocab_n_tokens(vocab) * (uint32_t) llama_model_n_embd(model);

        if (!minfer_only) {
            printf("%s: n_expert %d, n_devices %d, get_device(0) %s, get_device(-1) %s\n", base,
                   llama_model_n_expert(model), llama_model_n_devices(model),
                   llama_model_get_device(model, 0) ? "non-null" : "null",
                   llama_model_get_device(model, -1) ? "non-null" : "null");
            printf("%s: dflash_selector_top_k %d, target_layer_ids %s, target_layer_ids_n %u\n", base,
                   llama_model_dflash_selector_top_k(model),
                   llama_model_target_layer_ids(model) ? "non-null" : "null",
                   llama_model_target_layer_ids_n(model));
            printf("%s: get_tok_embd(NULL) is n_vocab*n_embd: %s\n", base,
                   llama_model_get_tok_embd(model, nullptr) == n_tok_embd ? "yes" : "no");
            printf("%s: ctx_other %s, embeddings_nextn %s\n", base,
                   llama_get_ctx_other(ctx) ? "non-null" : "null",
                   llama_get_embeddings_nextn(ctx) ? "non-null" : "null");
            // nothing enabled, one decode: still no NextN embeddings
            llama_set_embeddings_nextn(ctx, false, true);
            llama_set_nextn_layer_offset(ctx, 0);
            llama_token tok = llama_vocab_bos(vocab) >= 0 ? llama_vocab_bos(vocab) : 0;
            llama_batch batch = llama_batch_get_one(&tok, 1);
            const int rc = llama_decode(ctx, batch);
            printf("%s: decode %d, embeddings_nextn %s, embeddings_nextn_ith(0) %s\n", base, rc,
                   llama_get_embeddings_nextn(ctx) ? "non-null" : "null",
                   llama_get_embeddings_nextn_ith(ctx, 0) ? "non-null" : "null");
        } else {
            g_log.clear();
            check(llama_get_embeddings_layer_inp(ctx, 0) == nullptr && g_log.find("layer 0") != std::string::npos,
                  "get_embeddings_layer_inp without a request: NULL and a message");
            g_log.clear();
            llama_set_embeddings_layer_inp(ctx, 1, true);
            check(g_log.find("per-layer input embeddings") != std::string::npos,
                  "set_embeddings_layer_inp(true) is refused with a message");
            g_log.clear();
            llama_set_embeddings_nextn(ctx, true, false);
            check(g_log.find("NextN") != std::string::npos, "set_embeddings_nextn(true) is refused with a message");
            g_log.clear();
            llama_set_nextn_layer_offset(ctx, 2);
            check(g_log.find("offset 2") != std::string::npos, "set_nextn_layer_offset(2) is refused with a message");
            float one[4];
            g_log.clear();
            check(llama_model_get_tok_embd(model, one) == 0 && g_log.find("not implemented yet") != std::string::npos,
                  "get_tok_embd(out): 0 and a message");
            check(llama_model_get_tok_embd(nullptr, nullptr) == 0 && llama_model_n_expert(nullptr) == 0
                      && llama_get_memory_breakdown(nullptr).empty(),
                  "NULL handles give the failure values");
            // ggml is not in this process: no CPU buffer type to key an entry with
            check(llama_get_memory_breakdown(ctx).empty(), "memory breakdown without libggml-cpu: empty");
        }
        llama_free(ctx);
        llama_model_free(model);
    }
    llama_backend_free();
    if (minfer_only) {
        printf("test_llama_ext: %d passed, %d failed\n", n_pass, n_fail);
    }
    return n_fail ? 1 : 0;
}
