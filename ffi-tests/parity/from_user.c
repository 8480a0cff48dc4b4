// llama_model_init_from_user: a model from a gguf_context of metadata and a
// callback that fills each tensor (name-seeded values, written with
// ggml_backend_tensor_set, or a memcpy to tensor->data for the norms), one
// tensor's type overridden to F16 in the metadata (OVERRIDE, by default
// blk.1.ffn_down.weight; a mixture of experts' blk.1.ffn_down_exps.weight).
// Decodes TOKENS and writes every position's logits (logits.c's format);
// then saves the model with llama_model_save_to_file, loads that file and
// checks that it decodes the same logits. OUTPUT embd (the encoders): every
// position's embedding instead (an embeddings context, pooling NONE; the
// same format, n_embd_out floats a row); embd-nosave: the reference's
// saver writes token_embd only beside an output head of its own (and leaves
// out gemma-embedding's dense modules), so its save of such an encoder is a
// file that does not load: no save on the reference, and on minfer, whose
// save keeps them, the save and reload on a line of its own.
//
// Built two ways from this file:
//   -DWITH_GGML, linked to ggml (the reference's libggml-base): the metadata
//     is gguf_init_from_file(META.gguf)'s, ggml's own functions throughout
//     (scripts/make-parity-goldens.sh runs it on the reference library);
//   without: this file stands in for the few ggml functions involved
//     (gguf_get_meta_size/data return META.gguf's bytes, gguf_find_tensor
//     and gguf_get_tensor_type the override, ggml_backend_tensor_set calls
//     the tensor's buffer interface as ggml's does), exported with
//     -rdynamic for minfer to find (ffi-tests/run.sh, no ggml needed).
//
// usage: from_user META.gguf TOKENS.txt OUT.bin SAVED.gguf [OVERRIDE [OUTPUT]]
//   OUTPUT: logits (the default), embd or embd-nosave
//   prints whether NULL metadata and callback are refused, "calls N"
//   (callback calls) and "reloaded: same logits" or "... differ" (embd:
//   "embeddings"; embd-nosave: "not saved", then on minfer
//   "minfer's save, reloaded: same embeddings ...")
#include "llama.h"
#include "teacher.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// the tensor whose type the metadata overrides to F16 (argv[5])
static const char * g_override = "blk.1.ffn_down.weight";
enum { TYPE_F32 = 0, TYPE_F16 = 1 };

// ggml.h's struct ggml_tensor (the fields this test reads)
struct tensor_view {
    int type;
    void * buffer;
    int64_t ne[4];
    size_t nb[4];
    int op;
    int32_t op_params[16];
    int32_t flags;
    void * src[10];
    void * view_src;
    size_t view_offs;
    void * data;
    char name[64];
    void * extra;
    char padding[8];
};

void ggml_backend_tensor_set(struct ggml_tensor * tensor, const void * data, size_t offset, size_t size);

#ifdef WITH_GGML
struct gguf_init_params {
    bool no_alloc;
    void ** ctx;
};
struct gguf_context * gguf_init_from_file(const char * fname, struct gguf_init_params params);
void gguf_set_tensor_type(struct gguf_context * ctx, const char * name, int type);
void gguf_free(struct gguf_context * ctx);
#else
// --- the stand-ins for ggml (this test's gguf_context: META.gguf's bytes)
struct gguf_context {
    unsigned char * bytes;
    size_t n;
};
size_t gguf_get_meta_size(const struct gguf_context * ctx);
void gguf_get_meta_data(const struct gguf_context * ctx, void * data);
int64_t gguf_find_tensor(const struct gguf_context * ctx, const char * name);
int gguf_get_tensor_type(const struct gguf_context * ctx, int64_t id);
size_t gguf_get_meta_size(const struct gguf_context * ctx) { return ctx->n; }
void gguf_get_meta_data(const struct gguf_context * ctx, void * data) { memcpy(data, ctx->bytes, ctx->n); }
int64_t gguf_find_tensor(const struct gguf_context * ctx, const char * name) {
    (void) ctx;
    return strcmp(name, g_override) == 0 ? 0 : -1;
}
int gguf_get_tensor_type(const struct gguf_context * ctx, int64_t id) {
    (void) ctx;
    return id == 0 ? TYPE_F16 : TYPE_F32;
}
// ggml-backend-impl.h's buffer: the interface's set_tensor is its 5th function
struct buffer_view {
    void (*fns[11])(void);
};
typedef void (*set_tensor_fn)(void *, struct ggml_tensor *, const void *, size_t, size_t);
void ggml_backend_tensor_set(struct ggml_tensor * tensor, const void * data, size_t offset, size_t size) {
    struct buffer_view * buf = (struct buffer_view *) ((struct tensor_view *) tensor)->buffer;
    ((set_tensor_fn) buf->fns[4])(buf, tensor, data, offset, size);
}
#endif

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e == 0xff) return (uint16_t) (sign | 0x7c00 | (m ? 0x200 : 0));
    int32_t ee = (int32_t) e - 127 + 15;
    if (ee >= 31) return (uint16_t) (sign | 0x7c00);
    if (ee <= 0) {
        if (ee < -10) return (uint16_t) sign;
        m |= 0x800000;
        uint32_t shift = (uint32_t) (14 - ee);
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t) (sign | h);
    }
    uint32_t h = ((uint32_t) ee << 10) | (m >> 13), rem = m & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return (uint16_t) (sign | h);
}

