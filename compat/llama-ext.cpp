// libllama-ext.so: the C++ staging API of llama.cpp's src/llama-ext.h that the
// reference's own programs call (libllama-common: common/fit.cpp,
// common/speculative.cpp; libmtmd: tools/mtmd/mtmd-helper-gen.cpp), implemented
// on minfer's C API for a CPU-only runtime of dense models.
//
// Optional and separate: minfer's libllama stays a C library without a C++
// runtime; only programs built from llama.cpp's source that use these 15
// functions link this library next to it (scripts/run-llama-tools.sh builds it).
// Compiled against the reference's src/llama-ext.h (so every signature, and the
// C++ mangled name, is the reference's) and against minfer's include/llama.h.
//
// What each returns, and why it is the reference's answer for the same model on a
// CPU-only build:
//   - devices: the reference lists GPU/RPC devices only (the CPU is not one), so
//     a CPU-only process has 0; minfer places nothing on ggml devices.
//   - n_expert, dflash_selector_top_k: the GGUF keys the reference reads
//     ("<arch>.expert_count", "<arch>.selector_top_k"), 0 when absent.
//   - NextN/MTP heads, per-layer input embeddings, a second ("other") context,
//     EAGLE3/DFlash target layers: only draft/MTP architectures have them, which
//     minfer does not run; the getters return NULL / 0 (the reference's values
//     when nothing was enabled); asking to enable them is refused with a message.
//   - the token embedding matrix: its size (n_vocab x n_embd) when asked for it;
//     the values are not reachable through the C API: 0 (the reference's failure
//     value) with a message.
//   - memory breakdown: one host entry (the CPU buffer type, when libggml-cpu is
//     loaded in the process, as in every program that calls this) with the
//     weights' bytes (llama_model_size) and the KV cache's bytes as minfer
//     allocates it (n_ctx cells x every layer's K and V rows, f16 — the default
//     type_k/type_v); compute 0: minfer's per-decode scratch is not exposed.

#include "llama.h"
#ifndef LLAMA_API // minfer's llama.h has no export macro; llama-ext.h uses the reference's
#define LLAMA_API __attribute__((visibility("default")))
#endif
#include "llama-ext.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// Message through the host's llama log callback (minfer's sink), as the library's own.
void log_error(const char * fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ggml_log_callback cb = nullptr;
    void * ud = nullptr;
    llama_log_get(&cb, &ud);
    std::string line = std::string(buf) + "\n";
    if (cb) {
        cb(GGML_LOG_LEVEL_ERROR, line.c_str(), ud);
    } else {
        fputs(line.c_str(), stderr);
    }
}

// A metadata value as a string ("" when absent).
std::string meta(const llama_model * model, const std::string & key) {
    char buf[256];
    int32_t n = llama_model_meta_val_str(model, key.c_str(), buf, sizeof buf);
    return n < 0 ? std::string() : std::string(buf);
}

// "<arch>.<suffix>" as an integer, 0 when absent (the reference's hparams default).
int64_t arch_key(const llama_model * model, const char * suffix) {
    if (!model) {
        return 0;
    }
    std::string v = meta(model, meta(model, "general.architecture") + "." + suffix);
    return v.empty() ? 0 : strtoll(v.c_str(), nullptr, 10);
}

// The CPU backend's buffer type if libggml-cpu is in the process (looked up at run
// time so this library needs no ggml at link time).
ggml_backend_buffer_type_t cpu_buffer_type() {
    using fn_t = ggml_backend_buffer_type_t (*)(void);
    // SAFETY-equivalent note: dlsym returns the function or NULL; the cast is the
    // documented way to obtain a function pointer from it.
    auto fn = reinterpret_cast<fn_t>(dlsym(RTLD_DEFAULT, "ggml_backend_cpu_buffer_type"));
    return fn ? fn() : nullptr;
}

