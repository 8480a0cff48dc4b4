// Prints what the C API reports about a model, in a fixed text form: its
// description, sizes, hyperparameters, chat template, vocabulary size and
// every metadata pair (sorted by key, values escaped). The runner compares
// our output with golden/<model>.txt, which this same program produced when
// linked against the reference library (see ffi-tests/README.md).
//
// usage: dump_model MODEL.gguf [vocab_only]
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_escaped(const char * s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (c < 0x20) printf("\\x%02x", c);
        else putchar(c);
    }
}

static void quiet(enum ggml_log_level level, const char * text, void * ud) {
    (void) level; (void) text; (void) ud;
}

static int cmp_str(const void * a, const void * b) {
    return strcmp(*(char * const *) a, *(char * const *) b);
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [vocab_only]\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = argc > 2 && strcmp(argv[2], "vocab_only") == 0;
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        printf("load failed\n");
        return 1;
    }
    char buf[256];
    llama_model_desc(model, buf, sizeof(buf));
    printf("desc=%s\n", buf);
    if (!mp.vocab_only) {
        printf("n_params=%llu\n", (unsigned long long) llama_model_n_params(model));
        printf("size=%llu\n", (unsigned long long) llama_model_size(model));
        printf("n_ctx_train=%d\n", llama_model_n_ctx_train(model));
        printf("n_embd=%d\n", llama_model_n_embd(model));
        printf("n_layer=%d\n", llama_model_n_layer(model));
        printf("n_head=%d\n", llama_model_n_head(model));
        printf("n_head_kv=%d\n", llama_model_n_head_kv(model));
        printf("n_swa=%d\n", llama_model_n_swa(model));
        printf("rope_type=%d\n", (int) llama_model_rope_type(model));
        printf("rope_freq_scale_train=%.6f\n", llama_model_rope_freq_scale_train(model));
    }
    printf("ftype=%d\n", (int) llama_model_ftype(model));
    printf("has_encoder=%d has_decoder=%d is_recurrent=%d\n", llama_model_has_encoder(model),
           llama_model_has_decoder(model), llama_model_is_recurrent(model));
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    printf("vocab_type=%d n_tokens=%d\n", (int) llama_vocab_type(vocab), llama_vocab_n_tokens(vocab));
    const char * tmpl = llama_model_chat_template(model, NULL);
    printf("chat_template=");
    print_escaped(tmpl ? tmpl : "(null)");
    printf("\n");

    int n = llama_model_meta_count(model);
    printf("meta_count=%d\n", n);
    char ** lines = calloc((size_t) n, sizeof(char *));
    for (int i = 0; i < n; i++) {
        int klen = llama_model_meta_key_by_index(model, i, NULL, 0);
        int vlen = llama_model_meta_val_str_by_index(model, i, NULL, 0);
        char * line = malloc((size_t) klen + (size_t) vlen + 2);
        llama_model_meta_key_by_index(model, i, line, (size_t) klen + 1);
        line[klen] = '=';
        llama_model_meta_val_str_by_index(model, i, line + klen + 1, (size_t) vlen + 1);
        lines[i] = line;
    }
    qsort(lines, (size_t) n, sizeof(char *), cmp_str);
    for (int i = 0; i < n; i++) {
        printf("meta ");
        print_escaped(lines[i]);
        printf("\n");
        free(lines[i]);
    }
    free(lines);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
