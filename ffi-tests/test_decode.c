// llama_decode and its neighbours through the C API, on a synthetic model:
// sequences decoded together equal each decoded alone, every kind of bad
// batch is refused with -1 and leaves the KV cache as it was, a full cache
// gives 1, an abort gives 2, the logits getters follow llama.h, and the
// memory API (seq_rm/cp/keep/add/div, pos_min/max, clear) behaves.
//
// usage: test_decode MODEL.gguf
#include "test_util.h"
#include "test_batch.h"

#include <math.h>
#include <stdint.h>

static struct llama_model * g_model;
static int g_vocab;

static struct llama_context * new_ctx(int n_ctx, int n_seq_max) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t) n_ctx;
    cp.n_batch = 64;
    cp.n_ubatch = 16;
    cp.n_seq_max = (uint32_t) n_seq_max;
    return llama_init_from_model(g_model, cp);
}


static float max_rel_diff(const float * a, const float * b, int n) {
    float m = 0;
    for (int i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]) / (fabsf(a[i]) + 1e-3f);
        if (d > m) m = d;
    }
    return m;
}

// max |a - b| / max |a|: a difference scaled by the logits' range.
static float scaled_diff(const float * a, const float * b, int n) {
    float m = 0, r = 0;
    for (int i = 0; i < n; i++) {
        if (fabsf(a[i] - b[i]) > m) m = fabsf(a[i] - b[i]);
        if (fabsf(a[i]) > r) r = fabsf(a[i]);
    }
    return m / (r + 1e-6f);
}

static int argmax(const float * a, int n) {
    int k = 0;
    for (int i = 1; i < n; i++) if (a[i] > a[k]) k = i;
    return k;
}

