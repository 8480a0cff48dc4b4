// Long inputs on pre-tokenizers whose regexes run on the backtracking engine
// (tekken, gpt-4o, exaone-moe, …): a 200 000-letter word tokenizes, also
// from a thread with a 256 KiB stack; a 2 000 000-letter word on a regex
// that recurses per character is refused with a message, not a crash.
//
// usage: test_long_words MODEL.gguf...   (vocab files with such pre-tokenizers)
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <pthread.h>

struct job {
    const struct llama_vocab * v;
    const char * s;
    int32_t n;
    int32_t result;
};

static void * run(void * p) {
    struct job * j = p;
    int32_t * ids = malloc(sizeof(int32_t) * (size_t) j->n);
    j->result = llama_tokenize(j->v, j->s, j->n, ids, j->n, false, false);
    free(ids);
    return NULL;
}

int main(int argc, char ** argv) {
    llama_log_set(capture_log, NULL);
    size_t big = 2000000;
    char * s = malloc(big);
    for (size_t i = 0; i < big; i++) s[i] = "aAbBcC"[i % 6 < 3 ? 1 : 0] + (char) (i % 3);
    for (int a = 1; a < argc; a++) {
        struct llama_model_params mp = llama_model_default_params();
        mp.vocab_only = true;
        struct llama_model * m = llama_model_load_from_file(argv[a], mp);
        CHECK(m != NULL, "load %s", argv[a]);
        if (!m) continue;
        struct job j = {llama_model_get_vocab(m), s, 200000, 0};
        run(&j);
        CHECK(j.result > 0, "%s: a 200000-letter word tokenizes (%d)", argv[a], j.result);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        pthread_t th;
        struct job j2 = j;
        CHECK(pthread_create(&th, &attr, run, &j2) == 0, "thread");
        pthread_join(th, NULL);
        CHECK(j2.result == j.result, "%s: the same from a thread with a 256 KiB stack (%d)", argv[a], j2.result);
        struct job j3 = {j.v, s, (int32_t) big, 0};
        log_clear();
        run(&j3);
        CHECK(j3.result > 0 || (j3.result == INT32_MIN && log_has("too long")),
              "%s: 2000000 letters tokenize or are refused with a message (%d)", argv[a], j3.result);
        llama_model_free(m);
    }
    free(s);
    return finish("long_words");
}
