// The Swift module map (bindings/swift/Sources/CLlama/module.modulemap) seen
// from clang's modules: llama.h comes in only through `import CLlama`. Prints
// llama_version() and the prompt's token ids as examples-c/simple.c --ids does
// ("prompt: ID ..."), so scripts/test-swift-module.sh can compare them.
// Compiled twice: as Objective-C (@import) and as C (#pragma clang module import).
//
// usage: swift_module_check MODEL.gguf PROMPT
#ifdef __OBJC__
@import CLlama;
#else
#pragma clang module import CLlama
#endif

#include <stdio.h>
#include <string.h>

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf PROMPT\n", argv[0]);
        return 2;
    }
    printf("version: %s\n", llama_version());
    llama_backend_init();
    struct llama_model_params mparams = llama_model_default_params();
    mparams.vocab_only = true;
    struct llama_model * model = llama_model_load_from_file(argv[1], mparams);
    if (model == NULL) {
        fprintf(stderr, "error: unable to load model '%s'\n", argv[1]);
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);
    llama_token tokens[256];
    const int32_t n = llama_tokenize(vocab, argv[2], (int32_t) strlen(argv[2]), tokens, 256, true, true);
    if (n < 0) {
        fprintf(stderr, "error: failed to tokenize the prompt\n");
        return 1;
    }
    printf("prompt:");
    for (int32_t i = 0; i < n; i++) {
        printf(" %d", tokens[i]);
    }
    printf("\n");
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
