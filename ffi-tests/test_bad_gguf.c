// The model loader against malformed GGUF files: every file listed in
// DIR/cases.tsv (written by gen_bad_gguf.py) must be refused with NULL and a
// logged message containing the expected substring, without a crash; the
// valid DIR/base.gguf must load. Also the odd paths (missing, NULL, a
// directory), loading through a FILE*, vocab_only, and llama_model_free(NULL).
//
// Usage: test_bad_gguf DIR
#include "test_util.h"

#include <stdbool.h>

#define MAX_CASES 1024

struct bad_case {
    char file[256];
    char expect[256];
};

static struct bad_case g_cases[MAX_CASES];
static bool g_verbose = false;  // BAD_GGUF_VERBOSE=1: print every message
static int g_n_cases = 0;

// Reads DIR/cases.tsv: "filename<TAB>expected substring" per line.
static int read_cases(const char * dir) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/cases.tsv", dir);
    FILE * f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == 0 || line[0] == '#') {
            continue;
        }
        char * tab = strchr(line, '\t');
        if (!tab || g_n_cases >= MAX_CASES) {
            fprintf(stderr, "bad line in %s: %s\n", path, line);
            fclose(f);
            return -1;
        }
        *tab = 0;
        size_t n_file = strlen(line);
        size_t n_expect = strlen(tab + 1);
        if (n_file == 0 || n_file >= sizeof(g_cases[0].file) || n_expect == 0 ||
            n_expect >= sizeof(g_cases[0].expect)) {
            fprintf(stderr, "bad line in %s: %s\n", path, line);
            fclose(f);
            return -1;
        }
        struct bad_case * c = &g_cases[g_n_cases++];
        memcpy(c->file, line, n_file + 1);
        memcpy(c->expect, tab + 1, n_expect + 1);
    }
    fclose(f);
    return g_n_cases;
}

static const struct bad_case * find_case(const char * file) {
    for (int i = 0; i < g_n_cases; i++) {
        if (strcmp(g_cases[i].file, file) == 0) {
            return &g_cases[i];
        }
    }
    return NULL;
}

// Loads one malformed file by path and checks the refusal and its message.
static void check_path_case(const char * dir, const struct bad_case * c) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, c->file);
    llama_log_set(capture_log, NULL);
    log_clear();
    struct llama_model * m = llama_model_load_from_file(path, llama_model_default_params());
    CHECK(m == NULL, "%s: the malformed file was accepted", c->file);
    if (m) {
        llama_model_free(m);
        return;
    }
    CHECK(g_log_count > 0 && g_log_len > 0, "%s: nothing was logged", c->file);
    CHECK(log_has(c->expect), "%s: the log lacks \"%s\"; it is:\n%s", c->file, c->expect, g_log);
    CHECK(log_has(c->file), "%s: the message does not name the file; it is:\n%s", c->file, g_log);
    if (g_verbose) {
        printf("%-40s %s", c->file, g_log);
    }
}

// Loads one malformed file through llama_model_load_from_file_ptr.
static void check_ptr_case(const char * dir, const struct bad_case * c) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, c->file);
    FILE * f = fopen(path, "rb");
    CHECK(f != NULL, "cannot open %s", path);
    if (!f) {
        return;
    }
    CHECK(fseek(f, 0, SEEK_SET) == 0, "fseek %s", path);
    log_clear();
    struct llama_model * m = llama_model_load_from_file_ptr(f, llama_model_default_params());
    CHECK(m == NULL, "%s (FILE*): the malformed file was accepted", c->file);
    if (m) {
        llama_model_free(m);
    } else {
        CHECK(g_log_count > 0, "%s (FILE*): nothing was logged", c->file);
        CHECK(log_has(c->expect), "%s (FILE*): the log lacks \"%s\"; it is:\n%s", c->file, c->expect, g_log);
    }
    fclose(f);
}

