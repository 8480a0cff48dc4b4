// Writes the quantization goldens of tests/goldens/quant/ with the reference
// library (ggml-base of llama.cpp 0c1e570): the input floats (input.f32) and,
// per type, the bytes of its reference quantizer over the whole input as one
// row (<type>.bin). Built and run by scripts/make-quant-goldens.sh.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// From ggml-quants.h / ggml.h (block pointers as void *).
#define DECL(t) void quantize_row_##t##_ref(const float *x, void *y, int64_t k);
DECL(q4_0) DECL(q4_1) DECL(q5_0) DECL(q5_1) DECL(q8_0) DECL(q8_1)
DECL(q2_K) DECL(q3_K) DECL(q4_K) DECL(q5_K) DECL(q6_K) DECL(q8_K)
DECL(iq4_nl) DECL(iq4_xs) DECL(tq1_0) DECL(tq2_0) DECL(q1_0) DECL(q2_0) DECL(nvfp4)
void dequantize_row_q1_0(const void *x, float *y, int64_t k);
void dequantize_row_q2_0(const void *x, float *y, int64_t k);
void dequantize_row_nvfp4(const void *x, float *y, int64_t k);
typedef void (*dequant_fn)(const void *x, float *y, int64_t k);
void dequantize_row_iq2_xxs(const void *x, float *y, int64_t k);
void dequantize_row_iq2_xs(const void *x, float *y, int64_t k);
void dequantize_row_iq2_s(const void *x, float *y, int64_t k);
void dequantize_row_iq3_xxs(const void *x, float *y, int64_t k);
void dequantize_row_iq3_s(const void *x, float *y, int64_t k);
void dequantize_row_iq1_s(const void *x, float *y, int64_t k);
void dequantize_row_iq1_m(const void *x, float *y, int64_t k);
size_t ggml_quantize_chunk(int type, const float *src, void *dst, int64_t start,
                           int64_t nrows, int64_t n_per_row, const float *imatrix);

#define NSB 24          // super-blocks of 256
#define N (NSB * 256)   // elements

static uint64_t state = 0x6d696e6665722d71ull; // "minfer-q"
static uint64_t next(void) { // splitmix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float uni(void) { // [-1, 1), exact
    return (float)(next() >> 40) * (1.0f / 8388608.0f) - 1.0f;
}
static float gauss(void) { return (uni() + uni() + uni() + uni()) * 0.5f; }

static void fill(float *x) {
    static const float tens[] = {1e-10f, 1e-8f, 1e-6f, 1e-4f, 1e-2f, 1.f, 1e2f, 1e4f, 1e6f, 1e8f, 1e10f};
    for (int s = 0; s < NSB; s++) {
        float *b = x + 256 * s;
        for (int i = 0; i < 256; i++) {
            float v;
            switch (s) {
            case 0: v = uni(); break;
            case 1: v = gauss(); break;
            case 2: v = 0.0f; break;                      // all zero
            case 3: v = -0.0f; break;                     // all negative zero
            case 4: v = (i / 32) % 2 ? uni() : 0.0f; break; // zero 32-blocks inside
            case 5: v = uni() * 1e30f; break;             // beyond f16 range
            case 6: v = uni() * 65000.f; break;           // near f16 max
            case 7: v = uni() * 1e-30f; break;            // tiny
            case 8: v = uni() * 1e-40f; break;            // subnormal f32
            case 9: v = uni() * 1e-6f; break;             // f16-subnormal scales
            case 10: v = 0.5f; break;                     // constant
            case 11: v = -3.0f; break;
            case 12: v = i == 77 ? 40.0f : uni() * 0.01f; break; // outlier
            case 13: v = (uni() + 1.0f) * 0.5f; break;    // all positive
            case 14: v = -(uni() + 1.0f) * 2.0f; break;   // all negative
            case 15: { uint64_t r = next(); v = r % 7 == 0 ? uni() : (r % 2 ? -0.0f : 0.0f); } break; // sparse
            case 16: v = uni() * tens[(i / 16) % 11]; break; // wild group scales
            case 17: v = (float)((int)(next() % 16) - 8); break; // small integers
            case 18: v = i % 3 == 0 ? -0.0f : uni() * 1e5f; break;
            default: v = gauss() * tens[(next() % 11)]; break; // per-element wild
            }
            b[i] = v;
        }
        if (s >= 19) { // per-32-block scales
            for (int j = 0; j < 8; j++) {
                float sc = tens[(s * 8 + j) % 11];
                for (int i = 0; i < 32; i++) b[32 * j + i] = gauss() * sc;
            }
        }
    }
}

