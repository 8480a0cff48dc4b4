// chat: a multi-turn chat with libllama, in C.
//
// usage: chat MODEL.gguf [-n MAX_REPLY_TOKENS] [-s SEED] [-c N_CTX] [--system TEXT] [--transcript FILE]
//
// Reads one user message per line from stdin (until EOF or an empty line),
// formats the conversation with the model's chat template
// (llama_model_chat_template + llama_chat_apply_template; a model without a
// template gets "chatml"), feeds the model only the part of the formatted
// text it has not seen yet, and prints the reply, one line of output per
// reply. Greedy by default; -s SEED samples (min_p 0.05, temperature 0.8).
// --transcript FILE records every text fed to the model, in order:
// "prompt <n>\n<n bytes>\n" for formatted prompt text and "reply <n>\n<n bytes>\n"
// for each generated piece (the test checks it against the template).
// Written against llama.h only: it runs unchanged on minfer or the reference.
#define _POSIX_C_SOURCE 200809L // strdup
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A growing byte string.
struct text {
    char * p;
    size_t n, cap;
};

static void text_append(struct text * t, const char * s, size_t n) {
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        if (!t->p) {
            fprintf(stderr, "error: out of memory\n");
            exit(1);
        }
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = 0;
}

static FILE * g_transcript = NULL;

static void record(const char * kind, const char * s, size_t n) {
    if (g_transcript) {
        fprintf(g_transcript, "%s %zu\n", kind, n);
        fwrite(s, 1, n, g_transcript);
        fputc('\n', g_transcript);
    }
}

