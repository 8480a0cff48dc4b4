// Encoders through the C API (a synthetic bert model, examples/synth_model.rs
// with a classifier head of 2 labels, MEAN by default): the reference's
// answers and rules where llama.h is silent, and the boundary's where it
// aborts.
//   - llama_get_memory is NULL (no memory) and every llama_memory_* call takes
//     NULL; llama_model_has_encoder is false, as the reference says for bert
//   - llama_decode runs llama_encode: the same embeddings; unspecified pooling
//     and attention are the model's (MEAN, non-causal)
//   - a batch without positions gets 0.. per sequence; a token of two
//     sequences counts for both; CLS and LAST follow positions
//   - n_tokens > n_ubatch (the reference asserts), bad ids, bad sequences:
//     -1 with a message, the context still usable; the abort callback: 2
//   - llama_encode on a decoder model: -1; embeddings off: no pooled output
//   - n_cls_out and the classifier labels
//
// usage: test_encoder BERT.gguf DECODER.gguf
#include "test_util.h"

#include <math.h>

static struct llama_model * g_model;
static int g_n_embd;

static struct llama_context * make_ctx(int pooling, uint32_t n_ubatch, int embeddings) {
    struct llama_context_params cp = llama_context_default_params();
    cp.embeddings = embeddings;
    cp.pooling_type = pooling;
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_ubatch = n_ubatch;
    cp.n_seq_max = 4;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    return llama_init_from_model(g_model, cp);
}

// Sequence s of `lens`: [CLS] then ids 1000 + 7s + 3i, positions 0.. (or
// none), every token an output.
static struct llama_batch make_batch(const int * lens, int n_seqs, int with_pos) {
    int n = 0;
    for (int s = 0; s < n_seqs; s++) n += lens[s];
    struct llama_batch b = llama_batch_init(n, 0, 2);
    int k = 0;
    for (int s = 0; s < n_seqs; s++) {
        for (int i = 0; i < lens[s]; i++, k++) {
            b.token[k] = i == 0 ? 101 : 1000 + 7 * s + 3 * i;
            b.pos[k] = i;
            b.n_seq_id[k] = 1;
            b.seq_id[k][0] = s;
            b.logits[k] = 1;
        }
    }
    b.n_tokens = n;
    if (!with_pos) {
        free(b.pos);
        b.pos = NULL;
    }
    return b;
}

static void free_batch(struct llama_batch b, int had_pos) {
    if (!had_pos) b.pos = malloc(1);
    llama_batch_free(b);
}

// Copies of the pooled rows of sequences 0..n-1 (NULL ones as NAN).
static float * pooled(struct llama_context * c, int n, int width) {
    float * out = malloc(sizeof(float) * (size_t) (n * width));
    for (int s = 0; s < n; s++) {
        const float * e = llama_get_embeddings_seq(c, s);
        for (int d = 0; d < width; d++) out[s * width + d] = e ? e[d] : NAN;
    }
    return out;
}

static int same(const float * a, const float * b, int n) {
    return memcmp(a, b, sizeof(float) * (size_t) n) == 0;
}

