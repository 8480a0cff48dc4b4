// A decode of a mixture-of-experts model multiplies by the chosen experts
// only: the weight bytes the matmuls are given (the test-only counter,
// minfer_test_weight_bytes) for each one-token decode equal the model's
// active-parameter bytes, ACTIVE (ffi-tests/moe_bytes.py: each expert tensor
// at expert_used_count / expert_count), well under ALL (every expert).
//
// usage: test_moe_bytes MODEL.gguf ACTIVE ALL
#include "test_util.h"

#include <inttypes.h>
#include <stdint.h>

uint64_t minfer_test_weight_bytes(void);  // test-hooks build only

int main(int argc, char ** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf ACTIVE ALL\n", argv[0]);
        return 2;
    }
    const uint64_t active = strtoull(argv[2], NULL, 10), all = strtoull(argv[3], NULL, 10);
    llama_backend_init();
    llama_log_set(capture_log, NULL);
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    CHECK(model != NULL, "load %s", argv[1]);
    if (!model) return 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 64;
    cp.n_threads = cp.n_threads_batch = 2;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    CHECK(ctx != NULL, "context");
    if (!ctx) return 1;
    llama_token prompt[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(llama_decode(ctx, llama_batch_get_one(prompt, 8)) == 0, "prompt decode");
    uint64_t prefill = minfer_test_weight_bytes();
    CHECK(prefill >= active && prefill <= all, "an 8-token prefill multiplies by at most every expert once: %" PRIu64
          " bytes (active %" PRIu64 ", all %" PRIu64 ")", prefill, active, all);
    for (int i = 0; i < 4; i++) {
        llama_token t = 9 + i;
        CHECK(llama_decode(ctx, llama_batch_get_one(&t, 1)) == 0, "decode %d", i);
        uint64_t got = minfer_test_weight_bytes();
        CHECK(got == active, "decode %d: %" PRIu64 " weight bytes, want the active %" PRIu64, i, got, active);
        if (i == 0) {
            printf("one-token decode: %" PRIu64 " weight bytes (active parameters %" PRIu64 ", all experts %" PRIu64
                   "; an 8-token prefill %" PRIu64 ")\n", got, active, all, prefill);
        }
    }
    CHECK(active < all, "the experts are a part of the model");
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return finish("moe_bytes");
}