// The IQ goldens' input: gaussian rows at scales 1e-3 .. 1e3, an all-zero
// row, a constant one, one with an outlier, one of small integers.
static void fill_iq(float *x) {
    static const float sc[] = {1e-3f, 1e-2f, 0.1f, 1.f, 10.f, 100.f, 1e3f};
    for (int s = 0; s < NSB; s++) {
        float *b = x + 256 * s;
        for (int i = 0; i < 256; i++) {
            float v = gauss() * sc[s % 7];
            if (s == 7) v = 0.0f;
            if (s == 8) v = 0.5f;
            if (s == 9 && i == 100) v = 30.0f;
            if (s == 10) v = (float)((int)(next() % 9) - 4);
            b[i] = v;
        }
    }
}

// The importance weights of the IQ goldens: positive, varying by column.
static void iq_weights(float *w, int n) {
    for (int j = 0; j < n; j++) w[j] = 0.25f + (float)((j * 37) % 11) * 0.5f;
}

static void put(const char *dir, const char *name, const void *p, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) { perror(path); exit(1); }
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s OUTDIR\n", argv[0]); return 2; }
    static float x[N];
    fill(x);
    put(argv[1], "input.f32", x, sizeof x);
    static unsigned char y[N * 4];
    struct { const char *name; void (*f)(const float *, void *, int64_t); size_t bpb, qk; } t[] = {
        {"q4_0", quantize_row_q4_0_ref, 18, 32},   {"q4_1", quantize_row_q4_1_ref, 20, 32},
        {"q5_0", quantize_row_q5_0_ref, 22, 32},   {"q5_1", quantize_row_q5_1_ref, 24, 32},
        {"q8_0", quantize_row_q8_0_ref, 34, 32},   {"q8_1", quantize_row_q8_1_ref, 36, 32},
        {"q2_K", quantize_row_q2_K_ref, 84, 256},  {"q3_K", quantize_row_q3_K_ref, 110, 256},
        {"q4_K", quantize_row_q4_K_ref, 144, 256}, {"q5_K", quantize_row_q5_K_ref, 176, 256},
        {"q6_K", quantize_row_q6_K_ref, 210, 256}, {"q8_K", quantize_row_q8_K_ref, 292, 256},
        {"iq4_nl", quantize_row_iq4_nl_ref, 18, 32}, {"iq4_xs", quantize_row_iq4_xs_ref, 136, 256},
        {"tq1_0", quantize_row_tq1_0_ref, 54, 256}, {"tq2_0", quantize_row_tq2_0_ref, 66, 256},
        {"q1_0", quantize_row_q1_0_ref, 18, 128},   {"q2_0", quantize_row_q2_0_ref, 18, 64},
        {"nvfp4", quantize_row_nvfp4_ref, 36, 64},
    };
    char name[64];
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        memset(y, 0, sizeof y);
        t[i].f(x, y, N);
        snprintf(name, sizeof name, "%s.bin", t[i].name);
        put(argv[1], name, y, N / t[i].qk * t[i].bpb);
    }
    // The reference's dequantization of Q1_0 and Q2_0 (the gguf package has
    // none): of their quantized rows above
    static float dq[N];
    memset(y, 0, sizeof y);
    quantize_row_q1_0_ref(x, y, N);
    dequantize_row_q1_0(y, dq, N);
    put(argv[1], "q1_0_dequant.f32", dq, sizeof dq);
    memset(y, 0, sizeof y);
    quantize_row_q2_0_ref(x, y, N);
    dequantize_row_q2_0(y, dq, N);
    put(argv[1], "q2_0_dequant.f32", dq, sizeof dq);
    // and of NVFP4 (the pinned gguf package has none)
    memset(y, 0, sizeof y);
    quantize_row_nvfp4_ref(x, y, N);
    dequantize_row_nvfp4(y, dq, N);
    put(argv[1], "nvfp4_dequant.f32", dq, sizeof dq);
    // Through ggml_quantize_chunk: F16 (1), BF16 (30), and IQ4_NL (20),
    // whose chunk quantizer searches 7 scales either side (the _ref does not).
    memset(y, 0, sizeof y);
    put(argv[1], "f16.bin", y, ggml_quantize_chunk(1, x, y, 0, 1, N, NULL));
    memset(y, 0, sizeof y);
    put(argv[1], "bf16.bin", y, ggml_quantize_chunk(30, x, y, 0, 1, N, NULL));
    memset(y, 0, sizeof y);
    put(argv[1], "iq4_nl_chunk.bin", y, ggml_quantize_chunk(20, x, y, 0, N / 256, 256, NULL));
    // The IQ1-IQ3 types through ggml_quantize_chunk (they have no _ref
    // quantizer; IQ2_XXS, IQ2_XS, IQ1_S and IQ1_M need an importance
    // matrix): rows of 256 with the weights iq_weights() gives, of their own
    // input (iq_input.f32: their grid searches assert on the extreme rows
    // above).
    static float qw[256], xi[N];
    iq_weights(qw, 256);
    fill_iq(xi);
    put(argv[1], "iq_input.f32", xi, sizeof xi);
    struct { const char *name; int type; dequant_fn dq; } iq[] = {
        {"iq2_xxs", 16, dequantize_row_iq2_xxs}, {"iq2_xs", 17, dequantize_row_iq2_xs},
        {"iq3_xxs", 18, dequantize_row_iq3_xxs}, {"iq1_s", 19, dequantize_row_iq1_s},
        {"iq3_s", 21, dequantize_row_iq3_s},     {"iq2_s", 22, dequantize_row_iq2_s},
        {"iq1_m", 29, dequantize_row_iq1_m},
    };
    for (size_t i = 0; i < sizeof iq / sizeof iq[0]; i++) {
        memset(y, 0, sizeof y);
        size_t n = ggml_quantize_chunk(iq[i].type, xi, y, 0, N / 256, 256, qw);
        snprintf(name, sizeof name, "%s.bin", iq[i].name);
        put(argv[1], name, y, n);
        // and the reference's own dequantization of those blocks
        iq[i].dq(y, dq, N);
        snprintf(name, sizeof name, "%s_dequant.f32", iq[i].name);
        put(argv[1], name, dq, sizeof dq);
    }
    // The same types in rows of 512 (weights of 512 columns), and without
    // weights where the reference allows it (IQ2_S, IQ3_XXS, IQ3_S, IQ1_M)
    static float qw512[512];
    iq_weights(qw512, 512);
    for (size_t i = 0; i < sizeof iq / sizeof iq[0]; i++) {
        memset(y, 0, sizeof y);
        size_t n = ggml_quantize_chunk(iq[i].type, xi, y, 0, N / 512, 512, qw512);
        snprintf(name, sizeof name, "%s_r512.bin", iq[i].name);
        put(argv[1], name, y, n);
        int t = iq[i].type;
        if (t == 18 || t == 21 || t == 22 || t == 29) {
            memset(y, 0, sizeof y);
            n = ggml_quantize_chunk(t, xi, y, 0, N / 256, 256, NULL);
            snprintf(name, sizeof name, "%s_nw.bin", iq[i].name);
            put(argv[1], name, y, n);
        }
    }
    // The other types' weighted quantizers (quantize_row_*_impl, what an
    // imatrix selects): the golden input in rows of 256 with the weights above
    struct { const char *name; int type; } wq[] = {
        {"q4_0", 2}, {"q4_1", 3}, {"q5_0", 6}, {"q5_1", 7}, {"q2_K", 10}, {"q3_K", 11},
        {"q4_K", 12}, {"q5_K", 13}, {"q6_K", 14}, {"iq4_nl", 20}, {"iq4_xs", 23},
    };
    for (size_t i = 0; i < sizeof wq / sizeof wq[0]; i++) {
        memset(y, 0, sizeof y);
        size_t n = ggml_quantize_chunk(wq[i].type, x, y, 0, N / 256, 256, qw);
        snprintf(name, sizeof name, "%s_imatrix.bin", wq[i].name);
        put(argv[1], name, y, n);
    }
    return 0;
}
