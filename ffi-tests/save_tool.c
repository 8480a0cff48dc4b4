// save_tool: loads a model and writes it back with llama_model_save_to_file;
// built once against include/llama.h and run on either library
// (LD_LIBRARY_PATH), so the two outputs can be compared byte for byte.
//
// usage: save_tool IN.gguf OUT.gguf     (exit 1 if the model does not load
//                                        or no output file was written)
#include "llama.h"

#include <stdio.h>

static void errors_only(enum ggml_log_level level, const char * text, void * user) {
    (void) user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s IN.gguf OUT.gguf\n", argv[0]);
        return 2;
    }
    llama_log_set(errors_only, NULL);
    struct llama_model * m = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!m) return 1;
    remove(argv[2]);
    llama_model_save_to_file(m, argv[2]);
    llama_model_free(m);
    FILE * f = fopen(argv[2], "rb");
    if (!f) return 1;
    fclose(f);
    return 0;
}
