// llama_model_quantize and llama_model_save_to_file through the C API, on a
// small synthetic model: bad arguments fail with 1 (or, for the void saver,
// a message) and leave no file; the thread count does not change the bytes;
// a saved model loads back with the same logits and saves to the same bytes.
// (Byte equality with the reference's outputs is checked by run.sh against
// golden/quantize/SHA256SUMS.)
//
// usage: test_quantize MODEL.gguf DIR   (DIR: a scratch directory)
#include "test_util.h"

#include <sys/stat.h>

static char g_dir[1024];

static const char * path(const char * name) { return path_in(g_dir, name); }

static float * logits_of(struct llama_model * m) {
    llama_token toks[] = {1, 5, 9, 300};
    return last_logits(m, toks, (int) (sizeof toks / sizeof toks[0]));
}

static int exists(const char * p) {
    struct stat st;
    return stat(p, &st) == 0;
}

static long file_size(const char * p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long) st.st_size : -1;
}

// 1 when the two files have the same bytes.
static int same_bytes(const char * a, const char * b) {
    FILE * fa = fopen(a, "rb");
    FILE * fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static uint32_t quantize(const char * in, const char * out, enum llama_ftype ftype, int nthread) {
    struct llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = ftype;
    p.nthread = nthread;
    return llama_model_quantize(in, out, &p);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf DIR\n", argv[0]);
        return 2;
    }
    const char * model = argv[1];
    snprintf(g_dir, sizeof g_dir, "%s", argv[2]);
    llama_log_set(capture_log, NULL);
    struct llama_model_quantize_params p = llama_model_quantize_default_params();

    // --- bad arguments: 1, a message, no output
    log_clear();
    CHECK(llama_model_quantize(NULL, path("a.gguf"), &p) == 1 && log_has("fname_inp"), "NULL input: %s", g_log);
    log_clear();
    CHECK(llama_model_quantize(model, NULL, &p) == 1 && log_has("fname_out"), "NULL output: %s", g_log);
    log_clear();
    CHECK(llama_model_quantize(model, path("a.gguf"), NULL) == 1 && log_has("params"), "NULL params: %s", g_log);
    CHECK(!exists(path("a.gguf")), "no output after NULL params");
    log_clear();
    CHECK(quantize(path("no-such-model.gguf"), path("a.gguf"), LLAMA_FTYPE_MOSTLY_Q4_0, 2) == 1 && log_has("no-such-model.gguf"),
          "missing input: %s", g_log);
    CHECK(!exists(path("a.gguf")), "no output after a missing input");
    log_clear();
    CHECK(quantize(model, path("no-such-dir/a.gguf"), LLAMA_FTYPE_MOSTLY_Q4_0, 2) == 1 && log_has("no-such-dir/a.gguf"),
          "unwritable output: %s", g_log);
    log_clear();
    long size_before = file_size(model);
    CHECK(quantize(model, model, LLAMA_FTYPE_MOSTLY_Q4_0, 2) == 1 && log_has("is an input file"), "output = input: %s", g_log);
    CHECK(file_size(model) == size_before, "the input is left intact");
    log_clear();
    CHECK(quantize(model, path("a.gguf"), (enum llama_ftype) 999, 2) == 1 && log_has("invalid output file type 999"), "ftype 999: %s", g_log);
    log_clear();
    // rows of 64: every IQ2_XXS tensor falls back to a type that needs no
    // imatrix, so the reference quantizes without one, and so does minfer
    CHECK(quantize(model, path("a.gguf"), LLAMA_FTYPE_MOSTLY_IQ2_XXS, 2) == 0 && log_has("falling back"), "IQ2_XXS: %s", g_log);
    remove(path("a.gguf"));
    CHECK(quantize(model, path("q40.gguf"), LLAMA_FTYPE_MOSTLY_Q4_0, 2) == 0, "Q4_0");
    log_clear();
    CHECK(quantize(path("q40.gguf"), path("a.gguf"), LLAMA_FTYPE_MOSTLY_Q8_0, 2) == 1 && log_has("requantizing from type"),
          "requantizing without allow_requantize: %s", g_log);
    CHECK(!exists(path("a.gguf")), "no output after a refused requantization");
    log_clear();
    p.ftype = LLAMA_FTYPE_MOSTLY_Q4_0;
    p.output_tensor_type = (enum ggml_type) 4; // a removed ggml type
    CHECK(llama_model_quantize(model, path("a.gguf"), &p) == 1 && log_has("not a ggml type"), "removed type: %s", g_log);
    p = llama_model_quantize_default_params();
    float bad[1] = {0.0f / 0.0f};
    struct llama_model_imatrix_data imat[2] = {{"blk.0.attn_q.weight", bad, 1}, {NULL, NULL, 0}};
    p.imatrix = imat;
    log_clear();
    CHECK(llama_model_quantize(model, path("a.gguf"), &p) == 1 && log_has("non-finite"), "NaN imatrix: %s", g_log);
    p = llama_model_quantize_default_params();
    p.dry_run = true;
    CHECK(llama_model_quantize(model, path("dry.gguf"), &p) == 0 && !exists(path("dry.gguf")), "a dry run writes nothing");

    // --- the thread count does not change the bytes
    CHECK(quantize(model, path("t1.gguf"), LLAMA_FTYPE_MOSTLY_Q4_K_M, 1) == 0, "Q4_K_M, 1 thread");
    CHECK(quantize(model, path("t3.gguf"), LLAMA_FTYPE_MOSTLY_Q4_K_M, 3) == 0, "Q4_K_M, 3 threads");
    CHECK(same_bytes(path("t1.gguf"), path("t3.gguf")), "1 and 3 threads give the same file");
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model * q = llama_model_load_from_file(path("t1.gguf"), mp);
    CHECK(q != NULL, "the quantized model loads");
    char desc[128] = "";
    if (q) llama_model_desc(q, desc, sizeof desc);
    CHECK(strstr(desc, "Q4_K - Medium") != NULL, "its description names the file type: %s", desc);
    llama_model_free(q);

    // --- saving
    struct llama_model * m = llama_model_load_from_file(model, mp);
    CHECK(m != NULL, "the model loads");
    llama_model_save_to_file(m, path("saved.gguf"));
    struct llama_model * s = llama_model_load_from_file(path("saved.gguf"), mp);
    CHECK(s != NULL, "the saved model loads");
    if (m && s) {
        CHECK(llama_model_n_params(m) == llama_model_n_params(s), "same parameter count");
        float * a = logits_of(m);
        float * b = logits_of(s);
        int n = llama_vocab_n_tokens(llama_model_get_vocab(m));
        CHECK(a && b && memcmp(a, b, sizeof(float) * (size_t) n) == 0, "the saved model gives bit-identical logits");
        free(a);
        free(b);
        llama_model_save_to_file(s, path("saved2.gguf"));
        CHECK(same_bytes(path("saved.gguf"), path("saved2.gguf")), "saving the saved model gives the same bytes");
    }
    log_clear();
    llama_model_save_to_file(NULL, path("x.gguf"));
    CHECK(log_has("model is NULL") && !exists(path("x.gguf")), "saving NULL: %s", g_log);
    log_clear();
    llama_model_save_to_file(m, NULL);
    CHECK(log_has("path_model"), "saving to NULL: %s", g_log);
    log_clear();
    llama_model_save_to_file(m, path("no-such-dir/x.gguf"));
    CHECK(log_has("failed to save") && log_has("no-such-dir"), "saving to an unwritable path: %s", g_log);
    mp.vocab_only = true;
    struct llama_model * v = llama_model_load_from_file(model, mp);
    log_clear();
    llama_model_save_to_file(v, path("vocab.gguf"));
    CHECK(log_has("vocab_only") && !exists(path("vocab.gguf")), "saving a vocab-only model is refused: %s", g_log);
    llama_model_free(v);
    llama_model_free(s);
    llama_model_free(m);
    return finish("test_quantize");
}
