// LoRA adapters through the C API, on a synthetic llama and adapters that
// examples/synth_lora.rs writes: loading (by path and from a FILE*), the
// metadata and aLoRA getters, hostile adapter files refused with the
// reference's messages, llama_set_adapters_lora's rules (zero scales,
// repeats, clearing, misuse), the base weights shared unchanged between
// contexts with and without adapters, and the handles' lifetimes (an
// adapter freed while a context applies it, freed twice, freed with its
// model). Logits parity with the reference is the parity group's (logits.c's
// LOGITS_LORA).
//
// usage: test_lora DIR        (DIR: model.gguf, f16.gguf, q8.gguf, alora.gguf,
//                              bad-KIND.gguf of synth_lora's broken=KIND)
//        test_lora --dump MODEL ADAPTER   (the metadata as the getters give
//                              it, keys sorted: runs on either library)
#include "test_util.h"

#include <math.h>

static struct llama_model * g_model;
static int g_vocab;
static const llama_token TOKS[5] = {1, 57, 200, 13, 400};

static struct llama_context * new_ctx(struct llama_model * m) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 64;
    cp.n_batch = 16;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    return llama_init_from_model(m, cp);
}

// The last token's logits of TOKS decoded from an empty cache, into out.
static int run(struct llama_context * ctx, float * out) {
    llama_memory_clear(llama_get_memory(ctx), true);
    llama_token toks[5];
    memcpy(toks, TOKS, sizeof toks);
    if (llama_decode(ctx, llama_batch_get_one(toks, 5)) != 0) return -1;
    memcpy(out, llama_get_logits_ith(ctx, -1), sizeof(float) * (size_t) g_vocab);
    return 0;
}

static int same(const float * a, const float * b) {
    return memcmp(a, b, sizeof(float) * (size_t) g_vocab) == 0;
}

static int set1(struct llama_context * ctx, struct llama_adapter_lora * a, float scale) {
    return llama_set_adapters_lora(ctx, &a, 1, &scale);
}

static int cmp_str(const void * a, const void * b) {
    return strcmp(*(char * const *) a, *(char * const *) b);
}

