// Memory read bandwidth of this machine: N threads stream disjoint parts of
// a 256 MiB buffer 10 times (AVX2 loads), as a decode streams its weights.
// Used for docs/PERFORMANCE.md ("the bandwidth bound of a decode").
//
//   gcc -O2 -mavx2 -pthread scripts/membw.c -o membw && ./membw 1 && ./membw 2
//   ./membw 2 huge      # the buffer with madvise(MADV_HUGEPAGE)
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define N (256UL << 20)
#define REPS 10
static char * buf;
static int n_threads;

static void * reader(void * arg) {
    long id = (long) arg;
    size_t per = N / n_threads;
    __m256i acc = _mm256_setzero_si256();
    for (int rep = 0; rep < REPS; rep++) {
        for (size_t i = id * per; i < (id + 1) * per; i += 64) {
            acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *) (buf + i)));
            acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *) (buf + i + 32)));
        }
    }
    long long r[4];
    _mm256_storeu_si256((__m256i *) r, acc);
    return (void *) (r[0] + r[1] + r[2] + r[3]);
}

int main(int argc, char ** argv) {
    n_threads = argc > 1 ? atoi(argv[1]) : 1;
    if (n_threads < 1 || n_threads > 64) { fprintf(stderr, "usage: %s THREADS [huge]\n", argv[0]); return 1; }
    buf = aligned_alloc(2UL << 20, N);
    if (!buf) { perror("aligned_alloc"); return 1; }
    if (argc > 2 && strcmp(argv[2], "huge") == 0) madvise(buf, N, MADV_HUGEPAGE);
    memset(buf, 1, N);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t t[64];
    for (long i = 0; i < n_threads; i++) pthread_create(&t[i], NULL, reader, (void *) i);
    for (int i = 0; i < n_threads; i++) pthread_join(t[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%d threads%s: %.1f GB/s\n", n_threads, argc > 2 ? " (huge pages)" : "", (double) REPS * N / s / 1e9);
    free(buf);
    return 0;
}
