// embedding: sentence embeddings with libllama, in C.
//
// usage: embedding MODEL.gguf [SENTENCE ...]
//
// Decodes every sentence in one batch, each as its own sequence, in a
// context made with embeddings = true and mean pooling; reads each
// sequence's pooled embedding (llama_get_embeddings_seq), normalizes it
// and prints the matrix of cosine similarities. Written against llama.h
// only: it runs unchanged on minfer or the reference library.
#include "llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * const DEFAULT_SENTENCES[] = {
    "The cat sat on the mat.",
    "A kitten was sitting on the rug.",
    "Interest rates rose sharply this quarter.",
    "The central bank raised interest rates again.",
};

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [SENTENCE ...]\n", argv[0]);
        return 2;
    }
    const char * const * sentences = argc > 2 ? (const char * const *) argv + 2 : DEFAULT_SENTENCES;
    const int n_seq = argc > 2 ? argc - 2 : (int) (sizeof DEFAULT_SENTENCES / sizeof DEFAULT_SENTENCES[0]);

    llama_backend_init();
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (model == NULL) {
        fprintf(stderr, "error: unable to load model '%s'\n", argv[1]);
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);

    // --- tokenize every sentence: tokens[s][..n_tokens[s]]
    llama_token ** tokens = calloc((size_t) n_seq, sizeof *tokens);
    int * n_tokens = calloc((size_t) n_seq, sizeof *n_tokens);
    int n_total = 0;
    for (int s = 0; s < n_seq; s++) {
        const int32_t len = (int32_t) strlen(sentences[s]);
        n_tokens[s] = -llama_tokenize(vocab, sentences[s], len, NULL, 0, true, false);
        tokens[s] = malloc(sizeof(llama_token) * (size_t) (n_tokens[s] > 0 ? n_tokens[s] : 1));
        if (n_tokens[s] <= 0 || llama_tokenize(vocab, sentences[s], len, tokens[s], n_tokens[s], true, false) < 0) {
            fprintf(stderr, "error: failed to tokenize sentence %d\n", s);
            return 1;
        }
        n_total += n_tokens[s];
    }

    // --- a context for pooled embeddings, one sequence per sentence
    struct llama_context_params cparams = llama_context_default_params();
    cparams.embeddings = true;
    cparams.pooling_type = LLAMA_POOLING_TYPE_MEAN;
    cparams.n_seq_max = (uint32_t) n_seq;
    // one KV buffer shared by the sequences: the batch then stays one ubatch
    // (with per-sequence buffers the reference splits it into equal-length
    // chunks of each sequence and pools only the last chunk)
    cparams.kv_unified = true;
    // pooling needs the whole batch in one ubatch; a multiple of n_seq
    // (the reference aborts reserving a pooled graph otherwise)
    const uint32_t n_ub = (uint32_t) ((n_total + n_seq - 1) / n_seq * n_seq);
    cparams.n_ctx = n_ub;
    cparams.n_batch = n_ub;
    cparams.n_ubatch = n_ub;
    struct llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == NULL) {
        fprintf(stderr, "error: failed to create the context\n");
        return 1;
    }

    // --- one batch: sentence s as sequence s, positions from 0
    struct llama_batch batch = llama_batch_init(n_total, 0, 1);
    for (int s = 0; s < n_seq; s++) {
        for (int i = 0; i < n_tokens[s]; i++) {
            const int k = batch.n_tokens++;
            batch.token[k] = tokens[s][i];
            batch.pos[k] = i;
            batch.n_seq_id[k] = 1;
            batch.seq_id[k][0] = s;
            batch.logits[k] = true; // every token's output feeds the pooling
        }
    }
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "error: llama_decode failed\n");
        return 1;
    }

    // --- pooled, L2-normalized embeddings: emb[s][..n_embd]
    const int n_embd = llama_model_n_embd(model);
    float * emb = malloc(sizeof(float) * (size_t) n_seq * (size_t) n_embd);
    for (int s = 0; s < n_seq; s++) {
        const float * e = llama_get_embeddings_seq(ctx, s);
        if (e == NULL) {
            fprintf(stderr, "error: no embedding for sequence %d\n", s);
            return 1;
        }
        double norm = 0.0;
        for (int j = 0; j < n_embd; j++) norm += (double) e[j] * e[j];
        norm = sqrt(norm);
        for (int j = 0; j < n_embd; j++) emb[(size_t) s * n_embd + j] = norm > 0 ? (float) (e[j] / norm) : 0.0f;
    }

    printf("%d sentences, n_embd %d, mean pooling\n", n_seq, n_embd);
    for (int s = 0; s < n_seq; s++) printf("%d: %s (%d tokens)\n", s, sentences[s], n_tokens[s]);
    printf("cosine similarity:\n");
    for (int a = 0; a < n_seq; a++) {
        for (int b = 0; b < n_seq; b++) {
            double dot = 0.0;
            for (int j = 0; j < n_embd; j++) dot += (double) emb[(size_t) a * n_embd + j] * emb[(size_t) b * n_embd + j];
            printf("%s%7.4f", b ? " " : "", dot);
        }
        printf("\n");
    }

    llama_batch_free(batch);
    for (int s = 0; s < n_seq; s++) free(tokens[s]);
    free(tokens);
    free(n_tokens);
    free(emb);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
