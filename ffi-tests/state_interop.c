// State and session files across libraries. Compiled once against llama.h,
// it runs on minfer or on the reference library (pick with LD_LIBRARY_PATH),
// so either library can load what the other saved.
//
// usage:
//   state_interop save MODEL OUTDIR
//     decodes a prompt (sequence 0, and with N_SEQ=2 a second prompt in
//     sequence 1) and writes OUTDIR/state.bin (llama_state_get_data),
//     session.bin (llama_state_save_file, with the prompt tokens),
//     seq.bin (llama_state_seq_get_data of sequence 0), seqfile.bin
//     (llama_state_seq_save_file of sequence 0), then continues sequence 0
//     with 4 fixed tokens one at a time and writes their logits to
//     direct.logits.
//   state_interop load MODEL INDIR OUTDIR
//     for each of state, session, seq, seqfile of INDIR: a fresh context
//     loads it, saves it again (OUTDIR/resave-KIND.bin, same API), continues
//     sequence 0 with the same 4 tokens and writes OUTDIR/KIND.logits.
//
// Environment: N_CTX (default 256), N_SEQ (1), UNIFIED (0), FA
// (flash_attn_type, default -1 = AUTO), TYPE_K / TYPE_V (ggml_type, default 1 = F16),
// SWA_FULL (1), PROMPT_TOKENS (number of prompt tokens kept, default all),
// PROMPT_REPEAT (sequence 0's prompt decoded this many times in a row, default 1;
// the session and sequence files hold one copy of its tokens).
// Logits files: n_vocab float32 per continuation token.
#include "decode_util.h"
#include "llama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * PROMPT0 = "The capital of France is";
static const char * PROMPT1 = "Once upon a time";
static const llama_token CONT[4] = { 253, 1345, 28, 2765 };

static void quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    if (level >= GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_CONT) fputs(text, stderr);
}

static int env_int(const char * name, int def) {
    const char * v = getenv(name);
    return v && *v ? atoi(v) : def;
}

static void die(const char * what) {
    fprintf(stderr, "state_interop: %s\n", what);
    exit(1);
}

static struct llama_context * new_ctx(struct llama_model * model) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) env_int("N_CTX", 256);
    cp.n_batch = 64;
    cp.n_ubatch = 64;
    cp.n_seq_max = (uint32_t) env_int("N_SEQ", 1);
    cp.kv_unified = env_int("UNIFIED", 0) != 0;
    cp.flash_attn_type = (enum llama_flash_attn_type) env_int("FA", -1);
    cp.type_k = (enum ggml_type) env_int("TYPE_K", 1);
    cp.type_v = (enum ggml_type) env_int("TYPE_V", 1);
    cp.swa_full = env_int("SWA_FULL", 1) != 0;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) die("cannot create a context");
    return ctx;
}

static int tokenize(struct llama_model * model, const char * text, llama_token * out, int cap) {
    int n = llama_tokenize(llama_model_get_vocab(model), text, (int32_t) strlen(text), out, cap, 1, 0);
    if (n <= 0) die("tokenize failed");
    int keep = env_int("PROMPT_TOKENS", n);
    return keep < n ? keep : n;
}

static void decode_seq(struct llama_context * ctx, const llama_token * toks, int n, llama_pos pos0, llama_seq_id seq) {
    if (decode_tokens(ctx, toks, n, pos0, seq) != 0) die("llama_decode failed");
}

// Continues sequence 0 from its last position with CONT, one token at a
// time, writing each token's logits.
static void continue_seq0(struct llama_context * ctx, struct llama_model * model, const char * path) {
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    FILE * f = fopen(path, "wb");
    if (!f) die("cannot write logits");
    llama_pos pos = llama_memory_seq_pos_max(llama_get_memory(ctx), 0) + 1;
    for (int i = 0; i < 4; i++) {
        decode_seq(ctx, &CONT[i], 1, pos + i, 0);
        fwrite(llama_get_logits_ith(ctx, -1), sizeof(float), (size_t) n_vocab, f);
    }
    fclose(f);
}

static void write_file(const char * path, const uint8_t * data, size_t n) {
    FILE * f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) die("cannot write a file");
    fclose(f);
}

static uint8_t * read_file(const char * path, size_t * n) {
    FILE * f = fopen(path, "rb");
    if (!f) die("cannot read a file");
    fseek(f, 0, SEEK_END);
    *n = (size_t) ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t * buf = malloc(*n ? *n : 1);
    if (fread(buf, 1, *n, f) != *n) die("short read");
    fclose(f);
    return buf;
}

