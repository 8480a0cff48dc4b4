// Teacher forcing through the C API: decodes a fixed token sequence and
// writes the logits of every position. Compiled once against llama.h, it
// runs on minfer or on the reference library (pick with LD_LIBRARY_PATH).
//
// usage: logits MODEL.gguf TOKENS.txt OUT.bin [N_UBATCH] [N_THREADS] [N_CHUNK] [FLASH_ATTN]
//   TOKENS.txt: token ids separated by white space.
//   OUT.bin: int32 n_tokens, int32 n_vocab, then n_tokens*n_vocab float32.
//   N_CHUNK: tokens per llama_decode call (default or 0: all at once).
//   FLASH_ATTN: flash_attn_type, -1 AUTO (the default), 0 DISABLED, 1 ENABLED.
//   LOGITS_KV_F32=1 in the environment: an f32 K/V cache (default f16).
//   LOGITS_LORA="ADAPTER.gguf:SCALE[,ADAPTER.gguf:SCALE...]": LoRA adapters
//   (llama_adapter_lora_init, llama_set_adapters_lora) before decoding.
#include "llama.h"
#include "teacher.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

// Position pos's input: its token id.
static int fill_token(struct llama_batch * batch, int i, int pos, void * ud) {
    batch->token[i] = ((const llama_token *) ud)[pos];
    return 0;
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf TOKENS.txt OUT.bin [N_UBATCH] [N_THREADS] [N_CHUNK] [FLASH_ATTN]\n", argv[0]);
        return 2;
    }
    int n_ubatch = argc > 4 ? atoi(argv[4]) : 512;
    int n_threads = argc > 5 ? atoi(argv[5]) : 2;
    llama_log_set(teacher_quiet, NULL);
    llama_backend_init();

    int n = 0;
    llama_token * toks = teacher_read_tokens(argv[2], &n);
    if (!toks) { fprintf(stderr, "cannot open %s\n", argv[2]); return 1; }
    int n_chunk = argc > 6 && atoi(argv[6]) > 0 ? atoi(argv[6]) : n;

    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) n;
    cp.n_batch = (uint32_t) n_chunk;
    cp.n_ubatch = (uint32_t) n_ubatch;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    const char * kv_f32 = getenv("LOGITS_KV_F32");
    if (kv_f32 && atoi(kv_f32) == 1) {
        cp.type_k = GGML_TYPE_F32;
        cp.type_v = GGML_TYPE_F32;
    }
    // the caller's rope overrides, as "BASE SCALE TYPE ORIG_CTX" (0 / -1: the model's)
    const char * rope = getenv("LOGITS_ROPE");
    if (rope) {
        int type = -1;
        unsigned orig = 0;
        sscanf(rope, "%f %f %d %u", &cp.rope_freq_base, &cp.rope_freq_scale, &type, &orig);
        cp.rope_scaling_type = (enum llama_rope_scaling_type) type;
        cp.yarn_orig_ctx = orig;
    }
    if (argc > 7) cp.flash_attn_type = (enum llama_flash_attn_type) atoi(argv[7]);
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create a context\n"); return 1; }
    // a control vector, as "IL_START IL_END N_LAYERS [clear]": directions for
    // layers 1..N_LAYERS, 0.05 sin(0.37 i + 1) over the buffer; "clear" then
    // sets NULL (disabled)
    const char * cvec = getenv("LOGITS_CVEC");
    if (cvec) {
        int il_start = 0, il_end = 0, n_layers = 0;
        char clear[8] = "";
        sscanf(cvec, "%d %d %d %7s", &il_start, &il_end, &n_layers, clear);
        const int n_embd = llama_model_n_embd(model);
        size_t len = (size_t) n_layers * (size_t) n_embd;
        float * dir = malloc(len * sizeof(float));
        for (size_t i = 0; i < len; i++) dir[i] = 0.05f * sinf(0.37f * (float) i + 1.0f);
        if (llama_set_adapter_cvec(ctx, dir, len, n_embd, il_start, il_end) != 0) {
            fprintf(stderr, "llama_set_adapter_cvec failed\n");
            return 1;
        }
        if (strcmp(clear, "clear") == 0 && llama_set_adapter_cvec(ctx, NULL, 0, n_embd, 0, 0) != 0) {
            fprintf(stderr, "llama_set_adapter_cvec(NULL) failed\n");
            return 1;
        }
        free(dir);
    }

    // LoRA adapters, in the order given
    const char * lora = getenv("LOGITS_LORA");
    struct llama_adapter_lora * adapters[8];
    float scales[8];
    size_t n_adapters = 0;
    if (lora) {
        char list[4096];
        snprintf(list, sizeof list, "%s", lora);
        for (char * item = strtok(list, ","); item && n_adapters < 8; item = strtok(NULL, ",")) {
            char * colon = strrchr(item, ':');
            if (!colon) { fprintf(stderr, "LOGITS_LORA: want PATH:SCALE, got %s\n", item); return 1; }
            *colon = 0;
            adapters[n_adapters] = llama_adapter_lora_init(model, item);
            if (!adapters[n_adapters]) { fprintf(stderr, "cannot load the adapter %s\n", item); return 1; }
            scales[n_adapters++] = (float) atof(colon + 1);
        }
        if (llama_set_adapters_lora(ctx, adapters, n_adapters, scales) != 0) {
            fprintf(stderr, "llama_set_adapters_lora failed\n");
            return 1;
        }
    }

    struct llama_batch batch = llama_batch_init(n_chunk, 0, 1);
    if (teacher_decode(ctx, batch, n, n_chunk, n_vocab, argv[3], fill_token, toks) != 0) return 1;
    llama_batch_free(batch);
    llama_free(ctx);
    for (size_t i = 0; i < n_adapters; i++) llama_adapter_lora_free(adapters[i]);
    llama_model_free(model);
    free(toks);
    return 0;
}
