// Issue rates of the prefill kernels' instructions on this CPU, in
// nanoseconds and in cycles of the clock measured first (a dependent chain
// of integer adds, one cycle each), for ymm and zmm operands: vpdpbusd and
// vfmadd231ps alone (8 independent chains), the two interleaved (8 chains
// each: a pair costing one instruction's time means separate pipes, two
// instructions' time shared ones), the pair plus a vcvtdq2ps (the
// reference's order needs one of each per output and 32-block), and
// vcvtph2ps (the F16 weights). Its figures bound the kernels in
// docs/PERFORMANCE.md ("What is left"). Run it on an otherwise idle machine.
//
//   gcc -O2 -mavx512f -mavx512vl -mavx512vnni scripts/pipes.c -o pipes && ./pipes
//
// `./pipes peak` prints one line, the int8 multiply-add peak of one core in
// GMAC/s, for scripts/bench.sh's prefill column: zmm vpdpbusd (64 products
// each) where the CPU has AVX-512 VNNI; `./pipes peak avx2` (or a CPU
// without it) the AVX2 kernels' pair, vpmaddubsw + vpmaddwd on ymm (32
// products per pair). `./pipes avx2` (the default on a CPU without
// AVX-512) times the AVX2 kernels' instructions alone and mixed: which of
// them share pipes on this core.
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define N 200000000L
static double ghz;

// Times N instructions issued as N / PER iterations of the asm text BODY
// (PER instructions of the kind measured each) and prints the time per
// one. Registers 0-15 are the chains, 20-23 the operands (zeroed first).
#define CHAINS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
               "xmm12", "xmm13", "xmm14", "xmm15"
#define RATE(NAME, PER, BODY)                                                                          \
    do {                                                                                               \
        __asm__ volatile("vpxord %%zmm20,%%zmm20,%%zmm20\n vpxord %%zmm21,%%zmm21,%%zmm21\n"          \
                         "vpxord %%zmm22,%%zmm22,%%zmm22\n vpxord %%zmm23,%%zmm23,%%zmm23\n" ::         \
                             : "xmm20", "xmm21", "xmm22", "xmm23");                                    \
        double t0 = now();                                                                             \
        for (long i = 0; i < N / (PER); i++) __asm__ volatile(BODY ::: CHAINS);                        \
        double ns = (now() - t0) / N * 1e9;                                                            \
        printf("%-40s %.3f ns  %.2f cycles\n", NAME, ns, ns * ghz);                                    \
    } while (0)

// one instruction on chain register I of width R ("ymm", "zmm")
#define FMA(R, I) "vfmadd231ps %%" R "20,%%" R "21,%%" R #I "\n"
#define DOT(R, I) "vpdpbusd %%" R "22,%%" R "23,%%" R #I "\n"
#define CVT(R, I) "vcvtdq2ps %%" R #I ",%%" R "15\n"
#define CVTH(R, I) "vcvtph2ps %%" HALF "21,%%" R #I "\n"
#define X8(OP, R, A, B, C, D, E, F, G, H) OP(R, A) OP(R, B) OP(R, C) OP(R, D) OP(R, E) OP(R, F) OP(R, G) OP(R, H)
#define PAIR(R, I, J) DOT(R, I) FMA(R, J)
#define TRIPLE(R, I, J) DOT(R, I) CVT(R, I) FMA(R, J)

#define SECTION(R)                                                                                          \
    do {                                                                                                    \
        RATE(R " vfmadd231ps", 8, X8(FMA, R, 0, 1, 2, 3, 4, 5, 6, 7));                                      \
        RATE(R " vpdpbusd", 8, X8(DOT, R, 0, 1, 2, 3, 4, 5, 6, 7));                                         \
        RATE(R " vpdpbusd + vfmadd231ps (per pair)", 8,                                                     \
             PAIR(R, 0, 8) PAIR(R, 1, 9) PAIR(R, 2, 10) PAIR(R, 3, 11) PAIR(R, 4, 12) PAIR(R, 5, 13)       \
                 PAIR(R, 6, 14) PAIR(R, 7, 15));                                                            \
        /* (7 + 7 chains: register 15 takes the conversions) */                                             \
        RATE(R " + vcvtdq2ps (per triple)", 7,                                                              \
             TRIPLE(R, 0, 8) TRIPLE(R, 1, 9) TRIPLE(R, 2, 10) TRIPLE(R, 3, 11) TRIPLE(R, 4, 12)             \
                 TRIPLE(R, 5, 13) TRIPLE(R, 6, 14));                                                        \
        RATE(R " vcvtph2ps", 8, X8(CVTH, R, 0, 1, 2, 3, 4, 5, 6, 7));                                       \
    } while (0)

