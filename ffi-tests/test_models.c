// The real models through the C API: metadata reads back with the buffer
// conventions of llama.h (snprintf-style truncation, -1 and a cleared buffer
// for a missing key or an index out of range), kv overrides change the
// hyperparameters, the progress callback sees the load and can cancel it,
// and vocab_only loads.
//
// usage: test_models SMOLLM2.gguf GEMMA3.gguf
#include "test_util.h"

static int g_progress_calls = 0;
static float g_last_progress = -1.0f;

static bool count_progress(float p, void * ud) {
    (void) ud;
    g_progress_calls++;
    CHECK(p >= g_last_progress && p >= 0.0f && p <= 1.0f, "progress %f after %f", p, g_last_progress);
    g_last_progress = p;
    return true;
}

static bool cancel_at_half(float p, void * ud) {
    ++*(int *) ud;
    return p < 0.5f;
}

static void check_meta_api(struct llama_model * m, const char * arch) {
    char buf[64];
    CHECK(llama_model_meta_val_str(m, "general.architecture", buf, sizeof(buf)) == (int) strlen(arch), "arch length");
    CHECK(strcmp(buf, arch) == 0, "arch = %s", buf);

    // Truncation: snprintf semantics, the full length is returned.
    char small[4];
    memset(small, 'x', sizeof(small));
    CHECK(llama_model_meta_val_str(m, "general.architecture", small, sizeof(small)) == (int) strlen(arch), "len");
    CHECK(small[3] == 0 && strncmp(small, arch, 3) == 0, "truncated and terminated");
    CHECK(llama_model_meta_val_str(m, "general.architecture", NULL, 0) == (int) strlen(arch), "size query");

    // A missing key: -1 and the buffer cleared.
    strcpy(buf, "junk");
    CHECK(llama_model_meta_val_str(m, "no.such.key", buf, sizeof(buf)) == -1 && buf[0] == 0, "missing key");
    CHECK(llama_model_meta_val_str(m, NULL, buf, sizeof(buf)) == -1, "NULL key");

    // Every index reads back, and agrees with the lookup by key.
    int n = llama_model_meta_count(m);
    CHECK(n > 10, "meta count %d", n);
    int agree = 0;
    for (int i = 0; i < n; i++) {
        char key[256], val[256], val2[256];
        llama_model_meta_key_by_index(m, i, key, sizeof(key));
        llama_model_meta_val_str_by_index(m, i, val, sizeof(val));
        llama_model_meta_val_str(m, key, val2, sizeof(val2));
        agree += strcmp(val, val2) == 0;
    }
    CHECK(agree == n, "%d of %d keys agree", agree, n);
    strcpy(buf, "junk");
    CHECK(llama_model_meta_key_by_index(m, n, buf, sizeof(buf)) == -1 && buf[0] == 0, "index n");
    CHECK(llama_model_meta_key_by_index(m, -1, buf, sizeof(buf)) == -1, "index -1");
    CHECK(llama_model_meta_val_str_by_index(m, n, buf, sizeof(buf)) == -1, "value index n");
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SMOLLM2.gguf GEMMA3.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(capture_log, NULL);
    llama_backend_init();

    // --- SmolLM2, with a progress callback
    struct llama_model_params mp = llama_model_default_params();
    mp.progress_callback = count_progress;
    struct llama_model * smol = llama_model_load_from_file(argv[1], mp);
    CHECK(smol != NULL, "SmolLM2 loads: %s", g_log);
    if (smol) {
        CHECK(g_progress_calls > 2 && g_last_progress == 1.0f, "progress called %d times, last %f", g_progress_calls,
              g_last_progress);
        check_meta_api(smol, "llama");
        char buf[64];
        llama_model_meta_val_str(smol, "tokenizer.ggml.model", buf, sizeof(buf));
        CHECK(strcmp(buf, "gpt2") == 0, "tokenizer model %s", buf);
        const char * tmpl = llama_model_chat_template(smol, NULL);
        CHECK(tmpl && strstr(tmpl, "<|im_start|>"), "chat template");
        CHECK(llama_model_chat_template(smol, "no-such-name") == NULL, "named template absent");
        CHECK(llama_model_n_embd(smol) == 576 && llama_model_n_layer(smol) == 30, "dims");
        CHECK(llama_vocab_n_tokens(llama_model_get_vocab(smol)) == 49152, "vocab size");
        CHECK(llama_model_rope_type(smol) == LLAMA_ROPE_TYPE_NORM, "rope type");
    }

    // --- kv overrides change what the loader reads
    struct llama_model_kv_override ov[3];
    memset(ov, 0, sizeof(ov));
    ov[0].tag = LLAMA_KV_OVERRIDE_TYPE_INT;
    strcpy(ov[0].key, "llama.context_length");
    ov[0].val_i64 = 1234;
    ov[1].tag = LLAMA_KV_OVERRIDE_TYPE_FLOAT;
    strcpy(ov[1].key, "llama.rope.scaling.factor");
    ov[1].val_f64 = 4.0;
    mp = llama_model_default_params();
    mp.kv_overrides = ov;
    struct llama_model * smol2 = llama_model_load_from_file(argv[1], mp);
    CHECK(smol2 != NULL, "loads with overrides");
    if (smol2) {
        CHECK(llama_model_n_ctx_train(smol2) == 1234, "override applied: %d", llama_model_n_ctx_train(smol2));
        CHECK(llama_model_rope_freq_scale_train(smol2) == 0.25f, "float override applied");
        llama_model_free(smol2);
    }
    ov[0].tag = (enum llama_model_kv_override_type) 77;
    log_clear();
    CHECK(llama_model_load_from_file(argv[1], mp) == NULL, "unknown override type rejected");
    CHECK(log_has("override"), "message: %s", g_log);

    // --- the progress callback cancels
    int calls = 0;
    mp = llama_model_default_params();
    mp.progress_callback = cancel_at_half;
    mp.progress_callback_user_data = &calls;
    log_clear();
    CHECK(llama_model_load_from_file(argv[1], mp) == NULL, "cancelled load gives NULL");
    CHECK(calls > 1 && log_has("cancelled"), "cancel logged after %d calls: %s", calls, g_log);

    // --- Gemma 3
    struct llama_model * gemma = llama_model_load_from_file(argv[2], llama_model_default_params());
    CHECK(gemma != NULL, "Gemma 3 loads: %s", g_log);
    if (gemma) {
        check_meta_api(gemma, "gemma3");
        char buf[64];
        llama_model_meta_val_str(gemma, "tokenizer.ggml.model", buf, sizeof(buf));
        CHECK(strcmp(buf, "llama") == 0, "tokenizer model %s", buf);
        CHECK(llama_model_n_swa(gemma) == 512 && llama_model_n_head_kv(gemma) == 1, "gemma hparams");
        CHECK(llama_model_rope_type(gemma) == LLAMA_ROPE_TYPE_NEOX, "rope type");
        llama_model_free(gemma);
    }

    // --- load from an open FILE*, at offset 0
    FILE * f = fopen(argv[1], "rb");
    CHECK(f != NULL, "fopen");
    if (f) {
        struct llama_model * m = llama_model_load_from_file_ptr(f, llama_model_default_params());
        CHECK(m != NULL && llama_model_n_embd(m) == 576, "load_from_file_ptr");
        llama_model_free(m);
        fclose(f);
    }

    // --- load from splits (a single part)
    const char * parts[1] = {argv[1]};
    struct llama_model * m1 = llama_model_load_from_splits(parts, 1, llama_model_default_params());
    CHECK(m1 != NULL, "load_from_splits with one part");
    llama_model_free(m1);
    CHECK(llama_model_load_from_splits(NULL, 1, llama_model_default_params()) == NULL, "NULL paths");
    CHECK(llama_model_load_from_splits(parts, 0, llama_model_default_params()) == NULL, "0 paths");

    // --- vocab_only
    mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model * v = llama_model_load_from_file(argv[2], mp);
    CHECK(v != NULL && llama_vocab_n_tokens(llama_model_get_vocab(v)) == 262144, "vocab_only load");
    llama_model_free(v);

    // --- NULL handles on every getter return the failure value
    CHECK(llama_model_desc(NULL, NULL, 0) == -1 && llama_model_meta_count(NULL) == -1, "NULL model");
    CHECK(llama_model_size(NULL) == 0 && llama_model_n_params(NULL) == 0, "NULL model sizes");
    CHECK(llama_model_chat_template(NULL, NULL) == NULL && llama_model_get_vocab(NULL) == NULL, "NULL model ptrs");
    CHECK(llama_vocab_n_tokens(NULL) == -1, "NULL vocab");

    llama_model_free(smol);
    llama_model_free(NULL);
    llama_backend_free();
    return finish("models");
}
