// Writes the matmul goldens: for each weight type whose reference matmul does
// not run ggml_vec_dot's 32-block kernels (k-quants, IQ4_XS, and the types the
// CPU backend repacks: Q4_0, Q4_K, IQ4_NL, Q2_K), a 16x512 weight matrix and
// the reference's own mul_mat results for 1..12 activation rows; for the
// repacked types also a 12-row matrix, which is not repacked (k-quants:
// tiled/vec_dot; Q4_0, IQ4_NL: llamafile's tinyBLAS from 2 rows, vec_dot). The weights
// are the golden input (input.f32) quantized by ggml_quantize_chunk; the
// activations are input.f32 read as [12][512] rows.
//
// The product runs through the CPU backend exactly as llama.cpp runs it:
// weights in the CPU_REPACK buffer type where that type takes them (the
// repacked gemm/gemv kernels of ggml-cpu/arch/x86/repack.cpp), else in a plain
// CPU buffer (ggml_compute_forward_mul_mat_tiled for >= 8 rows, the type's
// vec_dot below 8). One thread (the results do not depend on the count).
//
// F16 (llamafile's tinyBLAS from 2 rows when rows % 4 == 0, ggml_vec_dot_f16
// otherwise) gets a 16-row matrix and a 14-row one.
//
// Output DIR/matmul_<type>.bin (and matmul_<type>_rows12.bin), little endian:
//   u32 rows, u32 cols, u32 n_cases, u32 repacked,
//   weights (rows * row_size bytes),
//   then per case: u32 nt, f32 y[nt][rows]
// Built and run by scripts/make-quant-goldens.sh.
//
// usage: make_matmul_goldens DIR   (reads DIR/input.f32)
#include "mul_mat.h"

#include <string.h>

enum { MAX_ROWS = 16, COLS = 512, MAX_NT = 12 };
static const int NTS[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12};

// The extra buffer type named CPU_REPACK, or NULL.
static ggml_backend_buffer_type_t repack_buft(void) {
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    ggml_backend_dev_get_extra_bufts_t get =
        (ggml_backend_dev_get_extra_bufts_t) ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    if (!get) return NULL;
    for (ggml_backend_buffer_type_t * b = get(dev); b && *b; b++) {
        if (strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) return *b;
    }
    return NULL;
}

// y = W x for the first nt rows of x; W's bytes are stored in a buffer of
// type `buft` (which repacks them if it is CPU_REPACK). Returns whether the
// weight tensor was actually repacked (its extra is set).
static int mul_mat(ggml_backend_t be, ggml_backend_buffer_type_t buft, enum ggml_type t, int rows, const void * wbytes,
                   const float * x, int nt, float * y) {
    struct ggml_init_params wp = {ggml_tensor_overhead() * 4, NULL, true};
    struct ggml_context * wctx = ggml_init(wp);
    struct ggml_tensor * W = ggml_new_tensor_2d(wctx, t, COLS, rows);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, buft);
    // CPU_REPACK's init_tensor records the repacked layout in `extra`, NULL
    // when it has none for this type or shape: then use a plain CPU buffer
    int repacked = W->extra != NULL;
    if (buft != ggml_backend_cpu_buffer_type() && !repacked) {
        ggml_backend_buffer_free(wbuf);
        ggml_free(wctx);
        wctx = ggml_init(wp);
        W = ggml_new_tensor_2d(wctx, t, COLS, rows);
        wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_cpu_buffer_type());
    }
    ggml_backend_tensor_set(W, wbytes, 0, ggml_nbytes(W));

    graph_mul_mat(be, W, COLS, x, nt, y);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    return repacked;
}

// The IQ1-IQ3 types (their goldens are quantized with importance weights).
static int is_iq_grid(enum ggml_type t) {
    return t == GGML_TYPE_IQ2_XXS || t == GGML_TYPE_IQ2_XS || t == GGML_TYPE_IQ2_S || t == GGML_TYPE_IQ3_XXS ||
           t == GGML_TYPE_IQ3_S || t == GGML_TYPE_IQ1_S || t == GGML_TYPE_IQ1_M;
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    char path[4096];
    static float in[MAX_NT * COLS];
    read_input(argv[1], in, MAX_NT * COLS);

    ggml_cpu_init();
    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, 1);
    ggml_backend_buffer_type_t rep = repack_buft();
    if (!rep) { fprintf(stderr, "no CPU_REPACK buffer type\n"); return 1; }

    const enum ggml_type types[] = {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
                                    GGML_TYPE_IQ4_XS, GGML_TYPE_Q4_0, GGML_TYPE_IQ4_NL, GGML_TYPE_F16,
                                    GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0,
                                    GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
                                    GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M, GGML_TYPE_NVFP4};
    // the importance weights the IQ1-IQ3 quantizers take (some require them)
    static float qw[COLS];
    for (int j = 0; j < COLS; j++) qw[j] = 0.25f + (float)((j * 37) % 11) * 0.5f;
    // weights: row r is input.f32 from offset 37*r (wrapping), so rows differ
    static float wsrc[MAX_ROWS * COLS];
    for (int r = 0; r < MAX_ROWS; r++) {
        for (int c = 0; c < COLS; c++) wsrc[r * COLS + c] = in[(37 * r + c) % (MAX_NT * COLS)];
    }
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        const enum ggml_type t = types[i];
        const int step = t == GGML_TYPE_F16 ? 2 : 4;
        for (int rows = MAX_ROWS; rows >= 12; rows -= step) {
            const size_t wbytes = ggml_row_size(t, COLS) * rows;
            void * w = malloc(wbytes);
            ggml_quantize_chunk(t, wsrc, w, 0, rows, COLS, is_iq_grid(t) ? qw : NULL);
            // the repack buffer type if it takes this type and shape, else a plain CPU buffer
            static float y[MAX_NT * MAX_ROWS];
            int repacked = mul_mat(be, rep, t, rows, w, in, 1, y);
            if (rows != MAX_ROWS && repacked) { free(w); continue; }
            if (t == GGML_TYPE_F16 && rows != MAX_ROWS && rows != 14) { free(w); continue; }
            ggml_backend_buffer_type_t buft = repacked ? rep : ggml_backend_cpu_buffer_type();
            if (rows == MAX_ROWS) {
                snprintf(path, sizeof(path), "%s/matmul_%s.bin", argv[1], ggml_type_name(t));
            } else {
                snprintf(path, sizeof(path), "%s/matmul_%s_rows%d.bin", argv[1], ggml_type_name(t), rows);
            }
            FILE * o = fopen(path, "wb");
            const int n_cases = sizeof(NTS) / sizeof(NTS[0]);
            put_header(o, rows, COLS, n_cases, repacked, w, wbytes);
            for (int k = 0; k < n_cases; k++) {
                mul_mat(be, buft, t, rows, w, in, NTS[k], y);
                put_u32(o, (uint32_t) NTS[k]);
                fwrite(y, sizeof(float), (size_t) NTS[k] * rows, o);
            }
            fclose(o);
            printf("%s rows %d: %s\n", ggml_type_name(t), rows, repacked ? "repacked" : "plain");
            free(w);
            // the 12-row matrix only for the types the backend repacks at 16 rows
            // (F16: the 14-row one)
            if (!repacked && t != GGML_TYPE_F16) break;
            if (t == GGML_TYPE_F16 && rows == 14) break;
        }
    }
    ggml_backend_free(be);
    return 0;
}