// Bytes of minfer's KV cache: n_ctx cells, per layer n_head_kv * head_dim for K and
// for V, f16 elements.
size_t kv_bytes(const llama_context * ctx, const llama_model * model) {
    const int64_t n_embd = llama_model_n_embd(model);
    const int64_t n_head = llama_model_n_head(model);
    const int64_t n_head_kv = llama_model_n_head_kv(model);
    int64_t head_k = arch_key(model, "attention.key_length");
    int64_t head_v = arch_key(model, "attention.value_length");
    if (head_k == 0 && n_head > 0) head_k = n_embd / n_head;
    if (head_v == 0 && n_head > 0) head_v = n_embd / n_head;
    const int64_t per_cell = llama_model_n_layer(model) * n_head_kv * (head_k + head_v) * 2;
    return per_cell > 0 ? (size_t) per_cell * llama_n_ctx(ctx) : 0;
}

} // namespace

int32_t llama_model_n_expert(const struct llama_model * model) {
    return (int32_t) arch_key(model, "expert_count");
}

int32_t llama_model_n_devices(const struct llama_model *) {
    return 0;
}

ggml_backend_dev_t llama_model_get_device(const struct llama_model *, int) {
    return nullptr; // every index is out of range: there are no devices
}

llama_memory_breakdown llama_get_memory_breakdown(const struct llama_context * ctx) {
    llama_memory_breakdown ret;
    ggml_backend_buffer_type_t host = cpu_buffer_type();
    if (!ctx || !host) {
        return ret;
    }
    const llama_model * model = llama_get_model(ctx);
    llama_memory_breakdown_data & mb = ret[host];
    mb.model = llama_model_size(model);
    mb.context = kv_bytes(ctx, model);
    mb.compute = 0;
    return ret;
}

void llama_set_embeddings_nextn(struct llama_context *, bool value, bool) {
    if (value) {
        log_error("llama_set_embeddings_nextn: minfer runs no NextN/MTP heads; nothing will be output");
    }
}

void llama_set_nextn_layer_offset(struct llama_context *, int32_t offset) {
    if (offset != 0) {
        log_error("llama_set_nextn_layer_offset: minfer runs no NextN/MTP heads (offset %d ignored)", offset);
    }
}

float * llama_get_embeddings_nextn(struct llama_context *) {
    return nullptr;
}

float * llama_get_embeddings_nextn_ith(struct llama_context *, int32_t i) {
    log_error("llama_get_embeddings_nextn_ith: invalid nextn embeddings id %d, reason: no nextn embeddings", i);
    return nullptr;
}

void llama_set_embeddings_layer_inp(struct llama_context * ctx, uint32_t lid, bool value) {
    if (value) {
        const llama_model * model = ctx ? llama_get_model(ctx) : nullptr;
        log_error("llama_set_embeddings_layer_inp: layer %u of %d: minfer does not output per-layer "
                  "input embeddings", lid, model ? llama_model_n_layer(model) : -1);
    }
}

float * llama_get_embeddings_layer_inp(struct llama_context *, uint32_t lid) {
    log_error("llama_get_embeddings_layer_inp: layer %u: no per-layer input embeddings were requested", lid);
    return nullptr;
}

llama_context * llama_get_ctx_other(struct llama_context *) {
    return nullptr; // only MTP/assistant architectures are given one
}

int32_t llama_model_dflash_selector_top_k(const struct llama_model * model) {
    return (int32_t) arch_key(model, "selector_top_k");
}

const int32_t * llama_model_target_layer_ids(const struct llama_model *) {
    return nullptr; // EAGLE3/DFlash draft models only
}

uint32_t llama_model_target_layer_ids_n(const struct llama_model *) {
    return 0;
}

uint32_t llama_model_get_tok_embd(const struct llama_model * model, float * out) {
    if (!model) {
        return 0;
    }
    const int64_t n = (int64_t) llama_vocab_n_tokens(llama_model_get_vocab(model)) * llama_model_n_embd(model);
    if (out == nullptr) {
        return n > 0 && n <= UINT32_MAX ? (uint32_t) n : 0; // the size, as the reference answers
    }
    log_error("llama_model_get_tok_embd: not implemented yet: the token embedding matrix is not "
              "reachable through minfer's C API");
    return 0;
}