// seconds per instruction of BODY (PER instructions per iteration), on the
// operands of RATE
#define SECONDS_PER(PER, BODY)                                                                         \
    ({                                                                                                 \
        double t0 = now();                                                                             \
        for (long i = 0; i < N / 4 / (PER); i++) __asm__ volatile(BODY ::: CHAINS);                    \
        (now() - t0) / (N / 4 / (PER) * (PER));                                                        \
    })
#define MADD(I) "vpmaddubsw %%ymm6,%%ymm7,%%ymm" #I "\n vpmaddwd %%ymm" #I ",%%ymm5,%%ymm" #I "\n"

static int peak(int avx2) {
    double s, macs;
    const char * what;
    if (!avx2 && __builtin_cpu_supports("avx512vnni")) {
        __asm__ volatile("vpxord %%zmm22,%%zmm22,%%zmm22\n vpxord %%zmm23,%%zmm23,%%zmm23\n" ::: "xmm22", "xmm23");
        s = SECONDS_PER(8, X8(DOT, "zmm", 0, 1, 2, 3, 4, 5, 6, 7));
        macs = 64, what = "zmm vpdpbusd";
    } else {
        __asm__ volatile("vpxor %%ymm5,%%ymm5,%%ymm5\n vpxor %%ymm6,%%ymm6,%%ymm6\n vpxor %%ymm7,%%ymm7,%%ymm7\n" ::: "xmm5",
                         "xmm6", "xmm7");
        // (5 chains: ymm0-4; the pair is the unit)
        s = SECONDS_PER(5, MADD(0) MADD(1) MADD(2) MADD(3) MADD(4));
        macs = 32, what = "ymm vpmaddubsw + vpmaddwd";
    }
    printf("%.1f GMAC/s per core (%s)\n", macs / s / 1e9, what);
    return 0;
}

// --- `./pipes avx2`: the AVX2 kernels' instructions (VEX only, so it runs
// on AVX2-only CPUs), alone and mixed, on 8 independent chains each
// (registers 0-11; 12 and 13 the operands). A mix costing the sum of its
// instructions' times shares their pipes; the per-32-block work of the
// Q8_0-family kernels is one vpmaddubsw, one vpmaddwd, one vcvtdq2ps, one
// vfmadd231ps (and ours a vpsignb per token and row, the reference's 1.5).
#define CHAINS2 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"
#define RATE2(NAME, PER, BODY)                                                                          \
    do {                                                                                               \
        __asm__ volatile("vpxor %%ymm12,%%ymm12,%%ymm12\n vpxor %%ymm13,%%ymm13,%%ymm13\n" ::: "xmm12", "xmm13"); \
        double t0 = now();                                                                             \
        for (long i = 0; i < N / (PER); i++) __asm__ volatile(BODY ::: CHAINS2);                       \
        double ns = (now() - t0) / N * 1e9;                                                            \
        printf("%-44s %.3f ns  %.2f cycles\n", NAME, ns, ns * ghz);                                    \
    } while (0)
#define V8(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define UBS(i) "vpmaddubsw %%ymm12,%%ymm13,%%ymm" #i "\n"
#define WD(i) "vpmaddwd %%ymm12,%%ymm13,%%ymm" #i "\n"
#define FM(i) "vfmadd231ps %%ymm12,%%ymm13,%%ymm" #i "\n"
#define CV(i) "vcvtdq2ps %%ymm12,%%ymm" #i "\n"
#define SG(i) "vpsignb %%ymm12,%%ymm13,%%ymm" #i "\n"
#define AB(i) "vpabsb %%ymm12,%%ymm" #i "\n"
#define SHB(i) "vpshufb %%ymm12,%%ymm13,%%ymm" #i "\n"
#define AD(i) "vpaddd %%ymm12,%%ymm13,%%ymm" #i "\n"
#define CH(i) "vcvtph2ps %%xmm12,%%ymm" #i "\n"
#define MUL(i) "vmulps %%ymm12,%%ymm13,%%ymm" #i "\n"
#define BC(i) "vbroadcastss " #i "(%0),%%ymm" #i "\n"
#define TL(o, r) "vmovups " #o "(%0),%%ymm" #r "\n"
#define TF(a, b, c) "vfmadd231ps %%ymm" #a ",%%ymm" #b ",%%ymm" #c "\n"

