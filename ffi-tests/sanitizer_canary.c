// Deliberate misuse that a working sanitizer setup must catch inside the
// library's own (instrumented) code: scripts/asan.sh and scripts/tsan.sh run
// it first and require the report, so a clean suite run means something.
//
//   overflow  llama_token_to_piece told a 32-byte buffer that has 2 bytes:
//             the library's copy overflows the heap block (ASan)
//   leak      a sampler never freed (LeakSanitizer)
//   race      two threads change one context in turn without synchronizing,
//             which the API forbids
//             (ThreadSanitizer: a data race in the library)
//
// usage: sanitizer_canary overflow|leak|race SMOLLM2.gguf
#define _POSIX_C_SOURCE 200809L
#include "llama.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct llama_context * g_ctx;
static atomic_int g_turn;  // relaxed: hands the turn over without ordering for TSan

// The two threads take turns setting the flag, handing over through a
// relaxed atomic, which orders nothing: each write races with the other
// thread's previous one.
static void * toggle(void * arg) {
    int me = (int) (intptr_t) arg;
    for (int i = 0; i < 20; i++) {
        while (atomic_load_explicit(&g_turn, memory_order_relaxed) % 2 != me) {}
        llama_set_embeddings(g_ctx, i % 2 == 0);
        atomic_fetch_add_explicit(&g_turn, 1, memory_order_relaxed);
    }
    return NULL;
}

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s overflow|leak|race MODEL.gguf\n", argv[0]); return 2; }
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = strcmp(argv[1], "race") != 0;
    struct llama_model * m = llama_model_load_from_file(argv[2], mp);
    if (!m) return 2;
    if (strcmp(argv[1], "overflow") == 0) {
        llama_token t;
        llama_tokenize(llama_model_get_vocab(m), " world", 6, &t, 1, false, false);  // a 6-byte piece
        char * buf = malloc(2);
        int n = llama_token_to_piece(llama_model_get_vocab(m), t, buf, 32, 0, false);
        printf("not caught: wrote %d bytes into a 2-byte block\n", n);
        free(buf);
    } else if (strcmp(argv[1], "leak") == 0) {
        struct llama_sampler * s = llama_sampler_init_top_k(40);
        printf("sampler %p never freed\n", (void *) s);
    } else {
        g_ctx = llama_init_from_model(m, llama_context_default_params());
        pthread_t a, b;
        pthread_create(&a, NULL, toggle, (void *) 0);
        pthread_create(&b, NULL, toggle, (void *) 1);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        llama_free(g_ctx);
        printf("race done\n");
    }
    llama_model_free(m);
    return 0;
}
