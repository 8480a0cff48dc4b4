// Tokenizer goldens through the C API: for every row of a golden TSV
// (index, add_special, parse_special, n_tokens, ids, detokenized hex), the
// reference library's llama_tokenize output and llama_detokenize(ids,
// remove_special=false, unparse_special=parse_special) must come back
// identical from this library.
//
// usage: test_tokenizer_goldens MODEL.gguf CORPUS.hex GOLDEN.tsv
// Prints "tokenizer_goldens: N passed, M failed" (one check per row: ids and
// detokenized bytes both identical).
//
// usage: test_tokenizer_goldens MODEL.gguf CORPUS.hex --write > GOLDEN.tsv
// Writes the golden instead, from the library it runs on: every corpus string
// x add_special x parse_special (ffi-tests/gen_tokenizer_goldens.sh runs it on
// the reference library).
#include "test_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet_log(enum ggml_log_level level, const char * text, void * user_data) {
    (void) level; (void) text; (void) user_data;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// decodes hex in place; returns the byte count
static size_t unhex(char * s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        s[o++] = (char) (hexval(s[i]) * 16 + hexval(s[i + 1]));
    }
    return o;
}

// --write: one row per (string, add_special, parse_special), in that order:
// index, add_special, parse_special, n_tokens, ids (comma-separated),
// llama_detokenize(ids, remove_special=false, unparse_special=parse_special) in hex
static int write_golden(const struct llama_vocab * vocab, char ** texts, const size_t * tlens, size_t n_texts) {
    int32_t * ids = malloc(sizeof(int32_t) * (1 << 20));
    char * detok = malloc(1 << 22);
    int rc = 0;
    for (size_t idx = 0; idx < n_texts && rc == 0; idx++) {
        for (int add_special = 0; add_special <= 1; add_special++) {
            for (int parse_special = 0; parse_special <= 1; parse_special++) {
                int32_t n = llama_tokenize(vocab, texts[idx], (int32_t) tlens[idx], ids, 1 << 20, add_special, parse_special);
                int32_t m = n >= 0 ? llama_detokenize(vocab, ids, n, detok, 1 << 22, false, parse_special) : -1;
                if (n < 0 || m < 0) {
                    fprintf(stderr, "row %zu: tokenize %d, detokenize %d\n", idx, n, m);
                    rc = 1;
                    break;
                }
                printf("%zu\t%d\t%d\t%d\t", idx, add_special, parse_special, n);
                for (int32_t i = 0; i < n; i++) printf(i ? ",%d" : "%d", ids[i]);
                printf("\t");
                for (int32_t i = 0; i < m; i++) printf("%02x", (unsigned char) detok[i]);
                printf("\n");
            }
        }
    }
    free(ids); free(detok);
    return rc;
}

int main(int argc, char ** argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf CORPUS.hex GOLDEN.tsv|--write\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet_log, NULL);
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        printf("could not load %s\n", argv[1]);
        printf("tokenizer_goldens: 0 passed, 1 failed\n");
        return 1;
    }
    const struct llama_vocab * vocab = llama_model_get_vocab(model);

    // corpus: one hex line per string
    size_t clen = 0;
    char * corpus = read_file(argv[2], &clen);
    if (!corpus) { fprintf(stderr, "cannot read %s\n", argv[2]); return 2; }
    char ** texts = NULL; size_t * tlens = NULL; size_t n_texts = 0, cap = 0;
    for (char * line = corpus; *line; ) {
        char * nl = strchr(line, '\n');
        size_t n = nl ? (size_t) (nl - line) : strlen(line);
        if (n_texts == cap) {
            cap = cap ? cap * 2 : 256;
            texts = realloc(texts, cap * sizeof(*texts));
            tlens = realloc(tlens, cap * sizeof(*tlens));
        }
        texts[n_texts] = line;
        tlens[n_texts] = unhex(line, n);
        n_texts++;
        if (!nl) break;
        line = nl + 1;
    }

    if (strcmp(argv[3], "--write") == 0) {
        int rc = write_golden(vocab, texts, tlens, n_texts);
        free(corpus); free(texts); free(tlens);
        llama_model_free(model);
        return rc;
    }

    size_t glen = 0;
    char * golden = read_file(argv[3], &glen);
    if (!golden) { fprintf(stderr, "cannot read %s\n", argv[3]); return 2; }

    int pass = 0, fail = 0, shown = 0;
    int32_t * ids = malloc(sizeof(int32_t) * (1 << 20));
    int32_t * want = malloc(sizeof(int32_t) * (1 << 20));
    char * detok = malloc(1 << 22);
    for (char * line = golden; *line; ) {
        char * nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (*line) {
            char * f[6] = {0};
            int nf = 0;
            f[nf++] = line;
            for (char * p = line; *p && nf < 6; p++) {
                if (*p == '\t') { *p = 0; f[nf++] = p + 1; }
            }
            if (nf < 5) { fail++; printf("malformed row\n"); goto next; }
            size_t idx = strtoul(f[0], NULL, 10);
            int add_special = atoi(f[1]), parse_special = atoi(f[2]);
            int n_want = atoi(f[3]);
            int nw = 0;
            for (char * p = f[4]; *p; ) {
                want[nw++] = (int32_t) strtol(p, &p, 10);
                if (*p == ',') p++;
            }
            char * dhex = nf > 5 ? f[5] : (char *) "";
            size_t dlen = unhex(dhex, strlen(dhex));
            if (idx >= n_texts || nw != n_want) { fail++; printf("row %zu: bad golden\n", idx); goto next; }

            int32_t n = llama_tokenize(vocab, texts[idx], (int32_t) tlens[idx], ids, 1 << 20, add_special, parse_special);
            int ids_ok = n == n_want && memcmp(ids, want, sizeof(int32_t) * (size_t) n_want) == 0;
            int32_t m = llama_detokenize(vocab, want, n_want, detok, 1 << 22, false, parse_special);
            int det_ok = m >= 0 && (size_t) m == dlen && memcmp(detok, dhex, dlen) == 0;
            if (ids_ok && det_ok) {
                pass++;
            } else {
                fail++;
                if (shown++ < 8) {
                    printf("MISMATCH row %zu add_special=%d parse_special=%d:", idx, add_special, parse_special);
                    if (!ids_ok) {
                        printf("\n  want %d ids:", n_want);
                        for (int i = 0; i < n_want && i < 40; i++) printf(" %d", want[i]);
                        printf("\n  got  %d ids:", n);
                        for (int i = 0; i < n && i < 40; i++) printf(" %d", ids[i]);
                    }
                    if (!det_ok) {
                        printf("\n  detokenized: want %zu bytes '%.*s', got %d bytes '%.*s'", dlen, (int) dlen, dhex,
                               m, m > 0 ? m : 0, detok);
                    }
                    printf("\n");
                }
            }
        }
    next:
        if (!nl) break;
        line = nl + 1;
    }
    printf("%s: %d/%d rows match\n", argv[3], pass, pass + fail);
    printf("tokenizer_goldens: %d passed, %d failed\n", pass, fail);
    free(ids); free(want); free(detok); free(golden); free(corpus); free(texts); free(tlens);
    llama_model_free(model);
    return fail == 0 ? 0 : 1;
}
