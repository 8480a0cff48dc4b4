// Default parameters: prints every field of the four default-params structs
// in a fixed text form, then what llama_split_path / llama_split_prefix
// return for a set of inputs (buffer sizes, numbers, mismatches). The runner compares the output with
// golden/default_params.txt, which was produced by this same program linked
// against the reference library (see ffi-tests/README.md).
#include "llama.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    struct llama_model_params m = llama_model_default_params();
    printf("model.devices=%p\n", (void *) m.devices);
    printf("model.tensor_buft_overrides=%p\n", (const void *) m.tensor_buft_overrides);
    printf("model.n_gpu_layers=%d\n", m.n_gpu_layers);
    printf("model.split_mode=%d\n", (int) m.split_mode);
    printf("model.load_mode=%d\n", (int) m.load_mode);
    printf("model.lazy_mode=%d\n", (int) m.lazy_mode);
    printf("model.main_gpu=%d\n", m.main_gpu);
    printf("model.tensor_split=%p\n", (const void *) m.tensor_split);
    printf("model.progress_callback=%d\n", m.progress_callback != NULL);
    printf("model.progress_callback_user_data=%p\n", m.progress_callback_user_data);
    printf("model.kv_overrides=%p\n", (const void *) m.kv_overrides);
    printf("model.vocab_only=%d\n", m.vocab_only);
    printf("model.check_tensors=%d\n", m.check_tensors);
    printf("model.use_extra_bufts=%d\n", m.use_extra_bufts);
    printf("model.no_host=%d\n", m.no_host);
    printf("model.no_alloc=%d\n", m.no_alloc);
    printf("model.load_mtp=%d\n", m.load_mtp);

    struct llama_context_params c = llama_context_default_params();
    printf("ctx.n_ctx=%u\n", c.n_ctx);
    printf("ctx.n_batch=%u\n", c.n_batch);
    printf("ctx.n_ubatch=%u\n", c.n_ubatch);
    printf("ctx.n_seq_max=%u\n", c.n_seq_max);
    printf("ctx.n_rs_seq=%u\n", c.n_rs_seq);
    printf("ctx.n_outputs_max=%u\n", c.n_outputs_max);
    printf("ctx.n_outputs_max_per_seq=%u\n", c.n_outputs_max_per_seq);
    printf("ctx.n_threads=%d\n", c.n_threads);
    printf("ctx.n_threads_batch=%d\n", c.n_threads_batch);
    printf("ctx.ctx_type=%d\n", (int) c.ctx_type);
    printf("ctx.rope_scaling_type=%d\n", (int) c.rope_scaling_type);
    printf("ctx.pooling_type=%d\n", (int) c.pooling_type);
    printf("ctx.attention_type=%d\n", (int) c.attention_type);
    printf("ctx.flash_attn_type=%d\n", (int) c.flash_attn_type);
    printf("ctx.rope_freq_base=%.9g\n", c.rope_freq_base);
    printf("ctx.rope_freq_scale=%.9g\n", c.rope_freq_scale);
    printf("ctx.yarn_ext_factor=%.9g\n", c.yarn_ext_factor);
    printf("ctx.yarn_attn_factor=%.9g\n", c.yarn_attn_factor);
    printf("ctx.yarn_beta_fast=%.9g\n", c.yarn_beta_fast);
    printf("ctx.yarn_beta_slow=%.9g\n", c.yarn_beta_slow);
    printf("ctx.yarn_orig_ctx=%u\n", c.yarn_orig_ctx);
    printf("ctx.defrag_thold=%.9g\n", c.defrag_thold);
    printf("ctx.cb_eval=%d\n", c.cb_eval != NULL);
    printf("ctx.cb_eval_user_data=%p\n", c.cb_eval_user_data);
    printf("ctx.type_k=%d\n", (int) c.type_k);
    printf("ctx.type_v=%d\n", (int) c.type_v);
    printf("ctx.abort_callback=%d\n", c.abort_callback != NULL);
    printf("ctx.abort_callback_data=%p\n", c.abort_callback_data);
    printf("ctx.embeddings=%d\n", c.embeddings);
    printf("ctx.offload_kqv=%d\n", c.offload_kqv);
    printf("ctx.no_perf=%d\n", c.no_perf);
    printf("ctx.op_offload=%d\n", c.op_offload);
    printf("ctx.swa_full=%d\n", c.swa_full);
    printf("ctx.kv_unified=%d\n", c.kv_unified);
    printf("ctx.samplers=%p\n", (void *) c.samplers);
    printf("ctx.n_samplers=%zu\n", c.n_samplers);
    printf("ctx.ctx_other=%p\n", (void *) c.ctx_other);

    struct llama_sampler_chain_params s = llama_sampler_chain_default_params();
    printf("sampler_chain.no_perf=%d\n", s.no_perf);

    llama_model_quantize_params q = llama_model_quantize_default_params();
    printf("quantize.nthread=%d\n", q.nthread);
    printf("quantize.ftype=%d\n", (int) q.ftype);
    printf("quantize.output_tensor_type=%d\n", (int) q.output_tensor_type);
    printf("quantize.token_embedding_type=%d\n", (int) q.token_embedding_type);
    printf("quantize.allow_requantize=%d\n", q.allow_requantize);
    printf("quantize.quantize_output_tensor=%d\n", q.quantize_output_tensor);
    printf("quantize.only_copy=%d\n", q.only_copy);
    printf("quantize.pure=%d\n", q.pure);
    printf("quantize.keep_split=%d\n", q.keep_split);
    printf("quantize.dry_run=%d\n", q.dry_run);
    printf("quantize.imatrix=%p\n", (const void *) q.imatrix);
    printf("quantize.kv_overrides=%p\n", (const void *) q.kv_overrides);
    printf("quantize.tt_overrides=%p\n", (const void *) q.tt_overrides);
    printf("quantize.prune_layers=%p\n", (const void *) q.prune_layers);
    printf("quantize.max_buf_size=%zu\n", q.max_buf_size);

    const char * prefixes[3] = {"/models/ggml-model-q4_0", "a", ""};
    const int nums[4][2] = {{1, 4}, {0, 1}, {99998, 99999}, {-3, 7}};
    const size_t sizes[4] = {256, 30, 5, 1};
    for (int p = 0; p < 3; p++) {
        for (int n = 0; n < 4; n++) {
            for (int z = 0; z < 4; z++) {
                char buf[256];
                memset(buf, '#', sizeof(buf));
                buf[255] = 0;
                int r = llama_split_path(buf, sizes[z], prefixes[p], nums[n][0], nums[n][1]);
                printf("split_path(%s,%d,%d,%zu)=%d '%s'\n", prefixes[p], nums[n][0], nums[n][1], sizes[z], r, buf);
            }
        }
    }
    const char * paths[5] = {"/models/ggml-model-q4_0-00002-of-00004.gguf", "x-00001-of-00001.gguf",
                             "-00001-of-00001.gguf", "model.gguf", "m-00002-of-00004.gguf"};
    for (int p = 0; p < 5; p++) {
        for (int n = 0; n < 2; n++) {
            for (int z = 0; z < 4; z++) {
                char buf[256];
                memset(buf, '#', sizeof(buf));
                buf[255] = 0;
                int r = llama_split_prefix(buf, sizes[z], paths[p], n == 0 ? 1 : 0, n == 0 ? 4 : 1);
                printf("split_prefix(%s,%d,%zu)=%d '%s'\n", paths[p], n, sizes[z], r, buf);
            }
        }
    }
    return 0;
}
