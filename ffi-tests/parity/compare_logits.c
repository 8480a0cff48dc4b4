// Compares two logits files written by `logits` (reference first):
// top-1 agreement, mean and max KL(reference || ours) over positions, and
// the largest absolute logit difference. Exits 1 if a bound is broken.
//
// usage: compare_logits REF.bin OURS.bin [MIN_TOP1 MAX_MEAN_KL MAX_KL]
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static float * load(const char * path, int * n, int * v) {
    FILE * f = fopen(path, "rb");
    if (!f || fread(n, sizeof(int), 1, f) != 1 || fread(v, sizeof(int), 1, f) != 1) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    size_t count = (size_t) *n * (size_t) *v;
    float * d = malloc(count * sizeof(float));
    if (fread(d, sizeof(float), count, f) != count) { fprintf(stderr, "short file %s\n", path); exit(2); }
    fclose(f);
    return d;
}

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s REF.bin OURS.bin [MIN_TOP1 MAX_MEAN_KL MAX_KL]\n", argv[0]); return 2; }
    int n, v, n2, v2;
    float * a = load(argv[1], &n, &v);
    float * b = load(argv[2], &n2, &v2);
    if (n != n2 || v != v2) { fprintf(stderr, "shapes differ: %dx%d vs %dx%d\n", n, v, n2, v2); return 1; }
    int agree = 0;
    double kl_sum = 0, kl_max = 0, diff_max = 0;
    for (int t = 0; t < n; t++) {
        const float * x = a + (size_t) t * v;
        const float * y = b + (size_t) t * v;
        int ax = 0, ay = 0;
        double mx = x[0], my = y[0];
        for (int i = 1; i < v; i++) {
            if (x[i] > x[ax]) ax = i;
            if (y[i] > y[ay]) ay = i;
            if (x[i] > mx) mx = x[i];
            if (y[i] > my) my = y[i];
        }
        agree += ax == ay;
        double sx = 0, sy = 0;
        for (int i = 0; i < v; i++) { sx += exp(x[i] - mx); sy += exp(y[i] - my); }
        double lx = log(sx), ly = log(sy), kl = 0;
        for (int i = 0; i < v; i++) {
            double px = x[i] - mx - lx, py = y[i] - my - ly;
            kl += exp(px) * (px - py);
            double d = fabs((double) x[i] - y[i]);
            if (d > diff_max) diff_max = d;
        }
        kl_sum += kl;
        if (kl > kl_max) kl_max = kl;
    }
    double top1 = 100.0 * agree / n, mean_kl = kl_sum / n;
    printf("positions %d  top1 %.2f%%  mean_kl %.3g  max_kl %.3g  max_abs_diff %.3g\n", n, top1, mean_kl, kl_max, diff_max);
    if (argc >= 6) {
        double min_top1 = atof(argv[3]), max_mean = atof(argv[4]), max_kl = atof(argv[5]);
        if (top1 < min_top1 || mean_kl > max_mean || kl_max > max_kl) {
            printf("FAIL: bounds top1 >= %g, mean_kl <= %g, max_kl <= %g\n", min_top1, max_mean, max_kl);
            return 1;
        }
    }
    return 0;
}
