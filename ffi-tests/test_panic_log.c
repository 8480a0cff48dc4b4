// The boundary and the log: a panic forced inside an exported function (the
// test-only hook) returns the failure value and the process goes on; every
// message goes to the installed callback; llama_log_get reports it; NULL
// restores the default.
#include "test_util.h"

int32_t minfer_test_panic(bool do_panic);  // test-hooks build only

static void other_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level;
    (void) text;
    ++*(int *) user_data;
}

int main(void) {
    llama_backend_init();
    int tag = 0;
    llama_log_set(capture_log, &tag);

    ggml_log_callback cb = NULL;
    void * ud = NULL;
    llama_log_get(&cb, &ud);
    CHECK(cb == capture_log && ud == &tag, "llama_log_get returns the installed callback");
    llama_log_get(NULL, NULL);  // NULL out-pointers are fine

    // A panic inside the boundary: failure value, a logged message, and the
    // process (and the library) keep working.
    log_clear();
    CHECK(minfer_test_panic(false) == 1, "no panic: 1");
    for (int i = 0; i < 3; i++) {
        log_clear();
        CHECK(minfer_test_panic(true) == -1, "panic: failure value -1");
        CHECK(log_has("minfer_test_panic") && log_has("panic"), "panic logged: %s", g_log);
        CHECK(g_log_count == 1, "exactly one message, got %d", g_log_count);
    }
    CHECK(minfer_test_panic(false) == 1, "works after panics");

    // A NULL handle gets the failure value and a message through the callback.
    log_clear();
    CHECK(llama_model_n_embd(NULL) == -1, "NULL model: -1");
    CHECK(log_has("llama_model_n_embd") && log_has("NULL"), "message names the function: %s", g_log);

    // Replacing the callback routes later messages to the new one.
    int count = 0;
    llama_log_set(other_log, &count);
    llama_model_n_embd(NULL);
    CHECK(count == 1, "second callback got the message (count %d)", count);

    // NULL restores the default (stderr); llama_log_get then reports a
    // non-NULL default callback.
    llama_log_set(NULL, NULL);
    llama_log_get(&cb, &ud);
    CHECK(cb != NULL && cb != capture_log && cb != other_log && ud == NULL, "default callback restored");

    // Misc process-wide functions.
    CHECK(llama_time_us() >= 0, "time");
    int64_t t0 = llama_time_us();
    CHECK(llama_time_us() >= t0, "monotonic time");
    CHECK(ggml_time_us() >= t0, "ggml_time_us shares the clock");
    const char * info = llama_print_system_info();
    CHECK(info != NULL && strstr(info, "CPU : ") != NULL, "system info: %s", info ? info : "(null)");
#if defined(__x86_64__)
    CHECK(strstr(info, "AVX2 = ") != NULL, "system info lists AVX2: %s", info);
#endif
    CHECK(llama_supports_mmap() && !llama_supports_gpu_offload() && !llama_supports_rpc(), "supports_*");
    CHECK(llama_max_devices() == 16 && llama_max_parallel_sequences() == 256, "max_devices/max_parallel_sequences");
    CHECK(strcmp(llama_ftype_name(LLAMA_FTYPE_MOSTLY_Q4_K_M), "Q4_K - Medium") == 0, "ftype name");
    CHECK(strcmp(llama_ftype_name((enum llama_ftype) (LLAMA_FTYPE_MOSTLY_Q4_1 | LLAMA_FTYPE_GUESSED)), "(guessed) Q4_1") == 0, "guessed ftype name");
    CHECK(strcmp(llama_flash_attn_type_name(LLAMA_FLASH_ATTN_TYPE_AUTO), "auto") == 0, "flash attn name");
    CHECK(llama_load_mode_from_str("mmap+mlock") == LLAMA_LOAD_MODE_MMAP_MLOCK, "load mode from str");
    CHECK(strcmp(llama_load_mode_name(LLAMA_LOAD_MODE_DIRECT_IO), "dio") == 0, "load mode name");
    CHECK(strcmp(llama_model_meta_key_str(LLAMA_MODEL_META_KEY_SAMPLING_TOP_K), "general.sampling.top_k") == 0, "meta key str");
    CHECK(llama_model_meta_key_str((enum llama_model_meta_key) 99) == NULL, "unknown meta key: NULL");
    CHECK(llama_version() != NULL, "version");
    llama_numa_init(GGML_NUMA_STRATEGY_DISTRIBUTE);
    llama_backend_free();
    return finish("panic_log");
}