static int calls = 0;
static bool abort_after_one(void * ud) {
    (void) ud;
    return ++calls > 1;
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s BERT.gguf DECODER.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(capture_log, NULL);
    llama_backend_init();
    g_model = llama_model_load_from_file(argv[1], llama_model_default_params());
    CHECK(g_model != NULL, "the bert model loads");
    if (!g_model) return 1;
    g_n_embd = llama_model_n_embd(g_model);

    // --- the model's answers
    CHECK(!llama_model_has_encoder(g_model) && llama_model_has_decoder(g_model),
          "has_encoder false, has_decoder true (the reference's answers for bert)");
    CHECK(llama_model_n_cls_out(g_model) == 2, "n_cls_out = the 2 labels (%u)", llama_model_n_cls_out(g_model));
    const char * l0 = llama_model_cls_label(g_model, 0);
    CHECK(l0 && strcmp(l0, "LABEL_0") == 0 && llama_model_cls_label(g_model, 2) == NULL, "classifier labels");

    // --- a context: the model's pooling and attention, no memory
    struct llama_context * c = make_ctx(LLAMA_POOLING_TYPE_UNSPECIFIED, 256, 1);
    CHECK(c != NULL, "an embeddings context");
    CHECK(llama_pooling_type(c) == LLAMA_POOLING_TYPE_MEAN, "unspecified pooling is the model's MEAN");
    CHECK(llama_get_memory(c) == NULL, "an encoder's context has no memory");
    llama_memory_clear(llama_get_memory(c), true);
    CHECK(llama_memory_seq_rm(NULL, 0, -1, -1) && llama_memory_seq_pos_max(NULL, 0) == -1, "NULL memory is empty");

    int lens[3] = {5, 9, 17};
    struct llama_batch b = make_batch(lens, 3, 1);
    CHECK(llama_encode(c, b) == 0, "llama_encode");
    float * enc = pooled(c, 3, g_n_embd);
    CHECK(!isnan(enc[0]) && !isnan(enc[2 * g_n_embd]), "a pooled row per sequence");
    CHECK(llama_get_embeddings_seq(c, 3) == NULL, "no row for a sequence not in the batch");
    CHECK(llama_decode(c, b) == 0, "llama_decode on an encoder runs the encoder");
    float * dec = pooled(c, 3, g_n_embd);
    CHECK(same(enc, dec, 3 * g_n_embd), "llama_decode gives llama_encode's embeddings");
    CHECK(llama_decode(c, b) == 0, "again, with nothing cleared (no memory to fill)");
    free(dec);
    dec = pooled(c, 3, g_n_embd);
    CHECK(same(enc, dec, 3 * g_n_embd), "the same embeddings again");

    // positions filled in: 0.. per sequence
    struct llama_batch np = make_batch(lens, 3, 0);
    CHECK(llama_encode(c, np) == 0, "a batch without positions");
    free(dec);
    dec = pooled(c, 3, g_n_embd);
    CHECK(same(enc, dec, 3 * g_n_embd), "positions 0.. per sequence, as given");
    free_batch(np, 0);

    // one sequence alone: the same row (its attention sees only itself)
    struct llama_batch one = make_batch(lens, 1, 1);
    CHECK(llama_encode(c, one) == 0, "one sequence");
    float * alone = pooled(c, 1, g_n_embd);
    float diff = 0;
    for (int d = 0; d < g_n_embd; d++) diff = fmaxf(diff, fabsf(alone[d] - enc[d]));
    CHECK(diff < 1e-4f, "one sequence alone: within 1e-4 of its row in the batch (%g)", diff);
    free(alone);
    free_batch(one, 1);

    // --- refusals, the context intact
    llama_free(c);
    c = make_ctx(LLAMA_POOLING_TYPE_MEAN, 16, 1);
    log_clear();
    CHECK(llama_encode(c, b) == -1 && log_has("n_ubatch"), "31 tokens with n_ubatch 16: -1 (the reference asserts)");
    int small[2] = {5, 9};
    struct llama_batch s2 = make_batch(small, 2, 1);
    CHECK(llama_encode(c, s2) == 0, "the context still encodes a batch that fits");
    s2.token[3] = 999999;
    CHECK(llama_encode(c, s2) == -1, "a token id past the vocabulary: -1");
    s2.token[3] = 1000;
    s2.seq_id[3][0] = 4;
    CHECK(llama_encode(c, s2) == -1, "a sequence id >= n_seq_max: -1");
    s2.seq_id[3][0] = 0;
    llama_set_abort_callback(c, abort_after_one, NULL);
    CHECK(llama_encode(c, s2) == 2, "the abort callback stops the encoder: 2");
    llama_set_abort_callback(c, NULL, NULL);
    CHECK(llama_encode(c, s2) == 0, "and the next call runs");

    // a token in two sequences counts for both (MEAN of sequence 1 changes)
    float * before = pooled(c, 2, g_n_embd);
    s2.n_seq_id[0] = 2;
    s2.seq_id[0][1] = 1;
    CHECK(llama_encode(c, s2) == 0, "a token of sequences 0 and 1");
    float * after = pooled(c, 2, g_n_embd);
    CHECK(!same(before + g_n_embd, after + g_n_embd, g_n_embd), "it joins sequence 1's mean");
    free(before);
    free(after);
    free_batch(s2, 1);
    llama_free(c);

    // CLS picks the lowest position, LAST the highest, whatever the order
    c = make_ctx(LLAMA_POOLING_TYPE_NONE, 256, 1);
    CHECK(llama_encode(c, b) == 0, "pooling NONE");
    float * tok0 = malloc(sizeof(float) * (size_t) g_n_embd);
    float * tok4 = malloc(sizeof(float) * (size_t) g_n_embd);
    memcpy(tok0, llama_get_embeddings_ith(c, 0), sizeof(float) * (size_t) g_n_embd);
    memcpy(tok4, llama_get_embeddings_ith(c, 4), sizeof(float) * (size_t) g_n_embd);
    CHECK(llama_get_embeddings_seq(c, 0) == NULL, "no pooled rows with NONE");
    CHECK(llama_get_embeddings_ith(c, 31) == NULL, "no row 31 of 31 tokens");
    llama_free(c);
    c = make_ctx(LLAMA_POOLING_TYPE_CLS, 256, 1);
    CHECK(llama_encode(c, b) == 0 && same(llama_get_embeddings_seq(c, 0), tok0, g_n_embd),
          "CLS: the token at position 0");
    llama_free(c);
    c = make_ctx(LLAMA_POOLING_TYPE_LAST, 256, 1);
    CHECK(llama_encode(c, b) == 0 && same(llama_get_embeddings_seq(c, 0), tok4, g_n_embd),
          "LAST: the token at the highest position");
    llama_free(c);
    c = make_ctx(LLAMA_POOLING_TYPE_RANK, 256, 1);
    CHECK(llama_encode(c, b) == 0 && llama_get_embeddings_seq(c, 2) != NULL, "RANK: a score row per sequence");
    llama_free(c);
    free(tok0);
    free(tok4);

    // embeddings off: the encoder runs, nothing is pooled
    c = make_ctx(LLAMA_POOLING_TYPE_MEAN, 256, 0);
    CHECK(llama_encode(c, b) == 0 && llama_get_embeddings_seq(c, 0) == NULL, "embeddings off: no pooled rows");
    llama_free(c);
    free_batch(b, 1);
    free(enc);
    free(dec);

    // --- a decoder has no encoder
    struct llama_model * dm = llama_model_load_from_file(argv[2], llama_model_default_params());
    CHECK(dm != NULL, "the decoder loads");
    if (dm) {
        struct llama_context * dc = llama_init_from_model(dm, llama_context_default_params());
        struct llama_batch db = llama_batch_init(2, 0, 1);
        db.token[0] = 1;
        db.token[1] = 2;
        for (int i = 0; i < 2; i++) {
            db.pos[i] = i;
            db.n_seq_id[i] = 1;
            db.seq_id[i][0] = 0;
            db.logits[i] = 1;
        }
        db.n_tokens = 2;
        log_clear();
        CHECK(llama_encode(dc, db) == -1 && log_has("no encoder"), "llama_encode on a decoder: -1");
        CHECK(llama_get_memory(dc) != NULL && llama_decode(dc, db) == 0, "the decoder decodes");
        CHECK(llama_model_n_cls_out(dm) == 1, "a model without labels: n_cls_out 1, as the reference");
        llama_batch_free(db);
        llama_free(dc);
        llama_model_free(dm);
    }
    llama_model_free(g_model);
    return finish("encoder");
}
