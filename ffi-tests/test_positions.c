// Learned position embeddings (gpt2): a token at a position past the
// model's n_ctx_train rows has no embedding. The decode fails with a clear
// error (the reference's get_rows would read past the tensor), the failed
// ubatch leaves the cache, and the context decodes on.
// usage: test_positions GPT2_MODEL.gguf   (n_ctx_train 512)
#include "test_util.h"

static int decode_at(struct llama_context * ctx, llama_pos p0, int n) {
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = 3 + i % 50;
        b.pos[i] = p0 + i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = i == n - 1;
    }
    b.n_tokens = n;
    int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    return rc;
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s GPT2_MODEL.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(capture_log, NULL);
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    CHECK(model != NULL, "load %s", argv[1]);
    if (!model) return 1;
    CHECK(llama_model_n_ctx_train(model) == 512, "n_ctx_train %d", llama_model_n_ctx_train(model));
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 1024;
    cp.n_batch = 1024;
    cp.n_ubatch = 1024;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    CHECK(ctx != NULL, "context");
    if (!ctx) return 1;
    llama_memory_t mem = llama_get_memory(ctx);

    CHECK(decode_at(ctx, 0, 500) == 0, "500 tokens from position 0");
    CHECK(llama_memory_seq_pos_max(mem, 0) == 499, "pos max %d", llama_memory_seq_pos_max(mem, 0));
    log_clear();
    // positions 500..519: the last 8 have no embedding
    CHECK(decode_at(ctx, 500, 20) != 0, "a decode past n_ctx_train fails");
    CHECK(log_has("outside the model's 512 learned positions"), "the log says why: %s", g_log);
    CHECK(llama_memory_seq_pos_max(mem, 0) == 499, "the failed ubatch left the cache (pos max %d)",
          llama_memory_seq_pos_max(mem, 0));
    CHECK(decode_at(ctx, 500, 12) == 0, "the context decodes on, up to the last position");
    CHECK(llama_memory_seq_pos_max(mem, 0) == 511, "pos max %d", llama_memory_seq_pos_max(mem, 0));
    CHECK(llama_get_logits_ith(ctx, -1) != NULL, "logits of the last token");

    llama_free(ctx);
    llama_model_free(model);
    printf("test_positions: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail != 0;
}