static int g_calls = 0;

// Values seeded by the tensor's name: norms and rope factors near 1,
// biases small, matrices of spread 1/sqrt(n_in).
static void set_data(struct ggml_tensor * tensor, void * ud) {
    (void) ud;
    struct tensor_view * t = (struct tensor_view *) tensor;
    g_calls++;
    uint64_t h = 1469598103934665603ull;
    for (const char * c = t->name; *c; c++) h = (h ^ (unsigned char) *c) * 1099511628211ull;
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    float * v = malloc(sizeof(float) * (size_t) n);
    bool norm = strstr(t->name, "norm") != NULL, rope = strstr(t->name, "rope") != NULL;
    bool bias = strstr(t->name, ".bias") != NULL;
    float spread = norm ? 0.1f : rope ? 0.5f : bias ? 0.1f : 1.0f / sqrtf((float) t->ne[0]);
    for (int64_t i = 0; i < n; i++) {
        h ^= h << 13; h ^= h >> 7; h ^= h << 17;
        float u = (float) (h >> 40) / (float) (1ull << 24) * 2.0f - 1.0f;
        v[i] = (norm || rope ? 1.0f : 0.0f) + spread * u;
    }
    size_t nbytes = t->nb[3] * (size_t) t->ne[3];
    if (t->type == TYPE_F16) {
        uint16_t * hv = malloc(2 * (size_t) n);
        for (int64_t i = 0; i < n; i++) hv[i] = f32_to_f16(v[i]);
        ggml_backend_tensor_set(tensor, hv, 0, nbytes);
        free(hv);
    } else if (norm) {
        memcpy(t->data, v, nbytes); // (a host buffer: its data pointer works too)
    } else {
        ggml_backend_tensor_set(tensor, v, 0, nbytes);
    }
    free(v);
}

static int fill_token(struct llama_batch * batch, int i, int pos, void * ud) {
    batch->token[i] = ((const llama_token *) ud)[pos];
    return 0;
}

// Every token's embedding, in one decode, to path (teacher_decode's
// format: n, n_embd_out, then the rows); 0 on success.
static int embed_to(struct llama_context * ctx, struct llama_batch batch, int n, int n_embd, llama_token * toks,
                    const char * path) {
    for (int i = 0; i < n; i++) {
        batch.token[i] = toks[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n;
    int rc = llama_decode(ctx, batch);
    if (rc != 0) { fprintf(stderr, "llama_decode returned %d\n", rc); return 1; }
    FILE * out = fopen(path, "wb");
    if (!out) { fprintf(stderr, "cannot write %s\n", path); return 1; }
    fwrite(&n, sizeof(int), 1, out);
    fwrite(&n_embd, sizeof(int), 1, out);
    for (int i = 0; i < n; i++) {
        const float * e = llama_get_embeddings_ith(ctx, i);
        if (!e) { fprintf(stderr, "no embeddings for %d\n", i); fclose(out); return 1; }
        fwrite(e, sizeof(float), (size_t) n_embd, out);
    }
    fclose(out);
    return 0;
}

// Decodes the tokens, logits (or with embd, embeddings) to path; 0 on success.
static int decode_to(struct llama_model * m, llama_token * toks, int n, const char * path, int embd) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) n;
    cp.n_batch = (uint32_t) n;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    if (embd) {
        cp.embeddings = true;
        cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
    }
    struct llama_context * ctx = llama_init_from_model(m, cp);
    if (!ctx) return 1;
    struct llama_batch batch = llama_batch_init(n, 0, 1);
    int rc = embd ? embed_to(ctx, batch, n, llama_model_n_embd_out(m), toks, path)
                  : teacher_decode(ctx, batch, n, n, llama_vocab_n_tokens(llama_model_get_vocab(m)), path,
                                   fill_token, toks);
    llama_batch_free(batch);
    llama_free(ctx);
    return rc;
}

