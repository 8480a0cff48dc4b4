// quantize_tool: llama_model_quantize from the command line, built once
// against include/llama.h and run on either library (LD_LIBRARY_PATH), so
// that minfer's output can be compared byte for byte with the reference's.
//
// usage: quantize_tool IN.gguf OUT.gguf FTYPE [OPTION...]
//   FTYPE: a llama_ftype value (e.g. 15 for Q4_K_M)
//   options: requant | keep_output_f | only_copy | pure | keep_split | dry_run
//            nthread=N | output_type=T | embd_type=T (ggml_type values)
//            kv=KEY:int:N | kv=KEY:float:X | kv=KEY:bool:0|1 | kv=KEY:str:S
//            prune=N[,N...] | imatrix_empty | imatrix_unused | tt=PATTERN:T
// Exit status: llama_model_quantize's result (0 on success).
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KV 16

static void log_quiet(enum ggml_log_level level, const char * text, void * user) {
    (void) user;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("QUANTIZE_TOOL_VERBOSE")) {
        fputs(text, stderr);
    }
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s IN.gguf OUT.gguf FTYPE [OPTION...]\n", argv[0]);
        return 2;
    }
    llama_log_set(log_quiet, NULL);
    struct llama_model_quantize_params p = llama_model_quantize_default_params();
    p.ftype = (enum llama_ftype) atoi(argv[3]);

    static struct llama_model_kv_override kv[MAX_KV + 1];
    int n_kv = 0;
    static int32_t prune[64];
    static struct llama_model_imatrix_data imat[2];
    static float unused_values[4] = {1, 1, 1, 1};
    static struct llama_model_tensor_override tt[2];
    static char tt_pattern[256];

    for (int i = 4; i < argc; i++) {
        const char * a = argv[i];
        if (!strcmp(a, "requant")) p.allow_requantize = true;
        else if (!strcmp(a, "keep_output_f")) p.quantize_output_tensor = false;
        else if (!strcmp(a, "only_copy")) p.only_copy = true;
        else if (!strcmp(a, "pure")) p.pure = true;
        else if (!strcmp(a, "keep_split")) p.keep_split = true;
        else if (!strcmp(a, "dry_run")) p.dry_run = true;
        else if (!strncmp(a, "nthread=", 8)) p.nthread = atoi(a + 8);
        else if (!strncmp(a, "output_type=", 12)) p.output_tensor_type = (enum ggml_type) atoi(a + 12);
        else if (!strncmp(a, "embd_type=", 10)) p.token_embedding_type = (enum ggml_type) atoi(a + 10);
        else if (!strcmp(a, "imatrix_empty")) {
            imat[0].name = NULL;
            p.imatrix = imat;
        } else if (!strcmp(a, "imatrix_unused")) {
            // an entry that names no tensor: the quantization runs without it
            imat[0].name = "no.such.tensor";
            imat[0].data = unused_values;
            imat[0].size = 4;
            imat[1].name = NULL;
            p.imatrix = imat;
        } else if (!strncmp(a, "tt=", 3)) {
            const char * colon = strrchr(a + 3, ':');
            if (!colon) return 2;
            snprintf(tt_pattern, sizeof tt_pattern, "%.*s", (int) (colon - (a + 3)), a + 3);
            tt[0].pattern = tt_pattern;
            tt[0].type = (enum ggml_type) atoi(colon + 1);
            tt[1].pattern = NULL;
            p.tt_overrides = tt;
        } else if (!strncmp(a, "prune=", 6)) {
            int n = 0;
            for (char * s = (char *) a + 6; *s && n < 63;) {
                prune[n++] = (int32_t) strtol(s, &s, 10);
                if (*s == ',') s++;
            }
            prune[n] = -1;
            p.prune_layers = prune;
        } else if (!strncmp(a, "kv=", 3) && n_kv < MAX_KV) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s", a + 3);
            char * key = strtok(buf, ":");
            char * type = strtok(NULL, ":");
            char * val = strtok(NULL, "");
            if (!key || !type || !val) return 2;
            struct llama_model_kv_override * o = &kv[n_kv++];
            snprintf(o->key, sizeof o->key, "%s", key);
            if (!strcmp(type, "int")) { o->tag = LLAMA_KV_OVERRIDE_TYPE_INT; o->val_i64 = atoll(val); }
            else if (!strcmp(type, "float")) { o->tag = LLAMA_KV_OVERRIDE_TYPE_FLOAT; o->val_f64 = atof(val); }
            else if (!strcmp(type, "bool")) { o->tag = LLAMA_KV_OVERRIDE_TYPE_BOOL; o->val_bool = atoi(val) != 0; }
            else { o->tag = LLAMA_KV_OVERRIDE_TYPE_STR; snprintf(o->val_str, sizeof o->val_str, "%s", val); }
            kv[n_kv].key[0] = 0;
            p.kv_overrides = kv;
        } else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    return (int) llama_model_quantize(argv[1], argv[2], &p);
}
