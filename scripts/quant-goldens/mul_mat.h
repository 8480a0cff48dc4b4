// The harness shared by the matmul golden writers (make_matmul_goldens.c,
// make_float_matmul_goldens.c): one ggml_mul_mat of a weight tensor with nt
// f32 activation rows on the CPU backend, and the golden file's header.
#ifndef MUL_MAT_H
#define MUL_MAT_H

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void put_u32(FILE * f, uint32_t v) { fwrite(&v, 4, 1, f); }

// The first n floats of DIR/input.f32 into in; exits on failure.
static void read_input(const char * dir, float * in, size_t n) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/input.f32", dir);
    FILE * f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
    if (fread(in, sizeof(float), n, f) != n) { fprintf(stderr, "short input\n"); exit(1); }
    fclose(f);
}

// y [nt][rows] = W x, x [nt][cols] f32, W's data already set in its buffer.
static void graph_mul_mat(ggml_backend_t be, struct ggml_tensor * W, int cols, const float * x, int nt, float * y) {
    struct ggml_init_params gp = {ggml_tensor_overhead() * 8 + ggml_graph_overhead(), NULL, true};
    struct ggml_context * gctx = ggml_init(gp);
    struct ggml_tensor * X = ggml_new_tensor_2d(gctx, GGML_TYPE_F32, cols, nt);
    struct ggml_tensor * Y = ggml_mul_mat(gctx, W, X);
    struct ggml_cgraph * gf = ggml_new_graph(gctx);
    ggml_build_forward_expand(gf, Y);
    ggml_backend_buffer_t gbuf = ggml_backend_alloc_ctx_tensors(gctx, be);
    ggml_backend_tensor_set(X, x, 0, ggml_nbytes(X));
    if (ggml_backend_graph_compute(be, gf) != GGML_STATUS_SUCCESS) { fprintf(stderr, "compute failed\n"); exit(1); }
    ggml_backend_tensor_get(Y, y, 0, ggml_nbytes(Y));
    ggml_backend_buffer_free(gbuf);
    ggml_free(gctx);
}

// The golden file's header and weights: u32 rows, u32 cols, u32 n_cases,
// u32 repacked, then the weight bytes (the cases follow: u32 nt, f32 y[nt][rows]).
static void put_header(FILE * o, int rows, int cols, int n_cases, int repacked, const void * w, size_t wbytes) {
    put_u32(o, (uint32_t) rows);
    put_u32(o, (uint32_t) cols);
    put_u32(o, (uint32_t) n_cases);
    put_u32(o, (uint32_t) repacked);
    fwrite(w, 1, wbytes, o);
}

#endif
