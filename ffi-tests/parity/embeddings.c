// Embeddings through the C API, for encoders (BERT) and decoders alike:
// decodes several sequences in ONE llama_batch (sequence s: seq_id s,
// positions 0..len-1, every token an output) in an embeddings context and
// writes the pooled embedding of every sequence, or with pooling NONE the
// embedding of every token. Compiled once against llama.h, it runs on
// minfer or on the reference library (pick with LD_LIBRARY_PATH).
//
// usage: embeddings MODEL.gguf TOKENS.txt OUT.bin POOLING N_THREADS [FLASH_ATTN]
//   TOKENS.txt: one sequence per line, token ids separated by spaces (empty
//   lines are skipped).
//   POOLING: llama_pooling_type: -1 the model's, 0 none, 1 mean, 2 cls,
//   3 last, 4 rank.
//   FLASH_ATTN: flash_attn_type, -1 AUTO (the default), 0 DISABLED, 1 ENABLED.
//   The context: n_seq_max = the number of sequences, n_ctx = n_batch =
//   n_ubatch = the token count rounded up to a multiple of 64 (at least 64),
//   then up to a multiple of n_seq_max (the reference aborts with MEAN
//   pooling otherwise).
//   EMBD_KV_UNIFIED=1 in the environment: kv_unified (one KV stream). Without
//   it a decoder's KV cache has a stream per sequence, and the reference then
//   splits a batch of sequences of different lengths into ubatches of equal
//   length per sequence: its CLS and MEAN embeddings come from each
//   sequence's last ubatch alone (CLS: the token at that ubatch's start).
//   llama_decode does the work (on an encoder-only model the reference's
//   llama_decode runs llama_encode itself).
//   OUT.bin: raw little-endian float32, nothing else: with pooling NONE (the
//   context's llama_pooling_type) llama_get_embeddings_ith of every token in
//   batch order, n_embd_out floats each; otherwise llama_get_embeddings_seq
//   of every sequence in order, n_embd_out floats each (RANK: n_cls_out, at
//   least 1).
//   stdout: per row, its index, its first 4 values and its L2 norm.
//   EMBD_REPEAT=1 in the environment: clears the memory and decodes the same
//   batch again in the same context; exit 3 unless the second output is
//   bitwise equal to the first.
#include "llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Log callback: warnings and errors only, to stderr.
static void quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    if (level >= GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_CONT) fputs(text, stderr);
}

// The sequences of a token file: tokens[start[s] .. start[s + 1]) is sequence s.
struct seqs {
    llama_token * tokens;
    int * start;
    int n_tokens;
    int n_seqs;
};

// Reads one sequence per non-empty line; 0, or 1 if the file cannot be
// opened or holds something other than token ids.
static int read_seqs(const char * path, struct seqs * out) {
    FILE * f = fopen(path, "r");
    if (!f) return 1;
    int cap_t = 256, cap_s = 16, n = 0, ns = 0, in_line = 0, c;
    llama_token * toks = malloc(sizeof(llama_token) * (size_t) cap_t);
    int * start = malloc(sizeof(int) * (size_t) (cap_s + 1));
    long cur = -1;  // the number being read, -1 between numbers
    int bad = 0;
    do {
        c = fgetc(f);
        if (c >= '0' && c <= '9') {
            cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
            if (cur > 0x7fffffff) bad = 1;
            continue;
        }
        if (cur >= 0) {  // a number ended
            if (!in_line) {
                if (ns == cap_s) { cap_s *= 2; start = realloc(start, sizeof(int) * (size_t) (cap_s + 1)); }
                start[ns++] = n;
                in_line = 1;
            }
            if (n == cap_t) { cap_t *= 2; toks = realloc(toks, sizeof(llama_token) * (size_t) cap_t); }
            toks[n++] = (llama_token) cur;
            cur = -1;
        }
        if (c == '\n' || c == EOF) in_line = 0;
        else if (c != ' ' && c != '\t' && c != '\r') bad = 1;
    } while (c != EOF);
    fclose(f);
    if (bad) { free(toks); free(start); return 1; }
    start[ns] = n;
    out->tokens = toks;
    out->start = start;
    out->n_tokens = n;
    out->n_seqs = ns;
    return 0;
}

// Decodes the batch and returns the output rows (n_rows * n_out floats,
// malloc'd), printing each; NULL after printing what failed.
static float * run(struct llama_context * ctx, struct llama_batch batch, int pooled, int n_rows, int n_out) {
    int rc = llama_decode(ctx, batch);
    fprintf(stderr, "llama_decode returned %d\n", rc);
    if (rc != 0) return NULL;
    float * rows = malloc(sizeof(float) * (size_t) n_rows * (size_t) n_out);
    for (int r = 0; r < n_rows; r++) {
        const float * e = pooled ? llama_get_embeddings_seq(ctx, r) : llama_get_embeddings_ith(ctx, r);
        if (!e) {
            fprintf(stderr, "no embeddings for %s %d\n", pooled ? "sequence" : "token", r);
            free(rows);
            return NULL;
        }
        memcpy(rows + (size_t) r * (size_t) n_out, e, sizeof(float) * (size_t) n_out);
    }
    return rows;
}

