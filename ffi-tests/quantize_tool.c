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
//            imatrix=FILE (an imatrix GGUF or legacy .dat, read and passed as
//            llama.cpp's llama-quantize --imatrix does, metadata keys included)
// Exit status: llama_model_quantize's result (0 on success).
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

#define MAX_KV 20

static void log_quiet(enum ggml_log_level level, const char * text, void * user) {
    (void) user;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("QUANTIZE_TOOL_VERBOSE")) {
        fputs(text, stderr);
    }
}


// --- imatrix files, read as llama-quantize reads them (common_imatrix_load
// and load_imatrix of llama.cpp 0c1e570): a GGUF with NAME.in_sum2 /
// NAME.counts pairs (the means are sums / count per expert, 1 where the
// count is 0), else the legacy binary (values / ncall).

#define MAX_IMAT 4096
static struct llama_model_imatrix_data imat_file[MAX_IMAT + 1];
static char imat_dataset[128];
static int imat_chunks;

static FILE * imf;
static int rd(void * p, size_t n) { return fread(p, 1, n, imf) == n; }
static uint64_t rd_u64(void) { uint64_t v = 0; if (!rd(&v, 8)) v = 0; return v; }
static uint32_t rd_u32(void) { uint32_t v = 0; if (!rd(&v, 4)) v = 0; return v; }
static char * rd_str(void) {
    uint64_t n = rd_u64();
    if (n > (1u << 20)) return NULL;
    char * s = calloc(n + 1, 1);
    if (s && !rd(s, n)) { free(s); return NULL; }
    return s;
}
static int type_size(uint32_t t) {
    static const int sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < 13 ? sz[t] : -1;
}
// skips (or, for the keys we need, reads) one GGUF value of type t
static int skip_value(uint32_t t, const char * key, uint32_t * alignment) {
    if (t == 8) { char * s = rd_str(); if (!s) return 0; free(s); return 1; }
    if (t == 9) {
        uint32_t et = rd_u32();
        uint64_t n = rd_u64();
        for (uint64_t i = 0; i < n; i++) {
            if (et == 8) {
                char * s = rd_str();
                if (!s) return 0;
                if (i == 0 && key && !strcmp(key, "imatrix.datasets")) snprintf(imat_dataset, sizeof imat_dataset, "%s", s);
                free(s);
            } else if (!skip_value(et, NULL, NULL)) return 0;
        }
        return 1;
    }
    int n = type_size(t);
    if (n <= 0) return 0;
    unsigned char buf[8];
    if (!rd(buf, (size_t) n)) return 0;
    if (key && t == 4 && !strcmp(key, "imatrix.chunk_count")) memcpy(&imat_chunks, buf, 4);
    if (key && t == 4 && alignment && !strcmp(key, "general.alignment")) memcpy(alignment, buf, 4);
    return 1;
}

struct imat_tensor { char * name; uint64_t ne[4]; uint32_t n_dims, type; uint64_t offset; };

static int load_imatrix_gguf(const char * path, int * n_out, int * has_metadata) {
    char magic[4];
    if (!rd(magic, 4) || memcmp(magic, "GGUF", 4)) return -1; // not a GGUF
    rd_u32(); // version
    uint64_t n_tensors = rd_u64(), n_kv = rd_u64();
    uint32_t alignment = 32;
    int seen = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        char * key = rd_str();
        if (!key) return 0;
        uint32_t t = rd_u32();
        if (!strcmp(key, "imatrix.datasets") || !strcmp(key, "imatrix.chunk_count") || !strcmp(key, "imatrix.chunk_size")) seen++;
        int ok = skip_value(t, key, &alignment);
        free(key);
        if (!ok) return 0;
    }
    *has_metadata = seen == 3;
    if (n_tensors > 2 * MAX_IMAT) return 0;
    struct imat_tensor * ts = calloc(n_tensors + 1, sizeof *ts);
    for (uint64_t i = 0; i < n_tensors; i++) {
        ts[i].name = rd_str();
        ts[i].n_dims = rd_u32();
        if (!ts[i].name || ts[i].n_dims > 4) return 0;
        for (uint32_t d = 0; d < 4; d++) ts[i].ne[d] = d < ts[i].n_dims ? rd_u64() : 1;
        ts[i].type = rd_u32();
        ts[i].offset = rd_u64();
    }
    long data = (ftell(imf) + alignment - 1) / alignment * alignment;
    int n = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        size_t len = strlen(ts[i].name);
        if (len <= 8 || strcmp(ts[i].name + len - 8, ".in_sum2")) continue;
        const struct imat_tensor * sums = &ts[i], * counts = NULL;
        for (uint64_t j = 0; j < n_tensors; j++) {
            size_t lj = strlen(ts[j].name);
            if (lj == len - 1 && !strncmp(ts[j].name, sums->name, len - 8) && !strcmp(ts[j].name + len - 8, ".counts")) counts = &ts[j];
        }
        if (!counts || sums->type != 0 || counts->type != 0 || n >= MAX_IMAT) return 0;
        uint64_t nval = sums->ne[0] * sums->ne[1] * sums->ne[2] * sums->ne[3];
        uint64_t ncounts = counts->ne[0] * counts->ne[1] * counts->ne[2] * counts->ne[3];
        if (!ncounts || nval % ncounts) return 0;
        float * e = malloc(nval * sizeof *e), * c = malloc(ncounts * sizeof *c);
        fseek(imf, data + (long) sums->offset, SEEK_SET);
        if (!rd(e, nval * 4)) return 0;
        fseek(imf, data + (long) counts->offset, SEEK_SET);
        if (!rd(c, ncounts * 4)) return 0;
        uint64_t ne0 = nval / ncounts;
        for (uint64_t j = 0; j < ncounts; j++) {
            // std::lround of the stored float count
            const float count = (float) (long long) (c[j] < 0 ? (double) c[j] - 0.5 : (double) c[j] + 0.5);
            for (uint64_t k = 0; k < ne0; k++) e[j * ne0 + k] = count > 0.0f ? e[j * ne0 + k] / count : 1.0f;
        }
        free(c);
        char * name = calloc(len - 7, 1);
        memcpy(name, sums->name, len - 8);
        imat_file[n++] = (struct llama_model_imatrix_data) {name, e, nval};
    }
    (void) path;
    *n_out = n;
    return 1;
}

