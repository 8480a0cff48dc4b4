// Writes the float matmul goldens: the reference's own mul_mat (CPU backend,
// one thread) of F32 and BF16 weight matrices with 1..12 f32 activation
// rows, for shapes that take each of its paths on an AVX-512 (AVX512_BF16)
// build: llamafile's tinyBLAS (from 2 activation rows when rows % 4 == 0
// and cols % 16 (F32) / % 32 (BF16) == 0), else ggml_vec_dot_f32 /
// ggml_vec_dot_bf16, with leftovers past the last multiple of 64 of every
// kind those have. Weights: input.f32 from offset 37*r for row r (wrapping;
// BF16 rounded by ggml_quantize_chunk), rows 5 and 6 scaled by 1e-37 and
// 1e-39 so that products and sums fall below the normal range (and bf16
// weights are subnormal): vdpbf16ps flushes those (DAZ, FTZ), the f32 paths
// do not; activations: input.f32 read as rows of `cols`. The input's huge
// values reach overflow.
//
// Output DIR/matmul_<type>_r<rows>_c<cols>.bin, little endian, the layout of
// make_matmul_goldens.c:
//   u32 rows, u32 cols, u32 n_cases, u32 0,
//   weights (rows * row_size bytes),
//   then per case: u32 nt, f32 y[nt][rows]
// Built and run by scripts/make-quant-goldens.sh.
//
// usage: make_float_matmul_goldens DIR   (reads DIR/input.f32)
#include "mul_mat.h"

#include <string.h>

enum { N_IN = 12 * 512, MAX_ROWS = 16, MAX_COLS = 160, MAX_NT = 12 };
static const int NTS[] = {1, 2, 3, 4, 5, 8, 9, 12};

static void mul_mat(ggml_backend_t be, enum ggml_type t, int rows, int cols, const void * wbytes, const float * x,
                    int nt, float * y) {
    struct ggml_init_params wp = {ggml_tensor_overhead() * 4, NULL, true};
    struct ggml_context * wctx = ggml_init(wp);
    struct ggml_tensor * W = ggml_new_tensor_2d(wctx, t, cols, rows);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_cpu_buffer_type());
    ggml_backend_tensor_set(W, wbytes, 0, ggml_nbytes(W));

    graph_mul_mat(be, W, cols, x, nt, y);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
}

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    char path[4096];
    static float in[N_IN];
    read_input(argv[1], in, N_IN);

    ggml_cpu_init();
    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, 1);

    // (type, rows, cols): see the comment at the top for the path each takes
    const struct { enum ggml_type t; int rows, cols; } shapes[] = {
        {GGML_TYPE_F32, 16, 128},  // tinyBLAS<16> from 2 rows; vec_dot_f32 for 1
        {GGML_TYPE_F32, 14, 128},  // rows % 4: vec_dot_f32
        {GGML_TYPE_F32, 16, 144},  // tinyBLAS; vec_dot leftovers: one block of 16
        {GGML_TYPE_F32, 16, 155},  // cols % 16: vec_dot; leftovers 16 + 8 + 3 fused
        {GGML_TYPE_BF16, 16, 128}, // tinyBLAS<32> (vdpbf16ps) from 2 rows; vec_dot_bf16 for 1
        {GGML_TYPE_BF16, 14, 128}, // rows % 4: vec_dot_bf16
        {GGML_TYPE_BF16, 16, 160}, // tinyBLAS; vec_dot leftovers: 32
        {GGML_TYPE_BF16, 16, 144}, // cols % 32: vec_dot; leftovers 16
        {GGML_TYPE_BF16, 16, 131}, // cols % 32: vec_dot; leftovers 3
    };
    static float wsrc[MAX_ROWS * MAX_COLS], x[MAX_NT * MAX_COLS], y[MAX_NT * MAX_ROWS];
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const enum ggml_type t = shapes[i].t;
        const int rows = shapes[i].rows, cols = shapes[i].cols;
        for (int r = 0; r < rows; r++) {
            const float scale = r == 5 ? 1e-37f : r == 6 ? 1e-39f : 1.0f;
            for (int c = 0; c < cols; c++) wsrc[r * cols + c] = in[(37 * r + c) % N_IN] * scale;
        }
        for (int k = 0; k < MAX_NT * cols; k++) x[k] = in[k % N_IN];
        const size_t wbytes = ggml_row_size(t, cols) * rows;
        void * w = malloc(wbytes);
        ggml_quantize_chunk(t, wsrc, w, 0, rows, cols, NULL);
        snprintf(path, sizeof(path), "%s/matmul_%s_r%d_c%d.bin", argv[1], ggml_type_name(t), rows, cols);
        FILE * o = fopen(path, "wb");
        if (!o) { perror(path); return 1; }
        const int n_cases = sizeof(NTS) / sizeof(NTS[0]);
        put_header(o, rows, cols, n_cases, 0, w, wbytes);
        for (int k = 0; k < n_cases; k++) {
            mul_mat(be, t, rows, cols, w, x, NTS[k], y);
            put_u32(o, (uint32_t) NTS[k]);
            fwrite(y, sizeof(float), (size_t) NTS[k] * rows, o);
        }
        fclose(o);
        printf("%s\n", path);
        free(w);
    }
    ggml_backend_free(be);
    return 0;
}
