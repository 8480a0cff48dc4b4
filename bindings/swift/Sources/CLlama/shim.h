// The header behind the CLlama module: llama.h from the include path
// (installed by scripts/install.sh as <prefix>/include/llama.h).
#ifndef CLLAMA_SHIM_H
#define CLLAMA_SHIM_H
#include <llama.h>
#endif
