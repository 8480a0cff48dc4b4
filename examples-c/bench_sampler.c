// Sampler overhead per token: the default chain (top_k 40 -> top_p 0.95 ->
// min_p 0.05 -> temp 0.8 -> dist) applied to a full vocabulary of logits, as
// llama_sampler_sample does, for 49,152 and 262,144 candidates. Build it
// against our library and against the reference's (same source) to compare:
//
//   gcc -O2 -Iinclude examples-c/bench_sampler.c -o bench_sampler -Ltarget/release -lllama -lm
//   ./bench_sampler [n_iter]
#include "llama.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

int main(int argc, char ** argv) {
    const int n_iter = argc > 1 ? atoi(argv[1]) : 200;
    const int sizes[2] = { 49152, 262144 };
    for (int s = 0; s < 2; s++) {
        const int n = sizes[s];
        float * logits = malloc(sizeof(float) * n);
        llama_token_data * cur = malloc(sizeof(llama_token_data) * n);
        uint32_t x = 12345;
        for (int i = 0; i < n; i++) {
            x ^= x << 13; x ^= x >> 17; x ^= x << 5;
            logits[i] = (float) (x >> 8) / 16777216.0f * 20.0f - 10.0f;
        }
        struct llama_sampler * ch = llama_sampler_chain_init(llama_sampler_chain_default_params());
        llama_sampler_chain_add(ch, llama_sampler_init_top_k(40));
        llama_sampler_chain_add(ch, llama_sampler_init_top_p(0.95f, 1));
        llama_sampler_chain_add(ch, llama_sampler_init_min_p(0.05f, 1));
        llama_sampler_chain_add(ch, llama_sampler_init_temp(0.8f));
        llama_sampler_chain_add(ch, llama_sampler_init_dist(42));
        double best = 1e30, total = 0;
        long sink = 0;
        for (int it = 0; it < n_iter; it++) {
            double t0 = now_us();
            for (int i = 0; i < n; i++) {  // what llama_sampler_sample does before apply
                cur[i].id = i;
                cur[i].logit = logits[(i + it) % n];
                cur[i].p = 0.0f;
            }
            llama_token_data_array arr = { cur, (size_t) n, -1, false };
            llama_sampler_apply(ch, &arr);
            llama_token tok = arr.data[arr.selected].id;
            llama_sampler_accept(ch, tok);
            double dt = now_us() - t0;
            sink += tok;
            total += dt;
            if (dt < best) best = dt;
        }
        printf("n_vocab %6d: %8.1f us/token mean, %8.1f us best (%d tokens, checksum %ld)\n", n, total / n_iter, best, n_iter, sink);
        llama_sampler_free(ch);
        free(cur);
        free(logits);
    }
    return 0;
}
