// Float matrices are read through 2 MiB pages (src/model/repacked.rs): in
// place from the file mapping, with the blocks the page cache holds in
// small folios copied onto anonymous huge pages over it, or (where the
// kernel cannot say which pages are huge, and under MINFER_FLOAT_COPIES=1)
// from a whole copy, whose file pages are released. Either way, after
// loading a float model and decoding tokens from all over its vocabulary
// (the tied output head serves the embedding rows too), the process holds
// the weights once: a copied matrix is not also resident as file pages. A
// quantized model that has no float matrices copies nothing. The logits
// themselves are checked bit-identical to the reference's by the F16 and
// BF16 parity tests, each way.
//
// usage: test_float_copy FLOAT_MODEL.gguf QUANTIZED_MODEL.gguf
#define _POSIX_C_SOURCE 200809L // setenv
#include "test_util.h"

#include <sys/stat.h>

// RssFile and RssAnon of this process in kB (-1 when unknown)
static void resident_kb(long * file_kb, long * anon_kb) {
    *file_kb = *anon_kb = -1;
    FILE * f = fopen("/proc/self/status", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        sscanf(line, "RssFile: %ld", file_kb);
        sscanf(line, "RssAnon: %ld", anon_kb);
    }
    fclose(f);
}

static struct llama_model * load(const char * path) {
    log_clear();
    struct llama_model_params mp = llama_model_default_params();
    return llama_model_load_from_file(path, mp);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FLOAT_MODEL.gguf QUANTIZED_MODEL.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(capture_log, NULL);
    llama_backend_init();
    struct stat st;
    CHECK(stat(argv[1], &st) == 0, "stat %s", argv[1]);
    const long file_kb = (long) (st.st_size / 1024);

    for (int pass = 0; pass < 2; pass++) {
        // pass 0: every float matrix copied whole (MINFER_FLOAT_COPIES=1);
        // pass 1: as the load chooses
        if (pass == 0) setenv("MINFER_FLOAT_COPIES", "1", 1);
        else unsetenv("MINFER_FLOAT_COPIES");
        long rss_file0, rss_anon0;
        resident_kb(&rss_file0, &rss_anon0);
        struct llama_model * m = load(argv[1]);
        CHECK(m != NULL, "load %s", argv[1]);
        if (!m) return 1;
        if (pass == 0) {
            CHECK(log_has("float matrices copied"), "the load says it copied the float matrices: %s", g_log);
        } else {
            CHECK(log_has("float matrices copied") || log_has("read in place through 2 MiB pages"),
                  "the load says how it reads the float matrices: %s", g_log);
        }

        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 256;
        cp.n_batch = 64;
        cp.n_threads = cp.n_threads_batch = 2;
        struct llama_context * ctx = llama_init_from_model(m, cp);
        CHECK(ctx != NULL, "context");
        if (!ctx) return 1;
        const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
        // tokens spread over the whole vocabulary: embedding rows on every page
        // range of the tied token embedding
        llama_token toks[64];
        for (int i = 0; i < 64; i++) toks[i] = (llama_token) ((i * 7919 + 13) % n_vocab);
        CHECK(llama_decode(ctx, llama_batch_get_one(toks, 64)) == 0, "decode of 64 tokens");
        for (int i = 0; i < 8; i++) {
            llama_token t = (llama_token) ((i * 104729 + 7) % n_vocab);
            CHECK(llama_decode(ctx, llama_batch_get_one(&t, 1)) == 0, "one-token decode");
        }
        const float * logits = llama_get_logits_ith(ctx, -1);
        CHECK(logits != NULL && logits[0] == logits[0], "logits");

        long rss_file, rss_anon;
        resident_kb(&rss_file, &rss_anon);
        if (rss_file >= 0 && rss_anon >= 0) {
            const long anon = rss_anon - rss_anon0, file = rss_file - rss_file0;
            if (pass == 0) {
                // the model's weights are nearly all in multiplied matrices:
                // they are resident once, as the copy (the file is mapped,
                // never read)
                CHECK(anon >= file_kb * 9 / 10, "anonymous memory grew by %ld kB for a %ld kB model", anon, file_kb);
                CHECK(file < file_kb / 10, "%ld kB of the %ld kB file resident after decoding", file, file_kb);
            }
            // resident once, in whatever mix of file pages and copies (the
            // context's buffers, a few MB, besides): not twice
            CHECK(anon + file >= file_kb * 9 / 10 && anon + file < file_kb * 5 / 4,
                  "pass %d: %ld kB anonymous and %ld kB of file pages resident for a %ld kB model", pass, anon, file,
                  file_kb);
        } else {
            fprintf(stderr, "no RssFile/RssAnon in /proc/self/status: residency not checked\n");
        }
        llama_free(ctx);
        llama_model_free(m);
    }

    struct llama_model * q = load(argv[2]);
    CHECK(q != NULL, "load %s", argv[2]);
    CHECK(!log_has("float matrices copied") || log_has(" 0 float matrices copied"), "a quantized model copies nothing: %s", g_log);
    llama_model_free(q);

    printf("float_copy: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail == 0 ? 0 : 1;
}
