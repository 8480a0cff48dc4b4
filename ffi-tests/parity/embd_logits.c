// Teacher forcing with embedding inputs: like logits.c, but each decode's
// llama_batch carries embeddings (llama_batch_init(n, n_embd, 1), token
// NULL) instead of token ids: the rows of the model's token_embd tensor for
// the tokens, read from the GGUF file here (F32 or BF16 token_embd). Writes
// the logits of every position in logits.c's format. For llama, qwen2 and
// qwen3 these equal the token path's logits; gemma3 does not scale raw
// embeddings by sqrt(n_embd), so its logits differ from the token path's.
// Runs on minfer or on the reference library (pick with LD_LIBRARY_PATH).
//
// usage: embd_logits MODEL.gguf TOKENS.txt OUT.bin [N_CHUNK]
#include "llama.h"
#include "teacher.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char * what) {
    fprintf(stderr, "embd_logits: %s\n", what);
    exit(1);
}

static uint64_t rd(FILE * f, int bytes) {
    uint64_t v = 0;
    if (fread(&v, 1, (size_t) bytes, f) != (size_t) bytes) die("short GGUF file");
    return v; // little endian host
}

// Skips one GGUF value of type t (reading general.alignment on the way).
static void skip_value(FILE * f, uint32_t t) {
    static const int size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (t == 8) {
        uint64_t n = rd(f, 8);
        if (fseek(f, (long) n, SEEK_CUR) != 0) die("bad string");
    } else if (t == 9) {
        uint32_t et = (uint32_t) rd(f, 4);
        uint64_t n = rd(f, 8);
        for (uint64_t i = 0; i < n; i++) skip_value(f, et);
    } else if (t < 13) {
        rd(f, size[t]);
    } else {
        die("bad value type");
    }
}

// The token_embd.weight tensor as f32: *rows x *cols, malloc'd.
static float * token_embd(const char * path, int64_t * rows, int64_t * cols) {
    FILE * f = fopen(path, "rb");
    if (!f) die("cannot open the model");
    if (rd(f, 4) != 0x46554747u) die("not a GGUF file");
    rd(f, 4); // version
    uint64_t n_tensors = rd(f, 8), n_kv = rd(f, 8);
    uint64_t align = 32;
    char key[256];
    for (uint64_t i = 0; i < n_kv; i++) {
        uint64_t n = rd(f, 8);
        if (n >= sizeof(key) || fread(key, 1, n, f) != n) die("bad key");
        key[n] = 0;
        uint32_t t = (uint32_t) rd(f, 4);
        if (!strcmp(key, "general.alignment") && t == 4) {
            align = rd(f, 4);
        } else {
            skip_value(f, t);
        }
    }
    uint32_t type = 0;
    uint64_t off = UINT64_MAX, dims[4] = {1, 1, 1, 1};
    for (uint64_t i = 0; i < n_tensors; i++) {
        uint64_t n = rd(f, 8);
        if (n >= sizeof(key) || fread(key, 1, n, f) != n) die("bad tensor name");
        key[n] = 0;
        uint32_t nd = (uint32_t) rd(f, 4);
        uint64_t d[4] = {1, 1, 1, 1};
        for (uint32_t k = 0; k < nd && k < 4; k++) d[k] = rd(f, 8);
        uint32_t t = (uint32_t) rd(f, 4);
        uint64_t o = rd(f, 8);
        if (!strcmp(key, "token_embd.weight")) {
            type = t;
            off = o;
            memcpy(dims, d, sizeof(d));
        }
    }
    if (off == UINT64_MAX) die("no token_embd.weight");
    if (type != 0 && type != 30) die("token_embd is neither F32 nor BF16");
    uint64_t data = ((uint64_t) ftell(f) + align - 1) / align * align + off;
    *cols = (int64_t) dims[0];
    *rows = (int64_t) dims[1];
    size_t n = (size_t) dims[0] * (size_t) dims[1];
    float * e = malloc(n * sizeof(float));
    if (!e || fseek(f, (long) data, SEEK_SET) != 0) die("cannot read token_embd");
    for (size_t i = 0; i < n; i++) {
        if (type == 0) {
            uint32_t u = (uint32_t) rd(f, 4);
            memcpy(&e[i], &u, 4);
        } else {
            uint32_t u = (uint32_t) rd(f, 2) << 16; // bf16 -> f32 is exact
            memcpy(&e[i], &u, 4);
        }
    }
    fclose(f);
    return e;
}

// The token ids and the token_embd rows they select.
struct embd_inputs {
    const llama_token * toks;
    const float * embd; // [rows][n_embd]
    int64_t rows, n_embd;
};

// Position pos's input: the token_embd row of its token.
static int fill_embd(struct llama_batch * batch, int i, int pos, void * ud) {
    const struct embd_inputs * in = ud;
    int t = in->toks[pos];
    if (t < 0 || t >= in->rows) { fprintf(stderr, "token id %d out of range\n", t); return 1; }
    memcpy(batch->embd + (size_t) i * (size_t) in->n_embd, in->embd + (size_t) t * (size_t) in->n_embd,
           sizeof(float) * (size_t) in->n_embd);
    return 0;
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf TOKENS.txt OUT.bin [N_CHUNK]\n", argv[0]);
        return 2;
    }
    llama_log_set(teacher_quiet, NULL);
    llama_backend_init();

    int n = 0;
    llama_token * toks = teacher_read_tokens(argv[2], &n);
    if (!toks) die("cannot open the tokens");
    int n_chunk = argc > 4 ? atoi(argv[4]) : n;

    int64_t rows, n_embd;
    float * embd = token_embd(argv[1], &rows, &n_embd);
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) die("cannot load the model");
    if (llama_model_n_embd(model) != n_embd) die("token_embd width is not n_embd");
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));

    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) n;
    cp.n_batch = (uint32_t) n_chunk;
    cp.n_ubatch = 512;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) die("cannot create a context");

    struct llama_batch batch = llama_batch_init(n_chunk, (int32_t) n_embd, 1);
    struct embd_inputs in = {toks, embd, rows, n_embd};
    if (teacher_decode(ctx, batch, n, n_chunk, n_vocab, argv[3], fill_embd, &in) != 0) return 1;
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    free(embd);
    free(toks);
    return 0;
}
