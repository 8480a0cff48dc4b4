// The state API from C: sizes and short buffers, round trips through
// buffers, session files and sequence files (the deprecated names too)
// continuing with bit-identical logits, ON_DEVICE and PARTIAL_ONLY, and
// every way a restore can fail: another model, a too-small context, every
// truncation of a small state, flipped magic/version, impossible sizes,
// trailing bytes, bad sequence ids, NULL arguments. A failed restore must
// leave the context as it was (its saved state is compared before and after).
//
// usage: test_state SMOLLM2.gguf GEMMA3.gguf TMPDIR
// STATE_QUICK=1 (for valgrind): every 61st truncation length past the first
// 256 bytes, and no 300-token context.
#include "decode_util.h"
#include "test_util.h"

#include <stdint.h>

static struct llama_model * g_smol;
static const char * g_dir;
static int g_quick;

static struct llama_context * new_ctx(struct llama_model * model, uint32_t n_ctx) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = 512;
    cp.n_ubatch = 512;
    cp.n_threads = 2;
    cp.n_threads_batch = 2;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "cannot create a context: %s\n", g_log);
        exit(1);
    }
    return ctx;
}

static void decode(struct llama_context * ctx, const llama_token * toks, int n, llama_pos pos0, llama_seq_id seq) {
    int rc = decode_tokens(ctx, toks, n, pos0, seq);
    if (rc != 0) {
        fprintf(stderr, "llama_decode returned %d: %s\n", rc, g_log);
        exit(1);
    }
}

// The logits of `tok` decoded after sequence 0's last position (a copy).
static float * next_logits(struct llama_context * ctx, llama_token tok) {
    llama_pos pos = llama_memory_seq_pos_max(llama_get_memory(ctx), 0) + 1;
    decode(ctx, &tok, 1, pos, 0);
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx)));
    float * out = malloc(sizeof(float) * (size_t) n_vocab);
    memcpy(out, llama_get_logits_ith(ctx, -1), sizeof(float) * (size_t) n_vocab);
    return out;
}

static int same_logits(const float * a, const float * b) {
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(g_smol));
    return memcmp(a, b, sizeof(float) * (size_t) n_vocab) == 0;
}

// The whole state of ctx (malloc'd), its size in *n.
static uint8_t * snapshot(struct llama_context * ctx, size_t * n) {
    *n = llama_state_get_size(ctx);
    uint8_t * buf = malloc(*n);
    if (llama_state_get_data(ctx, buf, *n) != *n) {
        fprintf(stderr, "llama_state_get_data failed: %s\n", g_log);
        exit(1);
    }
    return buf;
}

// ctx's state equals the bytes `want` (nothing changed).
static int unchanged(struct llama_context * ctx, const uint8_t * want, size_t n_want) {
    size_t n;
    uint8_t * now = snapshot(ctx, &n);
    int same = n == n_want && memcmp(now, want, n) == 0;
    free(now);
    return same;
}

static void write_file(const char * path, const void * data, size_t n) {
    FILE * f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
}

static uint8_t * read_bytes(const char * path, size_t * n) {
    FILE * f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    *n = (size_t) ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t * buf = malloc(*n + 1);
    if (fread(buf, 1, *n, f) != *n) exit(1);
    fclose(f);
    return buf;
}

static void path_of(char * out, size_t cap, const char * name) {
    snprintf(out, cap, "%s/%s", g_dir, name);
}

