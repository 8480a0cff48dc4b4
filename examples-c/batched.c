// batched: several sequences generated in parallel with libllama, in C.
//
// usage: batched MODEL.gguf [-n N_PREDICT] PROMPT [PROMPT ...]
//
// Each prompt is its own sequence (seq id = its index). All prompts are
// decoded in one batch, then every step decodes one batch holding the next
// token of each sequence still running; tokens are chosen greedily from
// each sequence's own logits. A sequence stops at an end-of-generation
// token or after N_PREDICT tokens (default 32). At the end it prints, for
// each sequence, "sequence I:" and on the next line the prompt and its
// continuation exactly as examples-c/simple.c prints them alone.
// Written against llama.h only: it runs unchanged on minfer or the reference.
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct seq {
    llama_token * prompt;
    int n_prompt;
    int n_past;     // tokens of this sequence in the memory
    int n_gen;      // tokens generated
    int i_logits;   // index of its logits in the last batch, -1 when done
    char * text;    // prompt pieces then generated pieces
    size_t n_text;
};

static int append_piece(const struct llama_vocab * vocab, struct seq * s, llama_token t) {
    char buf[256];
    int n = llama_token_to_piece(vocab, t, buf, sizeof buf, 0, true);
    if (n < 0) return -1;
    s->text = realloc(s->text, s->n_text + (size_t) n + 1);
    memcpy(s->text + s->n_text, buf, (size_t) n);
    s->n_text += (size_t) n;
    return 0;
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf [-n N_PREDICT] PROMPT [PROMPT ...]\n", argv[0]);
        return 2;
    }
    int n_predict = 32;
    int arg = 2;
    if (arg + 1 < argc && strcmp(argv[arg], "-n") == 0) {
        n_predict = atoi(argv[arg + 1]);
        arg += 2;
    }
    const int n_seq = argc - arg;
    if (n_seq < 1) {
        fprintf(stderr, "error: no prompt\n");
        return 2;
    }

    llama_backend_init();
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (model == NULL) {
        fprintf(stderr, "error: unable to load model '%s'\n", argv[1]);
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);

    // --- tokenize the prompts (as simple.c does: special tokens added and parsed)
    struct seq * seqs = calloc((size_t) n_seq, sizeof *seqs);
    int n_prompt_total = 0, n_longest = 0;
    for (int s = 0; s < n_seq; s++) {
        const char * p = argv[arg + s];
        const int32_t len = (int32_t) strlen(p);
        seqs[s].n_prompt = -llama_tokenize(vocab, p, len, NULL, 0, true, true);
        seqs[s].prompt = malloc(sizeof(llama_token) * (size_t) (seqs[s].n_prompt > 0 ? seqs[s].n_prompt : 1));
        if (seqs[s].n_prompt <= 0 || llama_tokenize(vocab, p, len, seqs[s].prompt, seqs[s].n_prompt, true, true) < 0) {
            fprintf(stderr, "error: failed to tokenize prompt %d\n", s);
            return 1;
        }
        for (int i = 0; i < seqs[s].n_prompt; i++) {
            if (append_piece(vocab, &seqs[s], seqs[s].prompt[i]) < 0) return 1;
        }
        n_prompt_total += seqs[s].n_prompt;
        if (seqs[s].n_prompt > n_longest) n_longest = seqs[s].n_prompt;
    }

    // --- a context with room for every sequence (each gets n_ctx / n_seq_max cells)
    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_seq_max = (uint32_t) n_seq;
    cparams.n_ctx = (uint32_t) (n_seq * (n_longest + n_predict));
    cparams.n_batch = (uint32_t) (n_prompt_total > n_seq ? n_prompt_total : n_seq);
    struct llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == NULL) {
        fprintf(stderr, "error: failed to create the context\n");
        return 1;
    }
    struct llama_sampler * smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    llama_sampler_chain_add(smpl, llama_sampler_init_greedy());

    // --- one batch with every prompt; logits for the last token of each
    struct llama_batch batch = llama_batch_init((int32_t) cparams.n_batch, 0, 1);
    for (int s = 0; s < n_seq; s++) {
        for (int i = 0; i < seqs[s].n_prompt; i++) {
            const int k = batch.n_tokens++;
            batch.token[k] = seqs[s].prompt[i];
            batch.pos[k] = i;
            batch.n_seq_id[k] = 1;
            batch.seq_id[k][0] = s;
            batch.logits[k] = i == seqs[s].n_prompt - 1;
        }
        seqs[s].n_past = seqs[s].n_prompt;
        seqs[s].i_logits = batch.n_tokens - 1;
    }

    // --- decode, then sample one token per running sequence and batch them
    int n_running = n_predict > 0 ? n_seq : 0;
    while (n_running > 0 && batch.n_tokens > 0) {
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "error: llama_decode failed\n");
            return 1;
        }
        batch.n_tokens = 0;
        for (int s = 0; s < n_seq; s++) {
            if (seqs[s].i_logits < 0) continue;
            const llama_token t = llama_sampler_sample(smpl, ctx, seqs[s].i_logits);
            seqs[s].i_logits = -1;
            if (llama_vocab_is_eog(vocab, t)) {
                n_running--;
                continue;
            }
            if (append_piece(vocab, &seqs[s], t) < 0) return 1;
            if (++seqs[s].n_gen == n_predict) {
                n_running--;
                continue;
            }
            const int k = batch.n_tokens++;
            batch.token[k] = t;
            batch.pos[k] = seqs[s].n_past++;
            batch.n_seq_id[k] = 1;
            batch.seq_id[k][0] = s;
            batch.logits[k] = true;
            seqs[s].i_logits = k;
        }
    }

    for (int s = 0; s < n_seq; s++) {
        printf("sequence %d:\n", s);
        fwrite(seqs[s].text, 1, seqs[s].n_text, stdout);
        printf("\n");
        free(seqs[s].prompt);
        free(seqs[s].text);
    }
    free(seqs);
    llama_batch_free(batch);
    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