// Formats msgs[..n] into *out (grown as needed); returns the length or -1.
static int format_chat(const char * tmpl, const struct llama_chat_message * msgs, size_t n, bool add_ass, struct text * out) {
    int len = llama_chat_apply_template(tmpl, msgs, n, add_ass, out->p, (int32_t) out->cap);
    if (len >= (int) out->cap) {
        out->cap = (size_t) len + 1;
        out->p = realloc(out->p, out->cap);
        len = llama_chat_apply_template(tmpl, msgs, n, add_ass, out->p, (int32_t) out->cap);
    }
    out->n = len > 0 ? (size_t) len : 0;
    return len;
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [-n MAX_REPLY_TOKENS] [-s SEED] [-c N_CTX] [--system TEXT] [--transcript FILE]\n", argv[0]);
        return 2;
    }
    int n_reply = 128;
    int n_ctx = 2048;
    long seed = -1;
    const char * system_prompt = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-n") == 0) n_reply = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "-s") == 0) seed = atol(argv[i + 1]);
        else if (strcmp(argv[i], "-c") == 0) n_ctx = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--system") == 0) system_prompt = argv[i + 1];
        else if (strcmp(argv[i], "--transcript") == 0) {
            g_transcript = fopen(argv[i + 1], "wb");
            if (!g_transcript) {
                fprintf(stderr, "error: cannot write %s\n", argv[i + 1]);
                return 1;
            }
        } else {
            fprintf(stderr, "error: unknown argument %s\n", argv[i]);
            return 2;
        }
    }

    llama_backend_init();
    struct llama_model * model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (model == NULL) {
        fprintf(stderr, "error: unable to load model '%s'\n", argv[1]);
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t) n_ctx;
    cparams.n_batch = (uint32_t) n_ctx;
    struct llama_context * ctx = llama_init_from_model(model, cparams);
    if (ctx == NULL) {
        fprintf(stderr, "error: failed to create the context\n");
        return 1;
    }
    struct llama_sampler * smpl = llama_sampler_chain_init(llama_sampler_chain_default_params());
    if (seed < 0) {
        llama_sampler_chain_add(smpl, llama_sampler_init_greedy());
    } else {
        llama_sampler_chain_add(smpl, llama_sampler_init_min_p(0.05f, 1));
        llama_sampler_chain_add(smpl, llama_sampler_init_temp(0.8f));
        llama_sampler_chain_add(smpl, llama_sampler_init_dist((uint32_t) seed));
    }

    // NULL (no template in the model) means "chatml" to llama_chat_apply_template
    const char * tmpl = llama_model_chat_template(model, NULL);
    struct llama_chat_message * msgs = NULL;
    size_t n_msgs = 0, cap_msgs = 0;
    struct text formatted = { 0 }; // the conversation through the template
    struct text fed = { 0 };       // every byte of text the model has seen, in order
    int n_past = 0;
    int status = 0;
    char line[8192];

    if (system_prompt) {
        msgs = malloc(sizeof *msgs);
        cap_msgs = 1;
        msgs[n_msgs++] = (struct llama_chat_message) { "system", strdup(system_prompt) };
    }
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == 0) break;
        if (n_msgs + 2 > cap_msgs) {
            cap_msgs = (n_msgs + 2) * 2;
            msgs = realloc(msgs, cap_msgs * sizeof *msgs);
        }
        msgs[n_msgs++] = (struct llama_chat_message) { "user", strdup(line) };

        // --- the prompt: what the template adds beyond the text already fed
        if (format_chat(tmpl, msgs, n_msgs, true, &formatted) < 0) {
            fprintf(stderr, "error: the chat template is not supported\n");
            status = 1;
            break;
        }
        size_t start = fed.n;
        if (formatted.n < fed.n || (fed.n > 0 && memcmp(formatted.p, fed.p, fed.n) != 0)) {
            // the template rewrote earlier turns: start over from an empty memory
            llama_memory_clear(llama_get_memory(ctx), true);
            n_past = 0;
            fed.n = 0;
            start = 0;
        }
        const char * prompt = formatted.p + start;
        const int32_t prompt_len = (int32_t) (formatted.n - start);
        const bool first = n_past == 0;
        int n_tokens = -llama_tokenize(vocab, prompt, prompt_len, NULL, 0, first, true);
        llama_token * tokens = malloc(sizeof(llama_token) * (size_t) (n_tokens > 0 ? n_tokens : 1));
        if (llama_tokenize(vocab, prompt, prompt_len, tokens, n_tokens, first, true) < 0) {
            fprintf(stderr, "error: failed to tokenize the prompt\n");
            free(tokens);
            status = 1;
            break;
        }
        text_append(&fed, prompt, (size_t) prompt_len);
        record("prompt", prompt, (size_t) prompt_len);

        // --- generate the reply
        struct text reply = { 0 };
        text_append(&reply, "", 0);
        struct llama_batch batch = llama_batch_get_one(tokens, n_tokens);
        llama_token next;
        bool pending = true; // batch holds tokens the memory has not seen
        for (int n_gen = 0; pending; n_gen++) {
            if (n_past + batch.n_tokens > (int) llama_n_ctx(ctx)) {
                fprintf(stderr, "error: context size exceeded\n");
                status = 1;
                break;
            }
            if (llama_decode(ctx, batch) != 0) {
                fprintf(stderr, "error: llama_decode failed\n");
                status = 1;
                break;
            }
            n_past += batch.n_tokens;
            pending = false;
            if (n_gen == n_reply) break; // the last reply token is now in the memory
            next = llama_sampler_sample(smpl, ctx, -1);
            if (llama_vocab_is_eog(vocab, next)) break; // the next prompt brings the end of turn
            char piece[256];
            int n = llama_token_to_piece(vocab, next, piece, sizeof piece, 0, true);
            if (n < 0) {
                fprintf(stderr, "error: failed to convert a token to text\n");
                status = 1;
                break;
            }
            fwrite(piece, 1, (size_t) n, stdout);
            fflush(stdout);
            text_append(&reply, piece, (size_t) n);
            text_append(&fed, piece, (size_t) n);
            record("reply", piece, (size_t) n);
            batch = llama_batch_get_one(&next, 1);
            pending = true;
        }
        printf("\n");
        free(tokens);
        msgs[n_msgs++] = (struct llama_chat_message) { "assistant", reply.p };
        if (status != 0) break;
    }

    for (size_t i = 0; i < n_msgs; i++) free((void *) msgs[i].content);
    free(msgs);
    free(formatted.p);
    free(fed.p);
    if (g_transcript) fclose(g_transcript);
    llama_sampler_free(smpl);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return status;
}