static void put_u32(uint8_t * p, uint32_t v) {
    memcpy(p, &v, 4);
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s SMOLLM2.gguf GEMMA3.gguf TMPDIR\n", argv[0]);
        return 2;
    }
    g_dir = argv[3];
    g_quick = getenv("STATE_QUICK") != NULL;
    llama_log_set(capture_log, NULL);
    llama_backend_init();
    g_smol = llama_model_load_from_file(argv[1], llama_model_default_params());
    struct llama_model * gemma = llama_model_load_from_file(argv[2], llama_model_default_params());
    CHECK(g_smol && gemma, "models load: %s", g_log);
    if (!g_smol || !gemma) return finish("state");
    const struct llama_vocab * vocab = llama_model_get_vocab(g_smol);
    llama_token prompt[64];
    const char * text = "The quick brown fox jumps over the lazy dog";
    int n_prompt = llama_tokenize(vocab, text, (int32_t) strlen(text), prompt, 64, 0, 0);
    CHECK(n_prompt >= 8, "tokenized %d", n_prompt);
    char path[4096];

    // --- sizes and buffers
    struct llama_context * a = new_ctx(g_smol, 256);
    CHECK(llama_state_get_size(a) == 4 + 5 + 4 + 4, "an empty state: arch name, one empty stream (%zu)", llama_state_get_size(a));
    decode(a, prompt, n_prompt, 0, 0);
    size_t n;
    uint8_t * state = snapshot(a, &n);
    // arch, n_stream, cell_count, cells, v_trans, n_layer, 30 layers x (K, V) x (type, row size, rows of 384 bytes)
    CHECK(n == 13 + 4 + (size_t) n_prompt * 12 + 8 + 60 * (12 + (size_t) n_prompt * 384), "state size %zu", n);
    CHECK(llama_get_state_size(a) == n, "llama_get_state_size");
    uint8_t * big = calloc(n + 100, 1);
    CHECK(llama_state_get_data(a, big, n + 100) == n && memcmp(big, state, n) == 0, "a larger buffer gets the same bytes");
    memset(big, 0, n + 100);
    CHECK(llama_copy_state_data(a, big) == n && memcmp(big, state, n) == 0, "llama_copy_state_data");
    log_clear();
    memset(big, 0x5a, n);
    CHECK(llama_state_get_data(a, big, n - 1) == 0 && log_has("too small"), "a short buffer: 0 and a message: %s", g_log);
    CHECK(big[0] == 0x5a, "nothing written to a short buffer");
    CHECK(llama_state_get_data(a, big, 0) == 0, "a zero-size buffer");
    CHECK(llama_state_get_data(a, NULL, n) == 0, "a NULL buffer");
    CHECK(llama_state_get_size(NULL) == 0 && llama_state_get_data(NULL, big, n) == 0 && llama_state_set_data(NULL, state, n) == 0, "NULL ctx");

    // --- buffer round trip: continuing gives the logits of continuing
    // without saving (bit-identical), measured on a second context
    struct llama_context * direct = new_ctx(g_smol, 256);
    decode(direct, prompt, n_prompt, 0, 0);
    float * want = next_logits(direct, 1234);
    llama_free(direct);
    struct llama_context * b = new_ctx(g_smol, 256);
    CHECK(llama_state_set_data(b, state, n) == n, "llama_state_set_data reads the whole state: %s", g_log);
    CHECK(unchanged(b, state, n), "the restored context saves the same bytes");
    CHECK(llama_memory_seq_pos_max(llama_get_memory(b), 0) == n_prompt - 1, "positions restored");
    float * got = next_logits(b, 1234);
    CHECK(same_logits(want, got), "continuing from the restored state: bit-identical logits");
    free(got);
    struct llama_context * c = new_ctx(g_smol, 256);
    memcpy(big, state, n);
    CHECK(llama_state_set_data(c, big, n + 100) == n, "trailing bytes in the buffer are not read");
    CHECK(llama_set_state_data(c, state) == n, "llama_set_state_data reads exactly the state");
    got = next_logits(c, 1234);
    CHECK(same_logits(want, got), "llama_set_state_data: bit-identical logits");
    free(got);
    llama_free(c);

    llama_free(b);

    // --- session files
    path_of(path, sizeof path, "session.bin");
    CHECK(llama_state_save_file(a, path, prompt, (size_t) n_prompt), "llama_state_save_file: %s", g_log);
    size_t n_file;
    uint8_t * file = read_bytes(path, &n_file);
    CHECK(n_file == 12 + 4 * (size_t) n_prompt + n, "session size %zu", n_file);
    uint32_t magic = 0, version = 0;
    memcpy(&magic, file, 4);
    memcpy(&version, file + 4, 4);
    CHECK(magic == LLAMA_SESSION_MAGIC && version == LLAMA_SESSION_VERSION, "magic %08x version %u", magic, version);
    CHECK(memcmp(file + 12 + 4 * n_prompt, state, n) == 0, "the session file holds the state after the tokens");
    llama_token toks[64];
    size_t n_toks = 0;
    b = new_ctx(g_smol, 256);
    CHECK(llama_state_load_file(b, path, toks, 64, &n_toks) && n_toks == (size_t) n_prompt && memcmp(toks, prompt, 4 * n_toks) == 0,
          "llama_state_load_file: %s", g_log);
    got = next_logits(b, 1234);
    CHECK(same_logits(want, got), "continuing from the session file: bit-identical logits");
    free(got);
    llama_free(b);
    path_of(path, sizeof path, "session-old.bin");
    b = new_ctx(g_smol, 256);
    CHECK(llama_state_set_data(b, state, n) == n, "restore");
    CHECK(llama_save_session_file(b, path, prompt, (size_t) n_prompt), "llama_save_session_file");
    llama_free(b);
    b = new_ctx(g_smol, 256);
    CHECK(llama_load_session_file(b, path, toks, 64, &n_toks) && n_toks == (size_t) n_prompt, "llama_load_session_file");
    CHECK(unchanged(b, state, n), "the deprecated pair round-trips");
    llama_free(b);

    // --- sequences: sizes, sequence files, another destination sequence
    size_t n_seq = llama_state_seq_get_size(a, 0);
    uint8_t * seq = malloc(n_seq);
    CHECK(llama_state_seq_get_data(a, seq, n_seq, 0) == n_seq, "llama_state_seq_get_data");
    uint32_t io_magic;
    memcpy(&io_magic, seq, 4);
    CHECK(io_magic == 0xaf143cd8u, "the sequence state's magic");
    CHECK(llama_state_seq_get_data(a, seq, n_seq - 1, 0) == 0, "a short buffer: 0");
    CHECK(llama_state_seq_get_size(a, 1) == 0 && llama_state_seq_get_size(a, -2) == 0, "seq ids out of range: 0");
    CHECK(llama_state_seq_get_size(a, -1) == n - 9 + 8, "seq_id -1: the whole memory");
    b = new_ctx(g_smol, 256);
    CHECK(llama_state_seq_set_data(b, seq, n_seq, 0) == n_seq, "llama_state_seq_set_data: %s", g_log);
    CHECK(llama_state_seq_set_data(b, seq, n_seq, 1) == 0, "a destination out of range: 0");
    llama_free(b);
    path_of(path, sizeof path, "seq.bin");
    size_t n_seqfile = llama_state_seq_save_file(a, path, 0, prompt, (size_t) n_prompt);
    CHECK(n_seqfile == 12 + 4 * (size_t) n_prompt + n_seq - 8, "llama_state_seq_save_file returns the file size (%zu)", n_seqfile);
    b = new_ctx(g_smol, 256);
    n_toks = 0;
    CHECK(llama_state_seq_load_file(b, path, 0, NULL, 0, &n_toks) == 12 && n_toks == (size_t) n_prompt,
          "tokens_out NULL: the token count only");
    CHECK(llama_memory_seq_pos_max(llama_get_memory(b), 0) == -1, "and no state loaded");
    CHECK(llama_state_seq_load_file(b, path, 0, toks, 64, &n_toks) == n_seqfile && n_toks == (size_t) n_prompt, "llama_state_seq_load_file: %s",
          g_log);
    got = next_logits(b, 1234);
    CHECK(same_logits(want, got), "continuing from the sequence file: bit-identical logits");
    free(got);
    llama_free(b);

    // --- ON_DEVICE: the caller's buffer gets the metadata, the context keeps the rest
    b = new_ctx(g_smol, 256);
    CHECK(llama_state_set_data(b, state, n) == n, "restore");
    size_t n_dev = llama_state_seq_get_size_ext(b, 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE);
    CHECK(n_dev == 8 + 8 + (size_t) n_prompt * 12 + 8 + 60 * 12, "ON_DEVICE size: metadata only (%zu)", n_dev);
    uint8_t * dev = malloc(n_dev);
    CHECK(llama_state_seq_get_data_ext(b, dev, n_dev, 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE) == n_dev, "ON_DEVICE get");
    c = new_ctx(g_smol, 256);
    log_clear();
    CHECK(llama_state_seq_set_data_ext(c, dev, n_dev, 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE) == 0 && log_has("no on-device state"),
          "ON_DEVICE in a context that kept nothing: 0 and a message: %s", g_log);
    llama_free(c);
    llama_memory_seq_rm(llama_get_memory(b), 0, -1, -1);
    CHECK(llama_memory_seq_pos_max(llama_get_memory(b), 0) == -1, "sequence removed");
    CHECK(llama_state_seq_set_data_ext(b, dev, n_dev, 0, LLAMA_STATE_SEQ_FLAGS_ON_DEVICE) == n_dev, "ON_DEVICE set: %s", g_log);
    got = next_logits(b, 1234);
    CHECK(same_logits(want, got), "continuing after an ON_DEVICE restore: bit-identical logits");
    free(got);
    free(dev);
    CHECK(llama_state_seq_get_size_ext(b, 0, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) == llama_state_seq_get_size(b, 0),
          "PARTIAL_ONLY: no SWA cache on llama, the whole sequence");
    llama_free(b);

    // --- another model: refused, nothing changed
    struct llama_context * g = new_ctx(gemma, 256);
    llama_token gt[2] = { 2, 818 };
    decode(g, gt, 2, 0, 0);
    size_t n_g;
    uint8_t * g_state = snapshot(g, &n_g);
    CHECK(llama_state_seq_get_size_ext(g, 0, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) < llama_state_seq_get_size(g, 0),
          "PARTIAL_ONLY on gemma3: the SWA cache alone");
    log_clear();
    CHECK(llama_state_set_data(g, state, n) == 0 && log_has("wrong model arch: 'llama' instead of 'gemma3'"), "another model's state: %s", g_log);
    path_of(path, sizeof path, "session.bin");
    CHECK(!llama_state_load_file(g, path, toks, 64, &n_toks), "another model's session file");
    log_clear();
    CHECK(llama_state_seq_set_data(g, seq, n_seq, 0) == 0 && log_has("mismatched layer count"), "another model's sequence: %s", g_log);
    CHECK(unchanged(g, g_state, n_g), "the gemma3 context is as it was");
    free(g_state);
    llama_free(g);

    // --- a context too small for the state: refused, nothing changed
    if (!g_quick) {
        struct llama_context * wide = new_ctx(g_smol, 512);
        llama_token many[300];
        for (int i = 0; i < 300; i++) many[i] = prompt[i % n_prompt];
        decode(wide, many, 300, 0, 0);
        size_t n_wide;
        uint8_t * wide_state = snapshot(wide, &n_wide);
        log_clear();
        CHECK(llama_state_set_data(a, wide_state, n_wide) == 0 && log_has("not enough cells"), "300 cells into 256: %s", g_log);
        size_t n_wseq = llama_state_seq_get_size(wide, 0);
        uint8_t * wseq = malloc(n_wseq);
        CHECK(llama_state_seq_get_data(wide, wseq, n_wseq, 0) == n_wseq, "seq get");
        CHECK(llama_state_seq_set_data(a, wseq, n_wseq, 0) == 0, "300 cells into sequence 0 of 256");
        free(wseq);
        free(wide_state);
        llama_free(wide);
    }
    // a state into a context whose cache holds F32 (another row type)
    {
        struct llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 256;
        cp.type_k = GGML_TYPE_F32;
        cp.type_v = GGML_TYPE_F32;
        struct llama_context * f32 = llama_init_from_model(g_smol, cp);
        log_clear();
        CHECK(f32 && llama_state_set_data(f32, state, n) == 0 && log_has("mismatched key type"), "F16 rows into F32: %s", g_log);
        cp.type_k = GGML_TYPE_F16;
        cp.type_v = GGML_TYPE_F16;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        struct llama_context * vt = llama_init_from_model(g_smol, cp);
        log_clear();
        CHECK(vt && llama_state_set_data(vt, state, n) == 0 && log_has("incompatible V transposition"), "V rows into V transposed: %s", g_log);
        llama_free(f32);
        llama_free(vt);
    }

    // --- every truncation of a small state, in a buffer and (some) in files
    size_t n_a;
    uint8_t * a_state = snapshot(a, &n_a);
    struct llama_context * one = new_ctx(g_smol, 256);
    decode(one, prompt, 1, 0, 0);
    size_t n1;
    uint8_t * s1 = snapshot(one, &n1);
    int bad = 0, tried = 0;
    for (size_t len = 0; len < n1; len++) {
        if (g_quick && len > 256 && len % 61 != 0 && len != n1 - 1) continue;
        tried++;
        if (llama_state_set_data(a, s1, len) != 0) bad++;
    }
    CHECK(bad == 0, "%d of %d truncated states restored", bad, tried);
    size_t n_seq1 = llama_state_seq_get_size(one, 0);
    uint8_t * q1 = malloc(n_seq1);
    CHECK(llama_state_seq_get_data(one, q1, n_seq1, 0) == n_seq1, "seq get");
    bad = 0;
    for (size_t len = 0; len < n_seq1; len++) {
        if (g_quick && len > 256 && len % 61 != 0 && len != n_seq1 - 1) continue;
        if (llama_state_seq_set_data(a, q1, len, 0) != 0) bad++;
    }
    CHECK(bad == 0, "%d truncated sequence states restored", bad);
    // session and sequence files: every length up to 300 bytes, then every 997th
    uint8_t * sess = malloc(12 + 4 + n1);
    put_u32(sess, LLAMA_SESSION_MAGIC);
    put_u32(sess + 4, LLAMA_SESSION_VERSION);
    put_u32(sess + 8, 1);
    memcpy(sess + 12, prompt, 4);
    memcpy(sess + 16, s1, n1);
    uint8_t * sqf = malloc(12 + 4 + n_seq1 - 8);
    put_u32(sqf, LLAMA_STATE_SEQ_MAGIC);
    put_u32(sqf + 4, LLAMA_STATE_SEQ_VERSION);
    put_u32(sqf + 8, 1);
    memcpy(sqf + 12, prompt, 4);
    memcpy(sqf + 16, q1 + 8, n_seq1 - 8);
    path_of(path, sizeof path, "cut.bin");
    bad = 0;
    tried = 0;
    for (size_t len = 0; len < 16 + n1; len += len < 300 ? 1 : 997) {
        tried++;
        write_file(path, sess, len);
        if (llama_state_load_file(a, path, toks, 64, &n_toks)) bad++;
        if (len < 16 + n_seq1 - 8) {
            write_file(path, sqf, len);
            if (llama_state_seq_load_file(a, path, 0, toks, 64, &n_toks) != 0) bad++;
        }
    }
    CHECK(bad == 0, "%d truncated session/sequence files loaded (of %d lengths)", bad, tried);
    write_file(path, sess, 16 + n1);
    CHECK(llama_state_load_file(one, path, toks, 64, &n_toks), "the whole file loads: %s", g_log);
    write_file(path, sqf, 16 + n_seq1 - 8);
    CHECK(llama_state_seq_load_file(one, path, 0, toks, 64, &n_toks) == 16 + n_seq1 - 8, "the whole sequence file loads");

    // --- damaged files and buffers
    uint8_t * dam = malloc(16 + n1 + 4);
