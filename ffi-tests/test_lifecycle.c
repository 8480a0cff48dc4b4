// Handle lifetimes: a model is reference counted by the contexts made from
// it, so freeing the model first is safe and logged, the context keeps
// working, and the model's memory goes with the last context (valgrind
// checks that nothing leaks and nothing is used after it is freed).
// Also: context parameters resolve as the reference's do, and bad ones are
// refused with a message.
//
// usage: test_lifecycle MODEL.gguf
#include "test_util.h"

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(capture_log, NULL);
    llama_backend_init();

    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    CHECK(model != NULL, "load: %s", g_log);
    if (!model) return finish("lifecycle");
    int n_embd = llama_model_n_embd(model);

    struct llama_context_params cp = llama_context_default_params();
    struct llama_context * a = llama_init_from_model(model, cp);
    cp.n_ctx = 1000;
    cp.n_batch = 64;
    cp.n_ubatch = 0;
    struct llama_context * b = llama_init_from_model(model, cp);
    CHECK(a && b, "two contexts: %s", g_log);
    if (!a || !b) return finish("lifecycle");

    // Defaults: n_ctx 512, n_batch = min(n_ctx, 2048), n_ubatch 512.
    CHECK(llama_n_ctx(a) == 512 && llama_n_batch(a) == 512 && llama_n_ubatch(a) == 512, "defaults resolve");
    CHECK(llama_n_seq_max(a) == 1 && llama_n_ctx_seq(a) == 512, "seq params");
    // n_ctx padded to 256, n_ubatch 0 means n_batch.
    CHECK(llama_n_ctx(b) == 1024 && llama_n_batch(b) == 64 && llama_n_ubatch(b) == 64, "n_ctx %u n_batch %u n_ubatch %u",
          llama_n_ctx(b), llama_n_batch(b), llama_n_ubatch(b));
    CHECK(llama_n_threads(a) == 4 && llama_n_threads_batch(a) == 4, "threads");
    llama_set_n_threads(a, 2, 3);
    CHECK(llama_n_threads(a) == 2 && llama_n_threads_batch(a) == 3, "set_n_threads");
    log_clear();
    llama_set_n_threads(a, 0, 3);
    CHECK(llama_n_threads(a) == 2 && log_has("n_threads"), "bad thread count refused: %s", g_log);
    CHECK(llama_get_model(a) == model, "llama_get_model returns the handle");

    // Free the model while both contexts live: logged, contexts still work.
    log_clear();
    llama_model_free(model);
    CHECK(log_has("still use this model"), "free while in use is logged: %s", g_log);
    const struct llama_model * m = llama_get_model(a);
    CHECK(m != NULL && llama_model_n_embd(m) == n_embd, "the model lives on through its contexts");
    char desc[128];
    CHECK(llama_model_desc(m, desc, sizeof(desc)) > 0, "metadata still readable");

    llama_free(a);
    CHECK(llama_model_n_embd(llama_get_model(b)) == n_embd, "still alive with one context");
    log_clear();
    llama_free(b);
    CHECK(log_has("releasing the model"), "the last context releases the model: %s", g_log);

    // Bad context parameters are refused with a message, and the model is
    // left intact.
    model = llama_model_load_from_file(argv[1], llama_model_default_params());
    CHECK(model != NULL, "reload");
    struct { const char * what; struct llama_context_params p; const char * msg; } bad[4];
    for (int i = 0; i < 4; i++) bad[i].p = llama_context_default_params();
    bad[0].what = "n_batch and n_ubatch 0"; bad[0].p.n_batch = 0; bad[0].p.n_ubatch = 0; bad[0].msg = "n_batch";
    bad[1].what = "n_seq_max 257"; bad[1].p.n_seq_max = 257; bad[1].msg = "n_seq_max";
    bad[2].what = "n_threads -1"; bad[2].p.n_threads = -1; bad[2].msg = "n_threads";
    bad[3].what = "n_ctx huge"; bad[3].p.n_ctx = 0xFFFFFFFFu; bad[3].msg = "n_ctx";
    for (int i = 0; i < 4; i++) {
        log_clear();
        CHECK(llama_init_from_model(model, bad[i].p) == NULL, "%s refused", bad[i].what);
        CHECK(log_has(bad[i].msg), "%s: message %s", bad[i].what, g_log);
    }
    CHECK(llama_init_from_model(NULL, llama_context_default_params()) == NULL, "NULL model");
    CHECK(llama_model_n_embd(model) == n_embd, "model intact after refusals");

    // A vocab_only model cannot make a context.
    struct llama_model_params vp = llama_model_default_params();
    vp.vocab_only = true;
    struct llama_model * v = llama_model_load_from_file(argv[1], vp);
    log_clear();
    CHECK(v && llama_init_from_model(v, llama_context_default_params()) == NULL && log_has("vocab_only"),
          "vocab_only model refuses a context");
    llama_model_free(v);

    // Context getters on NULL.
    CHECK(llama_n_ctx(NULL) == 0 && llama_n_batch(NULL) == 0 && llama_get_model(NULL) == NULL, "NULL ctx");
    llama_free(NULL);
    llama_model_free(model);
    llama_backend_free();
    return finish("lifecycle");
}
