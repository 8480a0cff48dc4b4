// Prints the FNV-1a-64 hash of the reference's GELU lookup table
// (ggml_table_gelu_f16, filled by ggml_cpu_init), the golden of
// src/context/ops.rs's gelu_table test. Build against the reference:
//   R=~/.cache/minfer/ref-src/llama_cpp_python-0.3.36/vendor/llama.cpp
//   L=$(scripts/install-reference-lib.sh --print-lib-dir)
//   gcc ffi-tests/ref/gelu_table_hash.c -I$R/ggml/include -L$L -lggml-cpu -lggml-base -Wl,-rpath,$L
#include "ggml.h"
#include "ggml-cpu.h"
#include <stdint.h>
#include <stdio.h>

extern ggml_fp16_t ggml_table_gelu_f16[1 << 16];

int main(void) {
    ggml_cpu_init();
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 65536; i++) {
        h = (h ^ ggml_table_gelu_f16[i]) * 1099511628211ull;
    }
    printf("%016llx\n", (unsigned long long) h);
    return 0;
}