static bool abort_now(void * data) {
    ++*(int *) data;
    return true;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]); return 2; }
    llama_log_set(capture_log, NULL);
    llama_backend_init();
    g_model = llama_model_load_from_file(argv[1], llama_model_default_params());
    CHECK(g_model != NULL, "load: %s", g_log);
    if (!g_model) return finish("decode");
    g_vocab = llama_vocab_n_tokens(llama_model_get_vocab(g_model));
    const llama_token A[6] = {11, 200, 37, 401, 5, 99};
    const llama_token B[6] = {300, 7, 150, 42, 480, 3};

    // --- each sequence alone
    float alone[2][6][512];
    for (int s = 0; s < 2; s++) {
        struct llama_context * c = new_ctx(256, 1);
        struct llama_batch b = llama_batch_init(6, 0, 1);
        b.n_tokens = 6;
        for (int i = 0; i < 6; i++) batch_put(&b, i, s ? B[i] : A[i], i, 0, true);
        CHECK(llama_decode(c, b) == 0, "decode alone: %s", g_log);
        for (int i = 0; i < 6; i++) memcpy(alone[s][i], llama_get_logits_ith(c, i), sizeof(float) * (size_t) g_vocab);
        llama_batch_free(b);
        llama_free(c);
    }

    // --- both in one batch, interleaved
    struct llama_context * ctx = new_ctx(256, 2);
    struct llama_batch b = llama_batch_init(12, 0, 2);
    b.n_tokens = 12;
    for (int i = 0; i < 6; i++) {
        batch_put(&b, 2 * i, A[i], i, 0, true);
        batch_put(&b, 2 * i + 1, B[i], i, 1, true);
    }
    CHECK(llama_decode(ctx, b) == 0, "decode together: %s", g_log);
    float worst = 0;
    for (int i = 0; i < 6; i++) {
        float d0 = max_rel_diff(alone[0][i], llama_get_logits_ith(ctx, 2 * i), g_vocab);
        float d1 = max_rel_diff(alone[1][i], llama_get_logits_ith(ctx, 2 * i + 1), g_vocab);
        if (d0 > worst) worst = d0;
        if (d1 > worst) worst = d1;
    }
    CHECK(worst <= 1e-5f, "two sequences together equal each alone (max rel diff %g)", worst);
    CHECK(llama_memory_seq_pos_max(llama_get_memory(ctx), 0) == 5 && llama_memory_seq_pos_max(llama_get_memory(ctx), 1) == 5, "pos_max");

    // --- logits getters
    CHECK(llama_get_logits(ctx) == llama_get_logits_ith(ctx, 0), "llama_get_logits is row 0");
    CHECK(llama_get_logits_ith(ctx, -1) == llama_get_logits_ith(ctx, 11), "-1 is the last output");
    log_clear();
    CHECK(llama_get_logits_ith(ctx, 12) == NULL && log_has("invalid logits id"), "index past the batch: %s", g_log);
    CHECK(llama_get_logits_ith(ctx, -13) == NULL, "negative index past the outputs");
    // Only some outputs requested: others give NULL with a message.
    llama_memory_t mem = llama_get_memory(ctx);
    llama_memory_clear(mem, true);
    b.n_tokens = 3;
    batch_put(&b, 0, 1, 0, 0, false);
    batch_put(&b, 1, 2, 1, 0, true);
    batch_put(&b, 2, 3, 2, 0, false);
    CHECK(llama_decode(ctx, b) == 0, "partial outputs");
    CHECK(llama_get_logits_ith(ctx, 1) != NULL && llama_get_logits_ith(ctx, -1) == llama_get_logits_ith(ctx, 1), "output row");
    log_clear();
    CHECK(llama_get_logits_ith(ctx, 0) == NULL && log_has("batch.logits[0] != true"), "not an output: %s", g_log);

    // --- bad batches: -1, and the KV cache unchanged
    const llama_pos before = llama_memory_seq_pos_max(mem, 0);
    struct { const char * what; llama_token tok; llama_pos pos; llama_seq_id seq; const char * msg; } bad[] = {
        {"token -1", -1, 3, 0, "invalid token"},
        {"token n_vocab", (llama_token) g_vocab, 3, 0, "invalid token"},
        {"token INT32_MAX", INT32_MAX, 3, 0, "invalid token"},
        {"seq_id n_seq_max", 1, 3, 2, "seq_id"},
        {"seq_id -1", 1, 3, -1, "seq_id"},
        {"position gap", 1, 5, 0, "Y = X + 1"},
        {"position negative", 1, -4, 0, "pos"},
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        b.n_tokens = 1;
        batch_put(&b, 0, bad[k].tok, bad[k].pos, bad[k].seq, true);
        log_clear();
        CHECK(llama_decode(ctx, b) == -1, "%s refused", bad[k].what);
        CHECK(log_has(bad[k].msg), "%s: message %s", bad[k].what, g_log);
        CHECK(llama_memory_seq_pos_max(mem, 0) == before, "%s: KV unchanged", bad[k].what);
    }
    b.n_tokens = 2;
    batch_put(&b, 0, 1, 4, 0, true);
    batch_put(&b, 1, 1, 3, 0, true);
    CHECK(llama_decode(ctx, b) == -1 && llama_memory_seq_pos_max(mem, 0) == before, "decreasing positions refused");
    b.n_tokens = 0;
    CHECK(llama_decode(ctx, b) == -1, "n_tokens 0");
    b.n_tokens = -3;
    CHECK(llama_decode(ctx, b) == -1, "n_tokens negative");
    struct llama_batch big = llama_batch_init(65, 0, 1);
    big.n_tokens = 65;
    for (int i = 0; i < 65; i++) batch_put(&big, i, 1, 3 + i, 0, false);
    log_clear();
    CHECK(llama_decode(ctx, big) == -1 && log_has("n_batch"), "n_tokens above n_batch: %s", g_log);
    llama_batch_free(big);
    CHECK(llama_decode(NULL, b) == -1, "NULL ctx");
    b.n_tokens = 1;
    llama_token * tok = b.token;
    b.token = NULL;
    CHECK(llama_decode(ctx, b) == -1, "no tokens and no embeddings");
    b.token = tok;

    // --- llama_batch_get_one: positions continue from the cache
    llama_token one[2] = {7, 8};
    CHECK(llama_decode(ctx, llama_batch_get_one(one, 2)) == 0, "get_one decode: %s", g_log);
    CHECK(llama_memory_seq_pos_max(mem, 0) == before + 2, "auto positions continue");

    // --- a full cache: 1, nothing changed
    struct llama_context * small = new_ctx(256, 1);
    int n_ctx = (int) llama_n_ctx(small);
    struct llama_batch fill = llama_batch_init(64, 0, 1);
    int pos = 0;
    while (pos + 64 <= n_ctx) {
        fill.n_tokens = 64;
        for (int i = 0; i < 64; i++) batch_put(&fill, i, 1, pos + i, 0, i == 63);
        CHECK(llama_decode(small, fill) == 0, "fill at %d", pos);
        pos += 64;
    }
    fill.n_tokens = 1;
    batch_put(&fill, 0, 1, pos, 0, true);
    llama_memory_t smem = llama_get_memory(small);
    CHECK(llama_decode(small, fill) == 1, "full cache gives 1");
    CHECK(llama_memory_seq_pos_max(smem, 0) == pos - 1, "full cache: KV unchanged");
    // seq_rm frees room; decoding goes on.
    CHECK(llama_memory_seq_rm(smem, 0, pos - 8, -1), "seq_rm tail");
    CHECK(llama_memory_seq_pos_max(smem, 0) == pos - 9, "pos_max after seq_rm");
    batch_put(&fill, 0, 1, pos - 8, 0, true);
    CHECK(llama_decode(small, fill) == 0, "decode after seq_rm");
    llama_batch_free(fill);
    llama_free(small);

    // --- abort: 2
    struct llama_context * ab = new_ctx(256, 1);
    int asked = 0;
    llama_set_abort_callback(ab, abort_now, &asked);
    b.n_tokens = 1;
    batch_put(&b, 0, 1, 0, 0, true);
    CHECK(llama_decode(ab, b) == 2 && asked == 1, "abort gives 2 (asked %d)", asked);
    llama_set_abort_callback(ab, NULL, NULL);
    CHECK(llama_decode(ab, b) == 0, "usable after an abort");
    llama_free(ab);

    // --- memory: cp, keep, pos_min, div, add (with re-rotation), clear
    llama_memory_clear(mem, true);
    CHECK(llama_memory_seq_pos_max(mem, 0) == -1 && llama_memory_seq_pos_min(mem, 0) == -1, "clear");
    b.n_tokens = 6;
    for (int i = 0; i < 6; i++) batch_put(&b, i, A[i], 10 + i, 0, i == 5);
    llama_decode(ctx, b);  // positions 10..15
    CHECK(llama_memory_seq_pos_min(mem, 0) == 10, "pos_min");
    llama_memory_seq_cp(mem, 0, 1, -1, -1);
    CHECK(llama_memory_seq_pos_max(mem, 1) == 15, "seq_cp");
    llama_memory_seq_keep(mem, 1);
    CHECK(llama_memory_seq_pos_max(mem, 0) == -1 && llama_memory_seq_pos_max(mem, 1) == 15, "seq_keep");
    CHECK(llama_memory_can_shift(mem), "can_shift");
    llama_memory_seq_add(mem, 1, -1, -1, -10);  // now positions 0..5
    CHECK(llama_memory_seq_pos_min(mem, 1) == 0 && llama_memory_seq_pos_max(mem, 1) == 5, "seq_add");
    b.n_tokens = 1;
    batch_put(&b, 0, B[0], 6, 1, true);
    CHECK(llama_decode(ctx, b) == 0, "decode after a shift");
    // The same, computed at those positions from the start.
    struct llama_context * fresh = new_ctx(256, 2);
    b.n_tokens = 7;
    for (int i = 0; i < 6; i++) batch_put(&b, i, A[i], i, 1, false);
    batch_put(&b, 6, B[0], 6, 1, true);
    CHECK(llama_decode(fresh, b) == 0, "fresh decode");
    // K re-rotated in place is rounded to f16 once more than K computed at
    // its position, so the two agree closely, not bit for bit.
    float d = scaled_diff(llama_get_logits_ith(fresh, 6), llama_get_logits_ith(ctx, 0), g_vocab);
    CHECK(argmax(llama_get_logits_ith(fresh, 6), g_vocab) == argmax(llama_get_logits_ith(ctx, 0), g_vocab),
          "a shifted cache predicts as a fresh one");
    CHECK(d < 1e-3f, "a shifted cache attends as a fresh one (scaled diff %g)", d);
    llama_free(fresh);
    llama_memory_seq_div(mem, 1, -1, -1, 2);
    CHECK(llama_memory_seq_pos_max(mem, 1) == 3, "seq_div: %d", llama_memory_seq_pos_max(mem, 1));
    // Shifted to INT32_MAX a cell stays, past it a cell goes (the reference's
    // addition wraps negative, which drops it); no position follows INT32_MAX
    // (found by the decode fuzz target: the automatic next position overflowed)
    llama_memory_seq_add(mem, 1, -1, -1, INT32_MAX);  // 0 -> INT32_MAX; 1..3 dropped
    CHECK(llama_memory_seq_pos_min(mem, 1) == INT32_MAX && llama_memory_seq_pos_max(mem, 1) == INT32_MAX,
          "seq_add to INT32_MAX: %d..%d", llama_memory_seq_pos_min(mem, 1), llama_memory_seq_pos_max(mem, 1));
    {
        llama_token t0 = B[0];
        int32_t n1 = 1;
        llama_seq_id s1 = 1, * s1p = &s1;
        int8_t out1 = 1;
        struct llama_batch auto_pos = { 1, &t0, NULL, NULL, &n1, &s1p, &out1 };
        log_clear();
        CHECK(llama_decode(ctx, auto_pos) == -1 && log_has("no position after 2147483647"),
              "automatic position after INT32_MAX: %s", g_log);
    }
    llama_memory_seq_keep(mem, 0);
    CHECK(llama_memory_seq_pos_max(mem, 1) == -1, "seq_keep(0) empties seq 1: %d", llama_memory_seq_pos_max(mem, 1));
    log_clear();
    CHECK(llama_memory_seq_pos_max(mem, 99) == -1 && log_has("out of range"), "bad seq id in memory API");
    // (NULL memory is an empty one, as the reference: an encoder's context has none)
    CHECK(llama_memory_seq_rm(NULL, 0, -1, -1) && llama_memory_seq_pos_max(NULL, 0) == -1 && !llama_memory_can_shift(NULL), "NULL memory");

    // --- embeddings: per token (pooling NONE), then MEAN / CLS / LAST pools
    int n_embd = llama_model_n_embd(g_model);
    float tok_embd[6][64];
    {
        struct llama_context_params cp = llama_context_default_params();
        cp.embeddings = true;
        cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
        struct llama_context * e = llama_init_from_model(g_model, cp);
        CHECK(e != NULL && llama_pooling_type(e) == LLAMA_POOLING_TYPE_NONE, "embeddings context");
        b.n_tokens = 6;
        for (int i = 0; i < 6; i++) batch_put(&b, i, A[i], i, 0, true);
        CHECK(llama_decode(e, b) == 0, "decode for embeddings");
        for (int i = 0; i < 6; i++) {
            const float * v = llama_get_embeddings_ith(e, i);
            CHECK(v != NULL, "embedding %d", i);
            if (v) memcpy(tok_embd[i], v, sizeof(float) * (size_t) n_embd);
        }
        CHECK(llama_get_embeddings(e) == llama_get_embeddings_ith(e, 0), "llama_get_embeddings is row 0");
        CHECK(llama_get_embeddings_seq(e, 0) == NULL, "no pooled embedding with pooling NONE");
        llama_free(e);
    }
    enum llama_pooling_type pools[3] = {LLAMA_POOLING_TYPE_MEAN, LLAMA_POOLING_TYPE_CLS, LLAMA_POOLING_TYPE_LAST};
    for (int k = 0; k < 3; k++) {
        struct llama_context_params cp = llama_context_default_params();
        cp.embeddings = true;
        cp.pooling_type = pools[k];
        struct llama_context * e = llama_init_from_model(g_model, cp);
        b.n_tokens = 6;
        for (int i = 0; i < 6; i++) batch_put(&b, i, A[i], i, 0, i == 5);  // outputs forced to all
        CHECK(llama_decode(e, b) == 0, "pooled decode");
        const float * v = llama_get_embeddings_seq(e, 0);
        CHECK(v != NULL, "pooled embedding of seq 0");
        float want[64];
        for (int d = 0; d < n_embd; d++) {
            float m = 0;
            for (int i = 0; i < 6; i++) m += tok_embd[i][d];
            want[d] = k == 0 ? m / 6 : k == 1 ? tok_embd[0][d] : tok_embd[5][d];
        }
        CHECK(v && max_rel_diff(want, v, n_embd) < 1e-5f, "pooling %d", (int) pools[k]);
        CHECK(llama_get_embeddings_seq(e, 1) == NULL, "no embedding for an absent sequence");
        llama_free(e);
    }
    // RANK on a model without a classifier head: the reference's context,
    // whose score is the first value of the last token's row
    struct llama_context_params rank = llama_context_default_params();
    rank.pooling_type = LLAMA_POOLING_TYPE_RANK;
    rank.embeddings = true;
    struct llama_context * rc = llama_init_from_model(g_model, rank);
    CHECK(rc != NULL && llama_pooling_type(rc) == LLAMA_POOLING_TYPE_RANK, "RANK pooling on a decoder");
    if (rc) {
        llama_token two[2] = {1, 2};
        const float * s = llama_decode(rc, llama_batch_get_one(two, 2)) == 0 ? llama_get_embeddings_seq(rc, 0) : NULL;
        const float * last = llama_get_embeddings_ith(rc, 1);
        CHECK(s && last && s[0] == last[0], "RANK without a head: the last token's first value");
        llama_free(rc);
    }
    rank.pooling_type = (enum llama_pooling_type) 5;
    log_clear();
    CHECK(llama_init_from_model(g_model, rank) == NULL && log_has("pooling_type"), "pooling type 5 refused: %s", g_log);
    struct llama_context_params badkv = llama_context_default_params();
    badkv.type_k = GGML_TYPE_Q4_0;
    log_clear();
    CHECK(llama_init_from_model(g_model, badkv) == NULL && log_has("type_k"), "Q4_0 K cache refused: %s", g_log);
    badkv.type_k = GGML_TYPE_F32;
    badkv.type_v = GGML_TYPE_F32;
    struct llama_context * f32c = llama_init_from_model(g_model, badkv);
    b.n_tokens = 6;
    for (int i = 0; i < 6; i++) batch_put(&b, i, A[i], i, 0, true);
    CHECK(f32c && llama_decode(f32c, b) == 0, "F32 KV cache decodes");
    CHECK(f32c && scaled_diff(alone[0][5], llama_get_logits_ith(f32c, 5), g_vocab) < 1e-2f, "F32 KV close to F16 KV");
    llama_free(f32c);

    // --- causal attention off: the first token sees the later ones
    struct llama_context * nc = new_ctx(256, 1);
    CHECK(llama_get_causal_attn(nc), "causal by default");
    llama_set_causal_attn(nc, false);
    CHECK(!llama_get_causal_attn(nc), "causal off");
    b.n_tokens = 6;
    for (int i = 0; i < 6; i++) batch_put(&b, i, A[i], i, 0, true);
    CHECK(llama_decode(nc, b) == 0, "non-causal decode");
    CHECK(max_rel_diff(alone[0][0], llama_get_logits_ith(nc, 0), g_vocab) > 1e-3f, "non-causal differs at token 0");
    llama_free(nc);

    // --- the extended batch API and llama_process
    {
        struct llama_context * xc = new_ctx(256, 2);
        struct llama_batch_ext * xb = llama_batch_ext_init(xc);
        CHECK(xb != NULL, "batch_ext_init");
        for (int i = 0; i < 6; i++) {
            int idx = llama_batch_ext_add_token(xb, 0, A[i]);
            CHECK(idx == i, "add_token index %d", idx);
            llama_pos p = i;
            CHECK(llama_batch_ext_set_pos(xb, idx, &p), "set_pos");
            CHECK(llama_batch_ext_set_output_logits(xb, idx, true), "set_output");
        }
        CHECK(llama_batch_ext_add_token(xb, 0, -1) == -2 && llama_batch_ext_add_token(xb, 0, g_vocab) == -2, "bad id: -2");
        CHECK(llama_batch_ext_add_token(xb, 5, 1) == -3, "bad sequence: -3");
        CHECK(!llama_batch_ext_set_pos(xb, 99, NULL) && !llama_batch_ext_add_seq(xb, 99, 0), "bad index: false");
        CHECK(llama_process(xc, LLAMA_PROCESS_TYPE_DECODE, xb) == 0, "llama_process decode: %s", g_log);
        CHECK(max_rel_diff(alone[0][5], llama_get_logits_ith(xc, 5), g_vocab) <= 1e-5f, "same logits as llama_decode");
        CHECK(llama_process(xc, LLAMA_PROCESS_TYPE_ENCODE, xb) == -1, "encode: -1");
        llama_batch_ext_clear(xb);
        CHECK(llama_process(xc, LLAMA_PROCESS_TYPE_DECODE, xb) == -1, "empty batch: -1");
        int full = 0;
        while (llama_batch_ext_add(xb, 0) >= 0) full++;
        CHECK(full == (int) llama_n_batch(xc), "full at n_batch (%d)", full);
        llama_batch_ext_free(xb);
        llama_batch_ext_free(NULL);
        llama_free(xc);
    }

    // --- embedding inputs through the extended batch: the same logits as
    // llama_decode of a llama_batch carrying the same rows in embd
    {
        const int ne = llama_model_n_embd(g_model);
        float * rows = malloc(sizeof(float) * (size_t) (6 * ne));
        uint32_t x = 7;
        for (int i = 0; i < 6 * ne; i++) {
            x = x * 1664525u + 1013904223u;
            rows[i] = (float) ((x >> 8) & 0xffff) / 65536.0f - 0.5f;
        }
        struct llama_context * ec = new_ctx(256, 1);
        struct llama_batch eb = llama_batch_init(6, ne, 1);
        eb.n_tokens = 6;
        memcpy(eb.embd, rows, sizeof(float) * (size_t) (6 * ne));
        for (int i = 0; i < 6; i++) {
            eb.pos[i] = i;
            eb.n_seq_id[i] = 1;
            eb.seq_id[i][0] = 0;
            eb.logits[i] = i == 5;
        }
        CHECK(llama_decode(ec, eb) == 0, "decode of embeddings: %s", g_log);
        float * want = malloc(sizeof(float) * (size_t) g_vocab);
        const float * got = llama_get_logits_ith(ec, 5);
        if (got) memcpy(want, got, sizeof(float) * (size_t) g_vocab);
        llama_batch_free(eb);
        llama_free(ec);

        struct llama_context * xc = new_ctx(256, 1);
        struct llama_batch_ext * xb = llama_batch_ext_init(xc);
        for (int i = 0; i < 6; i++) {
            struct llama_embd e = { rows + i * ne, 1, (size_t) ne };
            int idx = llama_batch_ext_add_embd(xb, 0, e);
            CHECK(idx == i, "add_embd index %d: %s", idx, g_log);
            llama_pos p = i;
            CHECK(llama_batch_ext_set_pos(xb, idx, &p), "set_pos (embd)");
            CHECK(llama_batch_ext_set_output_logits(xb, idx, i == 5), "set_output (embd)");
        }
        CHECK(llama_process(xc, LLAMA_PROCESS_TYPE_DECODE, xb) == 0, "llama_process of embeddings: %s", g_log);
        got = llama_get_logits_ith(xc, 5);
        CHECK(got && memcmp(got, want, sizeof(float) * (size_t) g_vocab) == 0, "ext embeddings: the same logits as llama_batch.embd");
        // refused: a row of the wrong size (the token stays added, as in the
        // reference), NULL data, a second embedding for a token, a bad index
        struct llama_embd wrong = { rows, 1, (size_t) ne - 1 };
        CHECK(llama_batch_ext_add_embd(xb, 0, wrong) == -2 && strstr(g_log, "size mismatch"), "wrong size: -2 (%s)", g_log);
        struct llama_embd null_data = { NULL, 1, (size_t) ne };
        struct llama_embd ok_row = { rows, 1, (size_t) ne };
        CHECK(!llama_batch_ext_set_embd_token(xb, 6, null_data), "NULL data: false");
        CHECK(!llama_batch_ext_set_embd_token(xb, 0, ok_row) && strstr(g_log, "already set"), "second embedding: false");
        CHECK(!llama_batch_ext_set_embd_token(xb, 99, ok_row) && !llama_batch_ext_set_embd_token(xb, -1, ok_row), "bad index: false");
        CHECK(!llama_batch_ext_set_embd_state(xb, 0, ok_row), "state embedding: false (as the reference)");
        // token 6 has neither: the batch is refused and the cache is unchanged
        llama_pos p6 = 6;
        llama_batch_ext_set_pos(xb, 6, &p6);
        llama_pos before = llama_memory_seq_pos_max(llama_get_memory(xc), 0);
        CHECK(llama_process(xc, LLAMA_PROCESS_TYPE_DECODE, xb) < 0 && strstr(g_log, "no embedding"), "a token without embedding: refused (%s)", g_log);
        CHECK(llama_memory_seq_pos_max(llama_get_memory(xc), 0) == before, "refused batch leaves the cache");
        llama_batch_ext_free(xb);
        llama_free(xc);
        free(want);
        free(rows);
    }

    // --- perf counters and encode
    struct llama_context_params pp = llama_context_default_params();
    pp.no_perf = false;
    struct llama_context * pc = llama_init_from_model(g_model, pp);
    b.n_tokens = 6;
    for (int i = 0; i < 6; i++) batch_put(&b, i, A[i], i, 0, i == 5);
    llama_decode(pc, b);
    for (int i = 0; i < 3; i++) {
        b.n_tokens = 1;
        batch_put(&b, 0, B[i], 6 + i, 0, true);
        llama_decode(pc, b);
    }
    struct llama_perf_context_data pd = llama_perf_context(pc);
    CHECK(pd.n_p_eval == 6 && pd.n_eval == 3 && pd.t_p_eval_ms > 0 && pd.t_eval_ms > 0, "perf: %d prompt, %d eval",
          pd.n_p_eval, pd.n_eval);
    llama_perf_context_print(pc);
    llama_perf_context_reset(pc);
    pd = llama_perf_context(pc);
    CHECK(pd.n_p_eval == 1 && pd.n_eval == 1 && pd.t_eval_ms == 0, "perf reset (counts read as at least 1)");
    log_clear();
    CHECK(llama_encode(pc, b) == -1 && log_has("encoder"), "encode on a decoder-only model: %s", g_log);
    // training is refused with a message (README, "Training"), and the
    // context still decodes as before
    struct llama_opt_params op = { 0 };
    op.param_filter = llama_opt_param_filter_all;
    log_clear();
    llama_opt_init(pc, g_model, op);
    CHECK(log_has("llama_opt_init") && log_has("training is not supported"), "opt_init refused: %s", g_log);
    log_clear();
    llama_opt_epoch(pc, NULL, NULL, NULL, 0, NULL, NULL);
    CHECK(log_has("llama_opt_epoch") && log_has("training is not supported"), "opt_epoch refused: %s", g_log);
    llama_opt_init(NULL, NULL, op);
    llama_opt_epoch(NULL, NULL, NULL, NULL, 0, NULL, NULL);
    b.n_tokens = 1;
    batch_put(&b, 0, A[0], 9, 0, true);
    CHECK(llama_decode(pc, b) == 0 && llama_get_logits_ith(pc, 0) != NULL, "decode after the refusals: %s", g_log);
    llama_free(pc);

    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(g_model);
    llama_backend_free();
    return finish("decode");
}