int main(int argc, char ** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR (written by gen_bad_gguf.py)\n", argv[0]);
        return 2;
    }
    const char * dir = argv[1];
    if (read_cases(dir) <= 0) {
        fprintf(stderr, "no cases in %s/cases.tsv\n", dir);
        return 2;
    }
    g_verbose = getenv("BAD_GGUF_VERBOSE") != NULL;
    llama_backend_init();
    llama_log_set(capture_log, NULL);

    // --- the valid base model loads
    char base[4096];
    snprintf(base, sizeof(base), "%s/base.gguf", dir);
    log_clear();
    struct llama_model * m = llama_model_load_from_file(base, llama_model_default_params());
    CHECK(m != NULL, "base.gguf does not load; log:\n%s", g_log);
    if (m) {
        CHECK(llama_model_n_embd(m) == 64, "n_embd %d", llama_model_n_embd(m));
        CHECK(llama_model_n_layer(m) == 1, "n_layer %d", llama_model_n_layer(m));
        llama_model_free(m);
    }

    // --- vocabulary oddities the reference accepts load, with a warning
    {
        char wpath[4096];
        snprintf(wpath, sizeof(wpath), "%s/warn_cases.tsv", dir);
        FILE * wf = fopen(wpath, "r");
        char line[1024];
        int n_warn = 0;
        while (wf && fgets(line, sizeof(line), wf)) {
            char * tab = strchr(line, '\t');
            if (!tab) continue;
            *tab = 0;
            char * expect = tab + 1;
            expect[strcspn(expect, "\n")] = 0;
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", dir, line);
            log_clear();
            struct llama_model * wm = llama_model_load_from_file(path, llama_model_default_params());
            CHECK(wm != NULL, "%s: does not load; log:\n%s", line, g_log);
            CHECK(log_has(expect), "%s: the log lacks \"%s\"; it is:\n%s", line, expect, g_log);
            if (wm) {
                const struct llama_vocab * v = llama_model_get_vocab(wm);
                if (strstr(line, "bos_out_of_range")) CHECK(llama_vocab_bos(v) == 1, "%s: BOS keeps its default", line);
                if (strstr(line, "eos_out_of_range")) CHECK(llama_vocab_eos(v) == 2, "%s: EOS keeps its default", line);
                int32_t ids[16];
                // "a" is "\u2581a" for SPM, "c" a token for BPE
                CHECK(llama_tokenize(v, "a", 1, ids, 16, true, true) > 0 || llama_tokenize(v, "c", 1, ids, 16, true, true) > 0,
                      "%s: tokenizes", line);
                llama_model_free(wm);
            }
            n_warn++;
        }
        if (wf) fclose(wf);
        CHECK(n_warn >= 4, "warn_cases.tsv has %d cases", n_warn);
    }

    // --- every malformed file is refused with the expected message
    for (int i = 0; i < g_n_cases; i++) {
        check_path_case(dir, &g_cases[i]);
    }

    // --- odd paths
    char missing[4096];
    snprintf(missing, sizeof(missing), "%s/no-such-file.gguf", dir);
    log_clear();
    CHECK(llama_model_load_from_file(missing, llama_model_default_params()) == NULL, "nonexistent path loads");
    CHECK(g_log_count > 0 && log_has("no-such-file.gguf"), "nonexistent path: message names the path: %s", g_log);

    log_clear();
    CHECK(llama_model_load_from_file(NULL, llama_model_default_params()) == NULL, "NULL path loads");
    CHECK(g_log_count > 0, "NULL path: nothing logged");

    log_clear();
    CHECK(llama_model_load_from_file(dir, llama_model_default_params()) == NULL, "a directory loads");
    CHECK(g_log_count > 0, "directory: nothing logged");

    // --- through a FILE*: the base model, then a few malformed files
    FILE * f = fopen(base, "rb");
    CHECK(f != NULL, "cannot open %s", base);
    if (f) {
        CHECK(fseek(f, 0, SEEK_SET) == 0, "fseek base");
        log_clear();
        m = llama_model_load_from_file_ptr(f, llama_model_default_params());
        CHECK(m != NULL, "base.gguf does not load through a FILE*; log:\n%s", g_log);
        if (m) {
            CHECK(llama_model_n_embd(m) == 64, "FILE*: n_embd %d", llama_model_n_embd(m));
            llama_model_free(m);
        }
        fclose(f);
    }
    static const char * const ptr_cases[] = {
        "trunc_0_empty.gguf", "magic_ggml.gguf", "version_3_byteswapped.gguf", "n_kv_u64max.gguf",
        "key_len_u64max.gguf", "alignment_0.gguf", "offset_overlap.gguf", "offset_one_past_end.gguf",
        "arch_missing.gguf", "head_count_kv_3.gguf",
    };
    int n_ptr = 0;
    for (size_t i = 0; i < sizeof(ptr_cases) / sizeof(ptr_cases[0]); i++) {
        const struct bad_case * c = find_case(ptr_cases[i]);
        CHECK(c != NULL, "%s is not in cases.tsv", ptr_cases[i]);
        if (c) {
            check_ptr_case(dir, c);
            n_ptr++;
        }
    }
    // The last truncation (length - 1) through a FILE* too.
    const struct bad_case * last_trunc = NULL;
    for (int i = 0; i < g_n_cases; i++) {
        if (strncmp(g_cases[i].file, "trunc_", 6) == 0) {
            last_trunc = &g_cases[i];
        }
    }
    if (last_trunc) {
        check_ptr_case(dir, last_trunc);
        n_ptr++;
    }

    // --- vocab_only on the base model
    struct llama_model_params vp = llama_model_default_params();
    vp.vocab_only = true;
    log_clear();
    m = llama_model_load_from_file(base, vp);
    CHECK(m != NULL, "base.gguf does not load with vocab_only; log:\n%s", g_log);
    llama_model_free(m);

    // --- freeing NULL is harmless
    llama_model_free(NULL);
    CHECK(true, "llama_model_free(NULL) returned");

    llama_log_set(NULL, NULL);
    llama_backend_free();
    printf("test_bad_gguf: %d malformed files by path, %d through a FILE*\n", g_n_cases, n_ptr);
    return finish("test_bad_gguf");
}
