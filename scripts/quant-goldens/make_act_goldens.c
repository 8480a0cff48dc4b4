// Writes the activation goldens: the golden input (input.f32) quantized to
// Q8_0, Q8_1 and Q8_K by the reference's CPU backend itself
// (ggml_get_type_traits_cpu(type)->from_float, the quantizer its matmul runs
// on activations; on x86 it differs from the *_ref quantizers in scale and
// rounding). Built and run by scripts/make-quant-goldens.sh.
//
// usage: make_act_goldens DIR   (reads DIR/input.f32, writes DIR/act_*.bin)
#include "ggml.h"
#include "ggml-cpu.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char ** argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s DIR\n", argv[0]); return 2; }
    char path[4096];
    snprintf(path, sizeof(path), "%s/input.f32", argv[1]);
    FILE * f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot read %s\n", path); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f) / 4;
    fseek(f, 0, SEEK_SET);
    float * x = malloc((size_t) n * sizeof(float));
    if (fread(x, sizeof(float), (size_t) n, f) != (size_t) n) return 1;
    fclose(f);
    n -= n % 256;
    const enum ggml_type types[3] = {GGML_TYPE_Q8_0, GGML_TYPE_Q8_1, GGML_TYPE_Q8_K};
    const char * names[3] = {"act_q8_0.bin", "act_q8_1.bin", "act_q8_K.bin"};
    ggml_cpu_init();
    for (int i = 0; i < 3; i++) {
        size_t bytes = ggml_row_size(types[i], n);
        void * y = malloc(bytes);
        ggml_get_type_traits_cpu(types[i])->from_float(x, y, n);
        snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]);
        FILE * o = fopen(path, "wb");
        fwrite(y, 1, bytes, o);
        fclose(o);
        free(y);
    }
    free(x);
    return 0;
}