// Saves m to saved_path, frees it, loads that file, decodes the tokens again
// and prints whether the output equals out_path's; 0 unless something failed.
static int reload_check(struct llama_model * m, llama_token * toks, int n, const char * out_path,
                        const char * saved_path, int embd) {
    llama_model_save_to_file(m, saved_path);
    llama_model_free(m);
    struct llama_model * m2 = llama_model_load_from_file(saved_path, llama_model_default_params());
    if (!m2) { fprintf(stderr, "cannot load the saved model\n"); return 1; }
    char again[4096];
    snprintf(again, sizeof again, "%s.again", out_path);
    if (decode_to(m2, toks, n, again, embd) != 0) return 1;
    llama_model_free(m2);
    size_t la = 0, lb = 0;
    FILE * fa = fopen(out_path, "rb");
    FILE * fb = fopen(again, "rb");
    int same = fa && fb;
    while (same) {
        int a = fgetc(fa), b = fgetc(fb);
        la += a != EOF;
        lb += b != EOF;
        if (a != b) same = 0;
        if (a == EOF || b == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    printf("reloaded: %s %s (%zu bytes)\n", same && la == lb && la > 0 ? "same" : "differ",
           embd ? "embeddings" : "logits", la);
    remove(again);
    return 0;
}

int main(int argc, char ** argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s META.gguf TOKENS.txt OUT.bin SAVED.gguf [OVERRIDE [OUTPUT]]\n", argv[0]);
        return 2;
    }
    if (argc > 5) g_override = argv[5];
    const char * output = argc > 6 ? argv[6] : "logits";
    const int embd = strncmp(output, "embd", 4) == 0, save = strcmp(output, "embd-nosave") != 0;
    if (!embd && strcmp(output, "logits") != 0) {
        fprintf(stderr, "unknown OUTPUT %s\n", output);
        return 2;
    }
    llama_log_set(teacher_quiet, NULL);
    llama_backend_init();
#ifdef WITH_GGML
    struct gguf_init_params gp = {true, NULL};
    struct gguf_context * meta = gguf_init_from_file(argv[1], gp);
    if (!meta) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    gguf_set_tensor_type(meta, g_override, TYPE_F16);
#else
    struct gguf_context ctx_bytes = {NULL, 0};
    FILE * f = fopen(argv[1], "rb");
    if (!f) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    fseek(f, 0, SEEK_END);
    ctx_bytes.n = (size_t) ftell(f);
    fseek(f, 0, SEEK_SET);
    ctx_bytes.bytes = malloc(ctx_bytes.n);
    if (fread(ctx_bytes.bytes, 1, ctx_bytes.n, f) != ctx_bytes.n) return 1;
    fclose(f);
    struct gguf_context * meta = &ctx_bytes;
#endif
    int n = 0;
    llama_token * toks = teacher_read_tokens(argv[2], &n);
    if (!toks) { fprintf(stderr, "cannot open %s\n", argv[2]); return 1; }

#ifndef WITH_GGML
    // misuse first (minfer only: the reference asserts): NULL metadata, NULL callback
    struct llama_model * none1 = llama_model_init_from_user(NULL, set_data, NULL, llama_model_default_params());
    struct llama_model * none2 = llama_model_init_from_user(meta, NULL, NULL, llama_model_default_params());
    printf("NULL metadata or callback: %s\n", !none1 && !none2 ? "refused" : "accepted");
#endif

    struct llama_model * m = llama_model_init_from_user(meta, set_data, NULL, llama_model_default_params());
    if (!m) { fprintf(stderr, "llama_model_init_from_user failed\n"); return 1; }
    printf("calls %d\n", g_calls);
    if (decode_to(m, toks, n, argv[3], embd) != 0) return 1;
    if (save) {
        if (reload_check(m, toks, n, argv[3], argv[4], embd) != 0) return 1;
    } else {
        printf("not saved\n");
#ifdef WITH_GGML
        llama_model_free(m);
#else
        // (minfer's save of such an encoder keeps token_embd and the dense
        // modules, so its file loads: checked here, on minfer only, and
        // printed as a line of its own, which ffi-tests/run.sh counts and
        // leaves out of the comparison with the reference's output)
        printf("minfer's save, ");
        if (reload_check(m, toks, n, argv[3], argv[4], embd) != 0) return 1;
#endif
    }
#ifdef WITH_GGML
    gguf_free(meta);
#else
    free(ctx_bytes.bytes);
#endif
    free(toks);
    return 0;
}