static void save_all(struct llama_context * ctx, const char * dir, const llama_token * toks, int n_toks, const char * prefix) {
    char path[4096];
    size_t n = llama_state_get_size(ctx);
    uint8_t * buf = malloc(n);
    if (llama_state_get_data(ctx, buf, n) != n) die("llama_state_get_data failed");
    snprintf(path, sizeof path, "%s/%sstate.bin", dir, prefix);
    write_file(path, buf, n);
    free(buf);

    snprintf(path, sizeof path, "%s/%ssession.bin", dir, prefix);
    if (!llama_state_save_file(ctx, path, toks, (size_t) n_toks)) die("llama_state_save_file failed");

    n = llama_state_seq_get_size(ctx, 0);
    buf = malloc(n);
    if (llama_state_seq_get_data(ctx, buf, n, 0) != n) die("llama_state_seq_get_data failed");
    snprintf(path, sizeof path, "%s/%sseq.bin", dir, prefix);
    write_file(path, buf, n);
    free(buf);

    snprintf(path, sizeof path, "%s/%sseqfile.bin", dir, prefix);
    if (llama_state_seq_save_file(ctx, path, 0, toks, (size_t) n_toks) == 0) die("llama_state_seq_save_file failed");
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s save MODEL OUTDIR | load MODEL INDIR OUTDIR\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model * model = llama_model_load_from_file(argv[2], llama_model_default_params());
    if (!model) die("cannot load the model");
    llama_token toks[64], toks1[64];
    int n0 = tokenize(model, PROMPT0, toks, 64);
    char path[4096];

    if (strcmp(argv[1], "save") == 0) {
        struct llama_context * ctx = new_ctx(model);
        for (int r = 0; r < env_int("PROMPT_REPEAT", 1); r++) decode_seq(ctx, toks, n0, r * n0, 0);
        if (env_int("N_SEQ", 1) > 1) {
            int n1 = tokenize(model, PROMPT1, toks1, 64);
            decode_seq(ctx, toks1, n1, 0, 1);
        }
        save_all(ctx, argv[3], toks, n0, "");
        snprintf(path, sizeof path, "%s/direct.logits", argv[3]);
        continue_seq0(ctx, model, path);
        llama_free(ctx);
    } else if (strcmp(argv[1], "load") == 0 && argc >= 5) {
        const char * in = argv[3], * out = argv[4];
        static const char * kinds[4] = { "state", "session", "seq", "seqfile" };
        for (int k = 0; k < 4; k++) {
            struct llama_context * ctx = new_ctx(model);
            llama_token got[64];
            size_t n_got = 0, n = 0;
            snprintf(path, sizeof path, "%s/%s.bin", in, kinds[k]);
            char resave[4096];
            snprintf(resave, sizeof resave, "%s/resave-%s.bin", out, kinds[k]);
            if (k == 0 || k == 2) {
                uint8_t * buf = read_file(path, &n);
                size_t used = k == 0 ? llama_state_set_data(ctx, buf, n) : llama_state_seq_set_data(ctx, buf, n, 0);
                if (used != n) { fprintf(stderr, "%s: read %zu of %zu bytes\n", kinds[k], used, n); die("set_data failed"); }
                free(buf);
                size_t m = k == 0 ? llama_state_get_size(ctx) : llama_state_seq_get_size(ctx, 0);
                buf = malloc(m);
                if ((k == 0 ? llama_state_get_data(ctx, buf, m) : llama_state_seq_get_data(ctx, buf, m, 0)) != m) die("get_data failed");
                write_file(resave, buf, m);
                free(buf);
            } else if (k == 1) {
                if (!llama_state_load_file(ctx, path, got, 64, &n_got)) die("llama_state_load_file failed");
                if ((int) n_got != n0 || memcmp(got, toks, sizeof(llama_token) * n_got) != 0) die("session tokens differ");
                if (!llama_state_save_file(ctx, resave, got, n_got)) die("llama_state_save_file failed");
            } else {
                if (llama_state_seq_load_file(ctx, path, 0, got, 64, &n_got) == 0) die("llama_state_seq_load_file failed");
                if ((int) n_got != n0 || memcmp(got, toks, sizeof(llama_token) * n_got) != 0) die("sequence file tokens differ");
                if (llama_state_seq_save_file(ctx, resave, 0, got, n_got) == 0) die("llama_state_seq_save_file failed");
            }
            snprintf(path, sizeof path, "%s/%s.logits", out, kinds[k]);
            continue_seq0(ctx, model, path);
            llama_free(ctx);
        }
    } else {
        die("unknown mode");
    }
    llama_model_free(model);
    return 0;
}
