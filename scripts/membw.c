// Memory read bandwidth of this machine: N threads stream disjoint parts of
// a 256 MiB buffer (AVX2 loads), as a decode streams its weights, 40 timed
// passes after an untimed one. The threads start each pass together (a
// barrier); a pass's time runs from the first thread's start to the last
// one's end. Printed: the median pass and the best, whose bandwidth is the
// figure to compare against (on a shared host other work slows some passes,
// never speeds one up). Used for docs/PERFORMANCE.md ("the bandwidth bound
// of a decode") and by scripts/bench.sh (the last number: the best pass).
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
#define REPS 40
static char * buf;
static int n_threads;
static pthread_barrier_t start;
// per pass and thread: when it started and ended reading (seconds)
static double t_start[REPS + 1][64], t_end[REPS + 1][64];
static volatile long long sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void * reader(void * arg) {
    long id = (long) arg;
    size_t per = N / n_threads;
    __m256i acc = _mm256_setzero_si256();
    for (int rep = 0; rep <= REPS; rep++) { // pass 0: untimed warm-up
        pthread_barrier_wait(&start);
        t_start[rep][id] = now();
        for (size_t i = id * per; i < (id + 1) * per; i += 64) {
            acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *) (buf + i)));
            acc = _mm256_add_epi64(acc, _mm256_load_si256((const __m256i *) (buf + i + 32)));
        }
        t_end[rep][id] = now();
    }
    long long r[4];
    _mm256_storeu_si256((__m256i *) r, acc);
    sink += r[0] + r[1] + r[2] + r[3];
    return NULL;
}

static int by_value(const void * a, const void * b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

int main(int argc, char ** argv) {
    n_threads = argc > 1 ? atoi(argv[1]) : 1;
    if (n_threads < 1 || n_threads > 64) { fprintf(stderr, "usage: %s THREADS [huge]\n", argv[0]); return 1; }
    buf = aligned_alloc(2UL << 20, N);
    if (!buf) { perror("aligned_alloc"); return 1; }
    if (argc > 2 && strcmp(argv[2], "huge") == 0) madvise(buf, N, MADV_HUGEPAGE);
    memset(buf, 1, N);
    pthread_barrier_init(&start, NULL, n_threads);
    pthread_t t[64];
    for (long i = 0; i < n_threads; i++) pthread_create(&t[i], NULL, reader, (void *) i);
    for (int i = 0; i < n_threads; i++) pthread_join(t[i], NULL);
    double gbs[REPS];
    for (int rep = 1; rep <= REPS; rep++) {
        double a = t_start[rep][0], b = t_end[rep][0];
        for (int i = 1; i < n_threads; i++) {
            a = t_start[rep][i] < a ? t_start[rep][i] : a;
            b = t_end[rep][i] > b ? t_end[rep][i] : b;
        }
        gbs[rep - 1] = (double) N / (b - a) / 1e9;
    }
    qsort(gbs, REPS, sizeof gbs[0], by_value);
    printf("%d threads%s: median %.1f, best %.1f GB/s\n", n_threads, argc > 2 ? " (huge pages)" : "",
           (gbs[REPS / 2 - 1] + gbs[REPS / 2]) / 2, gbs[REPS - 1]);
    free(buf);
    return 0;
}
