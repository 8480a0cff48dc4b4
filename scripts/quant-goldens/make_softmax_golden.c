// Writes the golden of the reference's ggml_soft_max_ext on its CPU backend
// (what attention without flash attention runs: kq·scale + mask, then the
// softmax of ggml_compute_forward_soft_max_f32), for rows of 300 values (18
// groups of 16 and a tail of 12) with an F32 mask of 0 and -inf.
//
// Output DIR/soft_max.bin, little endian:
//   u32 rows, u32 cols, f32 scale, f32 x[rows][cols], f32 mask[rows][cols],
//   f32 y[rows][cols]
// Built and run by scripts/make-quant-goldens.sh.
//
// usage: make_softmax_golden DIR
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>

enum { ROWS = 4, COLS = 300 };

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    static float x[ROWS * COLS], mask[ROWS * COLS], y[ROWS * COLS];
    uint32_t s = 12345;
    for (int i = 0; i < ROWS * COLS; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = ((float) (s >> 8) / (float) (1u << 24) - 0.5f) * 40.0f;
        mask[i] = (i % 7 == 3 || (i / COLS == 2 && i % COLS >= 200)) ? -INFINITY : 0.0f;
    }
    const float scale = 0.125f;

    ggml_backend_t be = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(be, 1);
    struct ggml_init_params gp = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true};
    struct ggml_context * ctx = ggml_init(gp);
    struct ggml_tensor * X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, COLS, ROWS);
    struct ggml_tensor * M = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, COLS, ROWS);
    struct ggml_tensor * Y = ggml_soft_max_ext(ctx, X, M, scale, 0.0f);
    struct ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, Y);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, be);
    ggml_backend_tensor_set(X, x, 0, sizeof(x));
    ggml_backend_tensor_set(M, mask, 0, sizeof(mask));
    if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) { fprintf(stderr, "compute failed\n"); return 1; }
    ggml_backend_tensor_get(Y, y, 0, sizeof(y));

    char path[4096];
    snprintf(path, sizeof(path), "%s/soft_max.bin", argv[1]);
    FILE * o = fopen(path, "wb");
    if (!o) { fprintf(stderr, "cannot write %s\n", path); return 1; }
    const uint32_t dims[2] = {ROWS, COLS};
    fwrite(dims, 4, 2, o);
    fwrite(&scale, 4, 1, o);
    fwrite(x, 4, ROWS * COLS, o);
    fwrite(mask, 4, ROWS * COLS, o);
    fwrite(y, 4, ROWS * COLS, o);
    fclose(o);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
    ggml_backend_free(be);
    return 0;
}