static void avx2_rates(void) {
    RATE2("vpmaddubsw", 8, V8(UBS));
    RATE2("vpmaddwd", 8, V8(WD));
    RATE2("vfmadd231ps", 8, V8(FM));
    RATE2("vcvtdq2ps", 8, V8(CV));
    RATE2("vpsignb", 8, V8(SG));
    RATE2("vpshufb", 8, V8(SHB));
    RATE2("vpaddd", 8, V8(AD));
    RATE2("vcvtph2ps", 8, V8(CH));
    RATE2("vpmaddubsw + vpmaddwd (per instruction)", 16, V8(UBS) V8(WD));
    RATE2("vpmaddubsw + vfmadd231ps (per instruction)", 16, V8(UBS) V8(FM));
    RATE2("vpmaddwd + vfmadd231ps (per instruction)", 16, V8(WD) V8(FM));
    RATE2("ubs + wd + fma + cvt (per 4: one 32-block)", 8, V8(UBS) V8(WD) V8(FM) V8(CV));
    RATE2("+ vpsignb (per 5: one 32-block, ours)", 8, V8(UBS) V8(WD) V8(FM) V8(CV) V8(SG));
    {
        // ours per output and 32-block with its scale: the five above and a
        // vbroadcastss from memory (the scale product dw·da)
        static float sc[8] __attribute__((aligned(64)));
        double t0 = now();
        for (long i = 0; i < N / 8; i++)
            __asm__ volatile(V8(UBS) V8(WD) V8(FM) V8(CV) V8(SG) V8(BC)::"r"(sc) : CHAINS2);
        double ns = (now() - t0) / N * 1e9;
        printf("%-44s %.3f ns  %.2f cycles\n", "+ vbroadcastss (per 6: ours with its scale)", ns, ns * ghz);
    }
    RATE2("reference's (1.5 vpsignb, 0.25 vmulps)", 8,
          V8(UBS) V8(WD) V8(FM) V8(CV) V8(SG) SG(0) SG(1) SG(2) SG(3) MUL(4) MUL(5));
    RATE2("i16 form: 2 vpmaddwd + vpaddd + cvt + fma", 8, V8(WD) V8(WD) V8(AD) V8(CV) V8(FM));
    // the table types' (IQ4_NL, MXFP4) integer dot per 32 products: the
    // sign trick (vpsignb, vpmaddubsw, vpmaddwd, vpaddd; a vpabsb per 2
    // and a table vpshufb per 4) against i16 operands (2 vpmaddwd, 2 vpaddd)
    RATE2("table dot, sign trick (per 32 products)", 8,
          V8(SG) V8(UBS) V8(WD) V8(AD) AB(0) AB(1) AB(2) AB(3) SHB(4) SHB(5));
    RATE2("table dot, i16 operands (per 32 products)", 8, V8(WD) V8(WD) V8(AD) V8(AD));
    RATE2("vfmadd231ps + vcvtph2ps (per pair)", 8, V8(FM) V8(CH));
    // the F16 kernel's 3 x 2 tile step (avx2 `tile_any`: 3 weight rows x 2
    // tokens, 2 ymm chains each: 10 loads, 12 FMAs) with its data in L1
    static float l1[128] __attribute__((aligned(64)));
    double t0 = now();
    for (long i = 0; i < N / 8; i++)
        __asm__ volatile(TL(0, 12) TL(64, 13) TL(128, 14) TL(192, 15) TF(12, 15, 0) TF(13, 15, 1) TF(14, 15, 2)
                         TL(256, 15) TF(12, 15, 3) TF(13, 15, 4) TF(14, 15, 5) TL(32, 12) TL(96, 13) TL(160, 14)
                         TL(224, 15) TF(12, 15, 6) TF(13, 15, 7) TF(14, 15, 8) TL(288, 15) TF(12, 15, 9)
                         TF(13, 15, 10) TF(14, 15, 11)::"r"(l1)
                         : CHAINS2, "xmm12", "xmm13", "xmm14", "xmm15");
    double ns = (now() - t0) / (N / 8) * 1e9;
    printf("%-44s %.3f ns  %.2f cycles (FMA bound: 6)\n", "F16 3 x 2 tile step, data in L1", ns, ns * ghz);
}

int main(int argc, char ** argv) {
    if (argc > 1 && strcmp(argv[1], "peak") == 0) return peak(argc > 2 && strcmp(argv[2], "avx2") == 0);
    long s = 0;
    double t0 = now();
    // (4 dependent adds an iteration: a loop of one add may take more than
    // one cycle an iteration, as on Zen 3)
    for (long i = 0; i < N / 4; i++) __asm__ volatile("add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0" : "+r"(s));
    ghz = N / (now() - t0) / 1e9;
    printf("clock (dependent integer adds): %.2f GHz\n", ghz);
    if ((argc > 1 && strcmp(argv[1], "avx2") == 0) || !__builtin_cpu_supports("avx512f")) {
        avx2_rates();
        return 0;
    }
#define HALF "xmm" // (vcvtph2ps reads half the destination's width)
    SECTION("ymm");
#undef HALF
#define HALF "ymm"
    SECTION("zmm");
    return 0;
}