int main(int argc, char ** argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL.gguf TOKENS.txt OUT.bin POOLING N_THREADS [FLASH_ATTN]\n", argv[0]);
        return 2;
    }
    const int pooling = atoi(argv[4]);
    const int n_threads = atoi(argv[5]);
    const int flash_attn = argc > 6 ? atoi(argv[6]) : -1;
    const char * repeat_env = getenv("EMBD_REPEAT");
    const int repeat = repeat_env && atoi(repeat_env) == 1;
    llama_log_set(quiet, NULL);
    llama_backend_init();

    struct seqs sq;
    if (read_seqs(argv[2], &sq) != 0) { fprintf(stderr, "cannot read token ids from %s\n", argv[2]); return 1; }
    if (sq.n_seqs == 0) { fprintf(stderr, "no sequences in %s\n", argv[2]); return 1; }

    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }

    // a multiple of 64, then of n_seq_max: the reference reserves its worst-case
    // graph for n_ubatch rounded up to a multiple of n_seq_max, and with MEAN
    // pooling that graph fails an assertion (GGML_ASSERT(ggml_can_mul_mat(a,
    // b)), an abort in llama_init_from_model) unless n_ubatch is one already
    const uint32_t n_seqs = (uint32_t) sq.n_seqs;
    uint32_t n_ctx = sq.n_tokens <= 64 ? 64 : (uint32_t) (sq.n_tokens + 63) / 64 * 64;
    n_ctx = (n_ctx + n_seqs - 1) / n_seqs * n_seqs;
    struct llama_context_params cp = llama_context_default_params();
    cp.embeddings = true;
    cp.pooling_type = (enum llama_pooling_type) pooling;
    cp.n_ctx = n_ctx;
    cp.n_batch = n_ctx;
    cp.n_ubatch = n_ctx;
    cp.n_seq_max = n_seqs;
    const char * unified = getenv("EMBD_KV_UNIFIED");
    cp.kv_unified = unified && atoi(unified) == 1;
    cp.n_threads = n_threads;
    cp.n_threads_batch = n_threads;
    cp.flash_attn_type = (enum llama_flash_attn_type) flash_attn;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot create a context\n"); return 1; }

    const enum llama_pooling_type pt = llama_pooling_type(ctx);
    const int pooled = pt != LLAMA_POOLING_TYPE_NONE;
    int n_out = llama_model_n_embd_out(model);
    if (pt == LLAMA_POOLING_TYPE_RANK) {
        n_out = (int) llama_model_n_cls_out(model);
        if (n_out == 0) n_out = 1;
    }
    const int n_rows = pooled ? sq.n_seqs : sq.n_tokens;
    fprintf(stderr, "%d sequences, %d tokens, n_ctx %u, pooling %d, %d floats per row%s\n", sq.n_seqs, sq.n_tokens,
            n_ctx, (int) pt, n_out, cp.kv_unified ? ", kv_unified" : "");

    struct llama_batch batch = llama_batch_init(sq.n_tokens, 0, 1);
    batch.n_tokens = sq.n_tokens;
    for (int s = 0; s < sq.n_seqs; s++) {
        for (int i = sq.start[s]; i < sq.start[s + 1]; i++) {
            batch.token[i] = sq.tokens[i];
            batch.pos[i] = i - sq.start[s];
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = s;
            batch.logits[i] = 1;
        }
    }

    int status = 0;
    float * rows = run(ctx, batch, pooled, n_rows, n_out);
    if (!rows) status = 1;
    if (rows) {
        FILE * out = fopen(argv[3], "wb");
        if (!out || fwrite(rows, sizeof(float), (size_t) n_rows * (size_t) n_out, out) != (size_t) n_rows * (size_t) n_out) {
            fprintf(stderr, "cannot write %s\n", argv[3]);
            status = 1;
        }
        if (out && fclose(out) != 0) status = 1;
        for (int r = 0; r < n_rows; r++) {
            const float * e = rows + (size_t) r * (size_t) n_out;
            double norm = 0;
            for (int j = 0; j < n_out; j++) norm += (double) e[j] * e[j];
            printf("%s %d:", pooled ? "seq" : "tok", r);
            for (int j = 0; j < 4 && j < n_out; j++) printf(" %.6f", e[j]);
            printf("  norm %.6f\n", sqrt(norm));
        }
    }
    if (rows && status == 0 && repeat) {
        // the reference's llama_get_memory is NULL for an encoder-only model,
        // and its memory functions accept NULL
        llama_memory_clear(llama_get_memory(ctx), true);
        float * again = run(ctx, batch, pooled, n_rows, n_out);
        if (!again) {
            status = 1;
        } else if (memcmp(again, rows, sizeof(float) * (size_t) n_rows * (size_t) n_out) != 0) {
            fprintf(stderr, "EMBD_REPEAT: the second decode's embeddings differ from the first's\n");
            status = 3;
        } else {
            fprintf(stderr, "EMBD_REPEAT: the second decode's embeddings are bitwise equal to the first's\n");
        }
        free(again);
    }

    free(rows);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    free(sq.tokens);
    free(sq.start);
    return status;
}