// --dump: count, sorted "key = value" lines (by index and by key), aLoRA
// tokens, a missing key, a short buffer
static int dump(const char * model_path, const char * adapter_path) {
    llama_log_set(capture_log, NULL);
    struct llama_model * m = llama_model_load_from_file(model_path, llama_model_default_params());
    struct llama_adapter_lora * a = m ? llama_adapter_lora_init(m, adapter_path) : NULL;
    if (!a) { fprintf(stderr, "cannot load: %s\n", g_log); return 1; }
    int n = llama_adapter_meta_count(a);
    printf("count %d\n", n);
    char ** lines = (char **) calloc((size_t) n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        char k[256], v[256], byk[256];
        int kl = llama_adapter_meta_key_by_index(a, i, k, sizeof k);
        int vl = llama_adapter_meta_val_str_by_index(a, i, v, sizeof v);
        int bl = llama_adapter_meta_val_str(a, k, byk, sizeof byk);
        lines[i] = (char *) malloc(1024);
        snprintf(lines[i], 1024, "%s = %s (%d %d; by key: %d %s)", k, v, kl, vl, bl, byk);
    }
    qsort(lines, (size_t) n, sizeof(char *), cmp_str);
    for (int i = 0; i < n; i++) {
        printf("%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    char buf[8] = "xxxxxxx";
    printf("missing key: %d '%s'\n", llama_adapter_meta_val_str(a, "no.such.key", buf, sizeof buf), buf);
    printf("short buffer: %d '%s'\n", llama_adapter_meta_val_str(a, "general.architecture", buf, 4), buf);
    printf("index -1: %d, index %d: %d\n", llama_adapter_meta_key_by_index(a, -1, buf, sizeof buf), n,
           llama_adapter_meta_val_str_by_index(a, n, buf, sizeof buf));
    uint64_t nt = llama_adapter_get_alora_n_invocation_tokens(a);
    const llama_token * t = llama_adapter_get_alora_invocation_tokens(a);
    printf("alora tokens: %llu:", (unsigned long long) nt);
    for (uint64_t i = 0; i < nt; i++) printf(" %d", t[i]);
    printf("\n");
    llama_adapter_lora_free(a);
    llama_model_free(m);
    return 0;
}

int main(int argc, char ** argv) {
    if (argc == 4 && strcmp(argv[1], "--dump") == 0) return dump(argv[2], argv[3]);
    if (argc < 2) { fprintf(stderr, "usage: %s DIR | --dump MODEL ADAPTER\n", argv[0]); return 2; }
    const char * dir = argv[1];
    llama_log_set(capture_log, NULL);
    llama_backend_init();
    g_model = llama_model_load_from_file(path_in(dir, "model.gguf"), llama_model_default_params());
    CHECK(g_model != NULL, "load: %s", g_log);
    if (!g_model) return finish("lora");
    g_vocab = llama_vocab_n_tokens(llama_model_get_vocab(g_model));
    float * base = malloc(sizeof(float) * (size_t) g_vocab);
    float * with = malloc(sizeof(float) * (size_t) g_vocab);
    float * got = malloc(sizeof(float) * (size_t) g_vocab);

    // --- loading
    struct llama_adapter_lora * f16 = llama_adapter_lora_init(g_model, path_in(dir, "f16.gguf"));
    struct llama_adapter_lora * q8 = llama_adapter_lora_init(g_model, path_in(dir, "q8.gguf"));
    struct llama_adapter_lora * alora = llama_adapter_lora_init(g_model, path_in(dir, "alora.gguf"));
    CHECK(f16 && q8 && alora, "adapters load: %s", g_log);
    if (!f16 || !q8 || !alora) return finish("lora");

    // --- metadata: every pair by index equals the lookup by key
    char k[128], v[128], v2[128];
    int n = llama_adapter_meta_count(f16);
    CHECK(n == 5, "5 scalar pairs (type, architecture, name, adapter type, alpha), got %d", n);
    int consistent = 1;
    for (int i = 0; i < n; i++) {
        int kl = llama_adapter_meta_key_by_index(f16, i, k, sizeof k);
        int vl = llama_adapter_meta_val_str_by_index(f16, i, v, sizeof v);
        int bl = llama_adapter_meta_val_str(f16, k, v2, sizeof v2);
        consistent &= kl == (int) strlen(k) && vl == (int) strlen(v) && bl == vl && strcmp(v, v2) == 0;
    }
    CHECK(consistent, "pairs by index equal lookups by key");
    CHECK(llama_adapter_meta_val_str(f16, "adapter.type", v, sizeof v) == 4 && strcmp(v, "lora") == 0, "adapter.type: %s", v);
    CHECK(llama_adapter_meta_val_str(f16, "adapter.lora.alpha", v, sizeof v) > 0 && strcmp(v, "16.000000") == 0,
          "alpha as std::to_string gives it: %s", v);
    CHECK(llama_adapter_meta_val_str(f16, "general.architecture", v, 3) == 5 && strcmp(v, "ll") == 0,
          "a short buffer: truncated, the full length returned (%s)", v);
    strcpy(v, "x");
    CHECK(llama_adapter_meta_val_str(f16, "nope", v, sizeof v) == -1 && v[0] == 0, "a missing key: -1, buffer cleared");
    strcpy(v, "x");
    CHECK(llama_adapter_meta_key_by_index(f16, n, v, sizeof v) == -1 && v[0] == 0, "index out of range: -1, cleared");
    CHECK(llama_adapter_meta_val_str_by_index(f16, -1, v, sizeof v) == -1, "negative index: -1");

    // --- aLoRA invocation tokens
    CHECK(llama_adapter_get_alora_n_invocation_tokens(f16) == 0 && llama_adapter_get_alora_invocation_tokens(f16) == NULL,
          "a plain LoRA has no invocation tokens");
    const llama_token * inv = llama_adapter_get_alora_invocation_tokens(alora);
    CHECK(llama_adapter_get_alora_n_invocation_tokens(alora) == 3 && inv && inv[0] == 7 && inv[1] == 8 && inv[2] == 9,
          "aLoRA invocation tokens 7 8 9");
    CHECK(llama_adapter_get_alora_n_invocation_tokens(NULL) == 0, "NULL: 0 tokens");
    CHECK(llama_adapter_get_alora_invocation_tokens(NULL) == NULL, "NULL: no tokens");

    // --- hostile and mismatched files: NULL with the reference's message
    struct { const char * file, * msg; } bad[] = {
        {"bad-type.gguf", "expect general.type to be 'adapter', but got: model"},
        {"bad-adapter_type.gguf", "expect adapter.type to be 'lora', but got: control_vector"},
        {"bad-arch.gguf", "model arch and LoRA arch mismatch"},
        {"bad-alpha_type.gguf", "adapter.lora.alpha"},
        {"bad-alora_type.gguf", "invalid gguf element type for adapter.alora.invocation_tokens"},
        {"bad-suffix.gguf", "LoRA tensor 'blk.0.attn_q.weight.lora_c' has unexpected suffix"},
        {"bad-missing_b.gguf", "LoRA tensor pair for 'blk.0.attn_q.weight' is missing one component"},
        {"bad-unknown.gguf", "LoRA tensor 'blk.99.attn_q.weight' does not exist in base model"},
        {"bad-shape.gguf", "tensor 'blk.0.attn_q.weight' has incorrect shape"},
        {"bad-transposed.gguf", "lora_a tensor is not transposed"},
        {"bad-truncated.gguf", "past the end of the file"},
        {"no-such-file.gguf", "No such file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        log_clear();
        struct llama_adapter_lora * a = llama_adapter_lora_init(g_model, path_in(dir, bad[i].file));
        CHECK(a == NULL && log_has(bad[i].msg), "%s refused with \"%s\": %s", bad[i].file, bad[i].msg, g_log);
        if (a) llama_adapter_lora_free(a);
    }
    CHECK(llama_adapter_lora_init(NULL, path_in(dir, "f16.gguf")) == NULL, "NULL model");
    CHECK(llama_adapter_lora_init(g_model, NULL) == NULL, "NULL path");
    CHECK(llama_adapter_lora_init_from_file_ptr(g_model, NULL) == NULL, "NULL FILE*");

    // --- contexts: one without adapters, one with
    struct llama_context * plain = new_ctx(g_model);
    struct llama_context * ctx = new_ctx(g_model);
    CHECK(run(plain, base) == 0, "decode without adapters: %s", g_log);
    CHECK(set1(ctx, f16, 1.0f) == 0, "set one adapter: %s", g_log);
    CHECK(run(ctx, with) == 0, "decode with an adapter: %s", g_log);
    CHECK(!same(base, with), "the adapter changes the logits");
    CHECK(run(plain, got) == 0 && same(got, base), "a context without adapters keeps the base logits (the weights are shared, unchanged)");
    // from a FILE* (read from its position: here the start)
    FILE * fp = fopen(path_in(dir, "f16.gguf"), "rb");
    struct llama_adapter_lora * f16b = fp ? llama_adapter_lora_init_from_file_ptr(g_model, fp) : NULL;
    if (fp) fclose(fp);
    CHECK(f16b != NULL, "load from a FILE*: %s", g_log);
    CHECK(set1(ctx, f16b, 1.0f) == 0 && run(ctx, got) == 0 && same(got, with), "the FILE*'s adapter gives the same logits");
    llama_adapter_lora_free(f16b);
    // scale 0 is no adapter; clearing restores the base
    CHECK(set1(ctx, f16, 0.0f) == 0 && run(ctx, got) == 0 && same(got, base), "scale 0: the base logits");
    CHECK(set1(ctx, f16, 1.0f) == 0 && llama_set_adapters_lora(ctx, NULL, 0, NULL) == 0 && run(ctx, got) == 0 && same(got, base),
          "cleared with (NULL, 0, NULL): the base logits");
    // a repeated adapter keeps its first scale (the reference's map insert)
    {
        struct llama_adapter_lora * twice[2] = {f16, f16};
        float sc[2] = {1.0f, 0.5f};
        CHECK(llama_set_adapters_lora(ctx, twice, 2, sc) == 0 && run(ctx, got) == 0 && same(got, with),
              "the same adapter twice: applied once, at its first scale");
    }
    // scale 2 differs from 1; two adapters differ from one
    CHECK(set1(ctx, f16, 2.0f) == 0 && run(ctx, got) == 0 && !same(got, with), "the scale matters");
    {
        struct llama_adapter_lora * two[2] = {f16, q8};
        float sc[2] = {1.0f, 0.5f};
        CHECK(llama_set_adapters_lora(ctx, two, 2, sc) == 0 && run(ctx, got) == 0 && !same(got, with), "two adapters");
    }

    // --- misuse: refused, the context's adapters unchanged
    CHECK(set1(ctx, f16, 1.0f) == 0, "set");
    float one = 1.0f;
    CHECK(llama_set_adapters_lora(NULL, &f16, 1, &one) == -1, "NULL context");
    CHECK(llama_set_adapters_lora(ctx, NULL, 1, &one) == -1, "NULL adapters with n 1");
    CHECK(llama_set_adapters_lora(ctx, &f16, 1, NULL) == -1, "NULL scales with n 1");
    struct llama_adapter_lora * null_adapter = NULL;
    CHECK(llama_set_adapters_lora(ctx, &null_adapter, 1, &one) == -1, "a NULL adapter");
    struct llama_model * other = llama_model_load_from_file(path_in(dir, "model.gguf"), llama_model_default_params());
    struct llama_adapter_lora * other_a = other ? llama_adapter_lora_init(other, path_in(dir, "q8.gguf")) : NULL;
    CHECK(other_a != NULL, "an adapter for a second model: %s", g_log);
    log_clear();
    CHECK(set1(ctx, other_a, 1.0f) == -1 && log_has("another model"), "an adapter of another model refused: %s", g_log);
    CHECK(run(ctx, got) == 0 && same(got, with), "after the refusals the context applies what it had");
    CHECK(llama_adapter_meta_count(NULL) == -1, "meta_count(NULL) = -1");

    // --- lifetimes
    // the second model's adapter goes with its model; freeing it after is refused
    llama_model_free(other);
    log_clear();
    llama_adapter_lora_free(other_a);
    CHECK(log_has("not a live LoRA adapter"), "an adapter freed with its model: a later free is refused: %s", g_log);
    CHECK(llama_adapter_meta_count(other_a) == -1, "and a getter on it is refused");
    // an adapter freed while a context applies it: the context keeps it
    llama_adapter_lora_free(f16);
    CHECK(run(ctx, got) == 0 && same(got, with), "the context still applies an adapter freed under it");
    CHECK(set1(ctx, f16, 1.0f) == -1, "a freed adapter cannot be set");
    log_clear();
    llama_adapter_lora_free(f16);
    CHECK(log_has("not a live LoRA adapter"), "freed twice: refused: %s", g_log);
    llama_adapter_lora_free(NULL);

    llama_free(plain);
    llama_free(ctx);
    // q8 and alora are left to the model (llama.h: freed with it); valgrind
    // sees no leak
    llama_model_free(g_model);
    free(base);
    free(with);
    free(got);
    return finish("lora");
}