static int load_imatrix_dat(int * n_out) {
    int32_t n_entries = 0;
    if (!rd(&n_entries, 4) || n_entries < 1 || n_entries > MAX_IMAT) return 0;
    for (int i = 0; i < n_entries; i++) {
        int32_t len = 0, ncall = 0, nval = 0;
        if (!rd(&len, 4) || len < 0 || len > 4096) return 0;
        char * name = calloc((size_t) len + 1, 1);
        if (!rd(name, (size_t) len) || !rd(&ncall, 4) || !rd(&nval, 4) || nval < 1) return 0;
        float * e = malloc((size_t) nval * sizeof *e);
        if (!rd(e, (size_t) nval * 4)) return 0;
        if (ncall > 0) for (int32_t k = 0; k < nval; k++) e[k] /= ncall;
        imat_file[i] = (struct llama_model_imatrix_data) {name, e, (size_t) nval};
    }
    int32_t n_calls = 0, len = 0;
    if (rd(&n_calls, 4)) {
        imat_chunks = n_calls;
        if (rd(&len, 4) && len > 0 && len < (int32_t) sizeof imat_dataset) {
            if (rd(imat_dataset, (size_t) len)) imat_dataset[len] = 0; else imat_dataset[0] = 0;
        }
    }
    *n_out = n_entries;
    return 1;
}

// Fills imat_file (NULL-name terminated); 0 on a file llama-quantize rejects
static int load_imatrix(const char * path) {
    imf = fopen(path, "rb");
    if (!imf) return 0;
    int n = 0, has_metadata = 0;
    int r = load_imatrix_gguf(path, &n, &has_metadata);
    if (r < 0) {
        rewind(imf);
        r = load_imatrix_dat(&n);
    } else if (r && !has_metadata) {
        fprintf(stderr, "missing imatrix metadata in file %s\n", path);
        r = 0;
    }
    fclose(imf);
    imat_file[n].name = NULL;
    return r && n > 0;
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
    const char * imatrix_path = NULL;

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
        } else if (!strncmp(a, "imatrix=", 8)) {
            if (!load_imatrix(a + 8)) {
                fprintf(stderr, "failed to load imatrix from '%s'\n", a + 8);
                return 1;
            }
            p.imatrix = imat_file;
            imatrix_path = a + 8;
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
    if (imatrix_path) {
        // the metadata llama-quantize adds with an imatrix, after the user's
        int n = 0;
        while (imat_file[n].name) n++;
        struct llama_model_kv_override * o = &kv[n_kv++];
        snprintf(o->key, sizeof o->key, "quantize.imatrix.file");
        o->tag = LLAMA_KV_OVERRIDE_TYPE_STR;
        snprintf(o->val_str, sizeof o->val_str, "%.127s", imatrix_path);
        if (imat_dataset[0]) {
            o = &kv[n_kv++];
            snprintf(o->key, sizeof o->key, "quantize.imatrix.dataset");
            o->tag = LLAMA_KV_OVERRIDE_TYPE_STR;
            snprintf(o->val_str, sizeof o->val_str, "%.127s", imat_dataset);
        }
        o = &kv[n_kv++];
        snprintf(o->key, sizeof o->key, "quantize.imatrix.entries_count");
        o->tag = LLAMA_KV_OVERRIDE_TYPE_INT;
        o->val_i64 = n;
        if (imat_chunks > 0) {
            o = &kv[n_kv++];
            snprintf(o->key, sizeof o->key, "quantize.imatrix.chunks_count");
            o->tag = LLAMA_KV_OVERRIDE_TYPE_INT;
            o->val_i64 = imat_chunks;
        }
        kv[n_kv].key[0] = 0;
        p.kv_overrides = kv;
    }
    return (int) llama_model_quantize(argv[1], argv[2], &p);
}
