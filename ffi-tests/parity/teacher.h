// Teacher forcing through the C API, shared by logits.c and embd_logits.c:
// read a token file, then decode it in chunks and write every position's
// logits. Header-only (static functions); include after llama.h.
#ifndef TEACHER_H
#define TEACHER_H

#include <stdio.h>
#include <stdlib.h>

// Log callback: warnings and errors only, to stderr.
static void teacher_quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) ud;
    if (level >= GGML_LOG_LEVEL_WARN && level != GGML_LOG_LEVEL_CONT) fputs(text, stderr);
}

// The token ids of a text file (separated by white space), malloc'd; NULL
// if it cannot be opened.
static llama_token * teacher_read_tokens(const char * path, int * n_out) {
    FILE * tf = fopen(path, "r");
    if (!tf) return NULL;
    int cap = 1024, n = 0;
    llama_token * toks = malloc(sizeof(llama_token) * (size_t) cap);
    int id;
    while (fscanf(tf, "%d", &id) == 1) {
        if (n == cap) { cap *= 2; toks = realloc(toks, sizeof(llama_token) * (size_t) cap); }
        toks[n++] = id;
    }
    fclose(tf);
    *n_out = n;
    return toks;
}

// Fills batch entry i with the input of position pos (token id or embedding).
typedef int (*teacher_fill_fn)(struct llama_batch * batch, int i, int pos, void * ud);

// Decodes positions 0..n-1 of sequence 0 in llama_decode calls of n_chunk
// (batch from llama_batch_init(n_chunk, …)), every position an output, and
// writes the logits file: int32 n, int32 n_vocab, then n*n_vocab float32.
// Returns 0, or 1 after printing what failed.
static int teacher_decode(struct llama_context * ctx, struct llama_batch batch, int n, int n_chunk, int n_vocab,
                          const char * out_path, teacher_fill_fn fill, void * ud) {
    FILE * out = fopen(out_path, "wb");
    if (!out) { fprintf(stderr, "cannot write %s\n", out_path); return 1; }
    fwrite(&n, sizeof(int), 1, out);
    fwrite(&n_vocab, sizeof(int), 1, out);
    for (int start = 0; start < n; start += n_chunk) {
        int m = n - start < n_chunk ? n - start : n_chunk;
        batch.n_tokens = m;
        for (int i = 0; i < m; i++) {
            if (fill(&batch, i, start + i, ud) != 0) { fclose(out); return 1; }
            batch.pos[i] = start + i;
            batch.n_seq_id[i] = 1;
            batch.seq_id[i][0] = 0;
            batch.logits[i] = 1;
        }
        int rc = llama_decode(ctx, batch);
        if (rc != 0) { fprintf(stderr, "llama_decode returned %d\n", rc); fclose(out); return 1; }
        for (int i = 0; i < m; i++) {
            const float * l = llama_get_logits_ith(ctx, i);
            if (!l) { fprintf(stderr, "no logits for %d\n", start + i); fclose(out); return 1; }
            fwrite(l, sizeof(float), (size_t) n_vocab, out);
        }
    }
    fclose(out);
    return 0;
}

#endif