#define DAMAGED_SESSION(what, at, value, msg)                                                            \
    do {                                                                                                 \
        memcpy(dam, sess, 16 + n1);                                                                      \
        put_u32(dam + (at), (value));                                                                    \
        write_file(path, dam, 16 + n1);                                                                  \
        log_clear();                                                                                     \
        CHECK(!llama_state_load_file(a, path, toks, 64, &n_toks) && log_has(msg), "%s: %s", what, g_log); \
    } while (0)
    DAMAGED_SESSION("flipped magic", 0, LLAMA_SESSION_MAGIC ^ 1, "unknown (magic, version)");
    DAMAGED_SESSION("another version", 4, LLAMA_SESSION_VERSION + 1, "unknown (magic, version)");
    DAMAGED_SESSION("more tokens than the capacity", 8, 65, "exceeded capacity");
    DAMAGED_SESSION("more tokens than the file", 8, 60, "");
    DAMAGED_SESSION("a long arch name", 16, 0xffffffffu, "wrong model arch");
    DAMAGED_SESSION("another arch", 20, 0x6d6d6d6du, "wrong model arch");
    DAMAGED_SESSION("two streams", 16 + 9, 2, "n_stream mismatch");
    DAMAGED_SESSION("a huge cell count", 16 + 13, 0xffffffffu, "not enough cells");
    DAMAGED_SESSION("a huge sequence count", 16 + 17 + 4, 0x7fffffffu, "sequences");
    DAMAGED_SESSION("a sequence out of range", 16 + 17 + 8, 7, "invalid seq_id");
    DAMAGED_SESSION("V transposed", 16 + 29, 1, "incompatible V transposition");
    DAMAGED_SESSION("29 layers", 16 + 33, 29, "mismatched layer count");
    DAMAGED_SESSION("a K row size", 16 + 41, 383, "mismatched key row size");
    DAMAGED_SESSION("a K type", 16 + 37, 0, "mismatched key type");
    memcpy(dam, sess, 16 + n1);
    memset(dam + 16 + n1, 0, 4);
    write_file(path, dam, 16 + n1 + 4);
    log_clear();
    CHECK(!llama_state_load_file(a, path, toks, 64, &n_toks) && log_has("did not read all"), "trailing bytes in a session file: %s", g_log);
    memcpy(dam, sqf, 16 + n_seq1 - 8);
    put_u32(dam, LLAMA_STATE_SEQ_MAGIC ^ 0x100);
    write_file(path, dam, 16 + n_seq1 - 8);
    CHECK(llama_state_seq_load_file(a, path, 0, toks, 64, &n_toks) == 0, "a flipped sequence file magic");
    put_u32(dam, LLAMA_STATE_SEQ_MAGIC);
    put_u32(dam + 8, 1000000);
    write_file(path, dam, 16 + n_seq1 - 8);
    log_clear();
    CHECK(llama_state_seq_load_file(a, path, 0, NULL, 0, &n_toks) == 0 && log_has("exceeds the file size"), "a token count past the end: %s", g_log);
    memcpy(dam, q1, n_seq1);
    dam[0] ^= 0x10;
    log_clear();
    CHECK(llama_state_seq_set_data(a, dam, n_seq1, 0) == 0 && log_has("wrong sequence state magic"), "a flipped io magic: %s", g_log);
    memcpy(dam, q1, n_seq1);
    put_u32(dam + 8 + 8 + 4, 2);
    log_clear();
    CHECK(llama_state_seq_set_data(a, dam, n_seq1, 0) == 0 && log_has("seq_id-agnostic"), "two sequence ids in a sequence state: %s", g_log);
    path_of(path, sizeof path, "no/such/dir/x.bin");
    CHECK(!llama_state_save_file(a, path, prompt, 1) && llama_state_seq_save_file(a, path, 0, prompt, 1) == 0, "unwritable paths");
    CHECK(!llama_state_load_file(a, path, toks, 64, &n_toks) && llama_state_seq_load_file(a, path, 0, toks, 64, &n_toks) == 0, "missing files");
    CHECK(!llama_state_load_file(a, NULL, toks, 64, &n_toks) && !llama_state_save_file(a, NULL, prompt, 1), "NULL paths");
    path_of(path, sizeof path, "session.bin");
    CHECK(!llama_state_load_file(a, path, toks, 64, NULL), "NULL n_token_count_out");
    CHECK(!llama_state_load_file(a, path, toks, (size_t) n_prompt - 1, &n_toks), "a capacity one short");
    CHECK(!llama_state_save_file(a, path, NULL, 3), "NULL tokens with a count");
    CHECK(llama_state_set_data(a, NULL, 10) == 0 && llama_set_state_data(a, NULL) == 0, "NULL sources");
    CHECK(unchanged(a, a_state, n_a), "after every failed restore the context is as it was");
    got = next_logits(a, 99);
    free(got);

    free(dam);
    free(sess);
    free(sqf);
    free(q1);
    free(s1);
    free(a_state);
    llama_free(one);
    free(want);
    free(file);
    free(seq);
    free(big);
    free(state);
    llama_free(a);
    llama_model_free(gemma);
    llama_model_free(g_smol);
    return finish("state");
}
