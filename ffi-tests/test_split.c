// Split models (gguf-split layout, made by examples/split_model.rs): loading
// from the first part and from the list of parts gives the model the unsplit
// file gives (same sizes, description, metadata plus the split.* keys, and
// bit-identical logits); missing, misnamed, misordered and miscounted parts
// are refused with a message, NULL arguments too.
//
// usage: test_split MODEL.gguf DIR
//   DIR holds split-0000{1,2,3}-of-00003.gguf (MODEL in three parts),
//   miss-0000{1,2}-of-00003.gguf (the third part missing) and renamed.gguf
//   (the first part under a name without the split suffix).
#include "test_util.h"

#include <math.h>

static char g_dir[1024];

static const char * path(const char * name) { return path_in(g_dir, name); }

static float * logits_of(struct llama_model * m) {
    llama_token toks[] = {1, 17, 42, 99, 7};
    return last_logits(m, toks, (int) (sizeof toks / sizeof toks[0]));
}

static void same_model(struct llama_model * a, struct llama_model * b, const char * how) {
    CHECK(b != NULL, "%s: loads", how);
    if (!a || !b) return;
    CHECK(llama_model_n_params(a) == llama_model_n_params(b), "%s: n_params", how);
    CHECK(llama_model_size(a) == llama_model_size(b), "%s: size", how);
    char da[256], db[256];
    llama_model_desc(a, da, sizeof da);
    llama_model_desc(b, db, sizeof db);
    CHECK(strcmp(da, db) == 0, "%s: desc '%s' vs '%s'", how, da, db);
    CHECK(llama_model_meta_count(b) == llama_model_meta_count(a) + 3, "%s: metadata has the 3 split.* keys more (%d vs %d)", how,
          llama_model_meta_count(b), llama_model_meta_count(a));
    char v[64];
    CHECK(llama_model_meta_val_str(b, "split.count", v, sizeof v) > 0 && strcmp(v, "3") == 0, "%s: split.count", how);
    // every pair of the unsplit model is there with the same value
    int n = llama_model_meta_count(a), same = 0;
    for (int i = 0; i < n; i++) {
        char k[256], va[4096], vb[4096];
        llama_model_meta_key_by_index(a, i, k, sizeof k);
        llama_model_meta_val_str_by_index(a, i, va, sizeof va);
        if (llama_model_meta_val_str(b, k, vb, sizeof vb) >= 0 && strcmp(va, vb) == 0) same++;
    }
    CHECK(same == n, "%s: %d of %d pairs equal", how, same, n);
    float * la = logits_of(a);
    float * lb = logits_of(b);
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(a));
    CHECK(la && lb && memcmp(la, lb, sizeof(float) * (size_t) n_vocab) == 0, "%s: bit-identical logits", how);
    free(la);
    free(lb);
}

static void refused(struct llama_model * m, const char * needle, const char * how) {
    CHECK(m == NULL, "%s: refused", how);
    CHECK(log_has(needle), "%s: message contains '%s' (log: %s)", how, needle, g_log);
    llama_model_free(m);
    log_clear();
}

int main(int argc, char ** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf DIR\n", argv[0]);
        return 2;
    }
    snprintf(g_dir, sizeof g_dir, "%s", argv[2]);
    llama_log_set(capture_log, NULL);
    struct llama_model_params mp = llama_model_default_params();

    struct llama_model * whole = llama_model_load_from_file(argv[1], mp);
    CHECK(whole != NULL, "the unsplit model loads");

    // --- from the first part: the others are found by name
    struct llama_model * m1 = llama_model_load_from_file(path("split-00001-of-00003.gguf"), mp);
    same_model(whole, m1, "from the first part");
    llama_model_free(m1);

    // --- from the list of parts
    static char p1[2048], p2[2048], p3[2048];
    snprintf(p1, sizeof p1, "%s", path("split-00001-of-00003.gguf"));
    snprintf(p2, sizeof p2, "%s", path("split-00002-of-00003.gguf"));
    snprintf(p3, sizeof p3, "%s", path("split-00003-of-00003.gguf"));
    const char * parts[3] = {p1, p2, p3};
    struct llama_model * m2 = llama_model_load_from_splits(parts, 3, mp);
    same_model(whole, m2, "from the list");
    llama_model_free(m2);

    // --- the parts under any names, in order, through the list: renamed.gguf
    // is the first part, the others keep their names
    const char * renamed_list[3] = {path("renamed.gguf"), parts[1], parts[2]};
    struct llama_model * m3 = llama_model_load_from_splits(renamed_list, 3, mp);
    same_model(whole, m3, "from a list whose first part is renamed");
    llama_model_free(m3);

    // --- what is refused
    log_clear();
    refused(llama_model_load_from_file(path("miss-00001-of-00003.gguf"), mp), "miss-00003-of-00003.gguf", "a missing third part");
    refused(llama_model_load_from_file(path("renamed.gguf"), mp), "invalid split file name", "a first part without the split suffix");
    refused(llama_model_load_from_file(parts[1], mp), "model must be loaded with the first split", "loading from the second part");
    const char * swapped[3] = {parts[0], parts[2], parts[1]};
    refused(llama_model_load_from_splits(swapped, 3, mp), "invalid split file idx: 2", "parts out of order");
    refused(llama_model_load_from_splits(parts, 2, mp), "invalid split count, given: 2 splits, but expected 3", "two of three parts");
    const char * four[4] = {parts[0], parts[1], parts[2], parts[2]};
    refused(llama_model_load_from_splits(four, 4, mp), "invalid split count, given: 4 splits", "four paths for three parts");
    const char * dup[3] = {parts[0], parts[1], parts[1]};
    refused(llama_model_load_from_splits(dup, 3, mp), "invalid split file idx: 1", "a part given twice");
    refused(llama_model_load_from_splits(NULL, 3, mp), "NULL", "NULL paths");
    refused(llama_model_load_from_splits(parts, 0, mp), "", "no paths");
    const char * with_null[3] = {parts[0], NULL, parts[2]};
    refused(llama_model_load_from_splits(with_null, 3, mp), "NULL", "a NULL path");

    // --- an unsplit model given with extra paths: the others are ignored (as in the reference)
    const char * extra[2] = {argv[1], parts[1]};
    struct llama_model * m4 = llama_model_load_from_splits(extra, 2, mp);
    CHECK(m4 != NULL && llama_model_n_params(m4) == llama_model_n_params(whole), "an unsplit model with an extra path loads");
    llama_model_free(m4);

    llama_model_free(whole);
    return finish("test_split");
}
