// The llama_sampler API from C: names, a caller's own sampler (user iface)
// inside a chain, chain get/n/remove, clone, reset, copy, get_seed,
// perf_sampler, grammar constructors (a malformed grammar is refused with a
// message naming line and column), and NULL handles everywhere (failure
// value, no crash).
//
// Built with -DAGAINST_REFERENCE (and the reference's headers) it runs
// against the reference library too, minus the checks of our failure
// values for NULL handles and of log text (the reference crashes or prints
// to stderr there): that is how its expectations were checked.
#include "test_util.h"

#include <math.h>

// --- a caller's own sampler: adds `bonus` to token 0, counts its calls
struct my_ctx {
    float bonus;
    int n_apply;
    int n_accept;
    int n_reset;
    int * n_free;
};

static const char * my_name(const struct llama_sampler * smpl) {
    (void) smpl;
    return "mine";
}
static void my_accept(struct llama_sampler * smpl, llama_token token) {
    (void) token;
    ((struct my_ctx *) smpl->ctx)->n_accept++;
}
static void my_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    struct my_ctx * c = (struct my_ctx *) smpl->ctx;
    c->n_apply++;
    for (size_t i = 0; i < cur_p->size; i++) {
        if (cur_p->data[i].id == 0) {
            cur_p->data[i].logit += c->bonus;
        }
    }
}
static void my_reset(struct llama_sampler * smpl) {
    ((struct my_ctx *) smpl->ctx)->n_reset++;
}
static void my_free(struct llama_sampler * smpl) {
    struct my_ctx * c = (struct my_ctx *) smpl->ctx;
    ++*c->n_free;
    free(c);
}
static struct llama_sampler_i my_iface;  // filled in main (C11: no designated-initialiser warnings)
static struct llama_sampler * my_clone(const struct llama_sampler * smpl);

static struct llama_sampler * my_new(float bonus, int * n_free) {
    struct my_ctx * c = calloc(1, sizeof(*c));
    c->bonus = bonus;
    c->n_free = n_free;
    return llama_sampler_init(&my_iface, c);
}
static struct llama_sampler * my_clone(const struct llama_sampler * smpl) {
    const struct my_ctx * c = (const struct my_ctx *) smpl->ctx;
    return my_new(c->bonus, c->n_free);
}

// an iface with apply only and a NULL ctx: clone makes a new shell
static void noop_apply(struct llama_sampler * smpl, llama_token_data_array * cur_p) {
    (void) smpl;
    (void) cur_p;
}
static struct llama_sampler_i noop_iface;

static void fill(llama_token_data * d, int n, uint32_t seed) {
    uint32_t s = seed;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        d[i].id = i;
        d[i].logit = (float) (s >> 8) / 16777216.0f * 10.0f - 5.0f;
        d[i].p = 0.0f;
    }
}

static int run(struct llama_sampler * s, int n_draws, int * out) {
    llama_token_data d[256];
    for (int k = 0; k < n_draws; k++) {
        fill(d, 256, 77u + (uint32_t) k);
        llama_token_data_array cur = { d, 256, -1, false };
        llama_sampler_apply(s, &cur);
        if (cur.selected < 0 || (size_t) cur.selected >= cur.size) {
            return 0;
        }
        out[k] = cur.data[cur.selected].id;
        llama_sampler_accept(s, out[k]);
    }
    return 1;
}

static struct llama_sampler * default_chain(uint32_t seed, bool no_perf) {
    struct llama_sampler_chain_params p = llama_sampler_chain_default_params();
    p.no_perf = no_perf;
    struct llama_sampler * ch = llama_sampler_chain_init(p);
    llama_sampler_chain_add(ch, llama_sampler_init_top_k(40));
    llama_sampler_chain_add(ch, llama_sampler_init_top_p(0.95f, 1));
    llama_sampler_chain_add(ch, llama_sampler_init_temp(0.8f));
    llama_sampler_chain_add(ch, llama_sampler_init_dist(seed));
    return ch;
}

int main(void) {
#ifndef AGAINST_REFERENCE
    llama_log_set(capture_log, NULL);
#endif
    my_iface.name = my_name;
    my_iface.accept = my_accept;
    my_iface.apply = my_apply;
    my_iface.reset = my_reset;
    my_iface.clone = my_clone;
    my_iface.free = my_free;
    noop_iface.apply = noop_apply;

    // --- names, including the "?name" placeholders of disabled samplers
    {
        struct { struct llama_sampler * s; const char * name; } t[] = {
            { llama_sampler_init_greedy(), "greedy" },
            { llama_sampler_init_dist(1), "dist" },
            { llama_sampler_init_top_k(5), "top-k" },
            { llama_sampler_init_top_k(0), "?top-k" },
            { llama_sampler_init_top_p(0.9f, 1), "top-p" },
            { llama_sampler_init_top_p(1.0f, 1), "?top-p" },
            { llama_sampler_init_min_p(0.1f, 1), "min-p" },
            { llama_sampler_init_min_p(0.0f, 1), "?min-p" },
            { llama_sampler_init_typical(0.5f, 1), "typical" },
            { llama_sampler_init_temp(0.7f), "temp" },
            { llama_sampler_init_temp(1.0f), "?temp" },
            { llama_sampler_init_temp_ext(0.7f, 0.2f, 1.0f), "temp-ext" },
            { llama_sampler_init_xtc(0.5f, 0.1f, 1, 1), "xtc" },
            { llama_sampler_init_xtc(0.5f, 0.6f, 1, 1), "?xtc" },
            { llama_sampler_init_top_n_sigma(1.0f), "top-n-sigma" },
            { llama_sampler_init_mirostat(100, 1, 5.0f, 0.1f, 100), "mirostat" },
            { llama_sampler_init_mirostat_v2(1, 5.0f, 0.1f), "mirostat-v2" },
            { llama_sampler_init_penalties(100, 64, 1.1f, 0.0f, 0.0f), "penalties" },
            { llama_sampler_init_penalties(100, 0, 1.1f, 0.0f, 0.0f), "?penalties" },
            { llama_sampler_init_dry(NULL, 0.8f, 1.75f, 2, 64, NULL, 0), "dry" },
            { llama_sampler_init_dry(NULL, 0.0f, 1.75f, 2, 64, NULL, 0), "?dry" },
            { llama_sampler_init_adaptive_p(0.5f, 0.9f, 1), "adaptive-p" },
            { llama_sampler_init_logit_bias(100, 0, NULL), "?logit-bias" },
            { llama_sampler_init_grammar(NULL, "", "root"), "grammar" },
            { llama_sampler_chain_init(llama_sampler_chain_default_params()), "chain" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
            CHECK(t[i].s != NULL, "constructor %zu", i);
            if (t[i].s) {
                CHECK(strcmp(llama_sampler_name(t[i].s), t[i].name) == 0, "name %s, want %s", llama_sampler_name(t[i].s), t[i].name);
                llama_sampler_free(t[i].s);
            }
        }
    }

    // --- a caller's own sampler inside a chain: called, owned, freed once
    {
        int n_free = 0;
        struct llama_sampler * mine = my_new(100.0f, &n_free);
        CHECK(strcmp(llama_sampler_name(mine), "mine") == 0, "user name");
        struct llama_sampler * ch = llama_sampler_chain_init(llama_sampler_chain_default_params());
        llama_sampler_chain_add(ch, mine);
        llama_sampler_chain_add(ch, llama_sampler_init_greedy());
        CHECK(llama_sampler_chain_n(ch) == 2, "chain_n 2");
        CHECK(llama_sampler_chain_get(ch, 0) == mine, "chain_get 0 is the caller's sampler");
        CHECK(llama_sampler_chain_get(ch, -1) == ch, "chain_get -1 is the chain");
        CHECK(llama_sampler_chain_get(ch, 2) == NULL, "chain_get out of range");
        CHECK(llama_sampler_chain_get(ch, -2) == NULL, "chain_get -2");
        CHECK(llama_sampler_chain_get(mine, 0) == NULL, "chain_get on a non-chain");
        int out[5];
        CHECK(run(ch, 5, out), "chain selects");
        CHECK(out[0] == 0 && out[4] == 0, "the +100 bonus on token 0 wins: %d", out[0]);
        struct my_ctx * c = (struct my_ctx *) mine->ctx;
        CHECK(c->n_apply == 5 && c->n_accept == 5, "apply %d accept %d", c->n_apply, c->n_accept);
        llama_sampler_reset(ch);
        CHECK(c->n_reset == 1, "reset reaches the caller's sampler");

        // clone: the caller's clone callback makes the copy
        struct llama_sampler * ch2 = llama_sampler_clone(ch);
        CHECK(ch2 != NULL && llama_sampler_chain_n(ch2) == 2, "clone of a chain");
        CHECK(llama_sampler_chain_get(ch2, 0) != mine, "clone holds a new sampler");
        CHECK(strcmp(llama_sampler_name(llama_sampler_chain_get(ch2, 0)), "mine") == 0, "cloned user sampler");
        llama_sampler_free(ch2);
        CHECK(n_free == 1, "freeing the clone frees its copy: %d", n_free);

        // remove: the chain gives the sampler back and no longer frees it
        struct llama_sampler * removed = llama_sampler_chain_remove(ch, 0);
        CHECK(removed == mine, "remove returns the sampler");
        CHECK(llama_sampler_chain_n(ch) == 1, "chain_n after remove");
        CHECK(llama_sampler_chain_remove(ch, 5) == NULL, "remove out of range");
        CHECK(llama_sampler_chain_remove(ch, -1) == NULL, "remove -1");
        llama_sampler_free(ch);
        CHECK(n_free == 1, "removed sampler not freed by the chain");
        llama_sampler_free(removed);
        CHECK(n_free == 2, "freed by its own free: %d", n_free);

        // an iface without clone and a NULL ctx clones into a new shell
        struct llama_sampler * noop = llama_sampler_init(&noop_iface, NULL);
        struct llama_sampler * noop2 = llama_sampler_clone(noop);
        CHECK(noop2 != NULL && noop2 != noop && noop2->iface == &noop_iface, "shell clone");
        llama_sampler_free(noop);
        llama_sampler_free(noop2);
    }

    // --- clone and reset reproduce a seeded chain; get_seed; perf
    {
        int a[50], b[50], c[50];
        struct llama_sampler * ch = default_chain(4242, false);
        CHECK(llama_sampler_get_seed(ch) == 4242, "chain seed: %u", llama_sampler_get_seed(ch));
        CHECK(run(ch, 20, a), "run");
        struct llama_sampler * cl = llama_sampler_clone(ch);
        CHECK(run(ch, 30, b) && run(cl, 30, c), "run clone");
        CHECK(memcmp(b, c, sizeof(int) * 30) == 0, "a clone continues the same sequence");
        llama_sampler_reset(ch);
        CHECK(run(ch, 20, b), "run after reset");
        CHECK(memcmp(a, b, sizeof(int) * 20) == 0, "reset restarts the seeded sequence");
        struct llama_perf_sampler_data pd = llama_perf_sampler(ch);
        CHECK(pd.n_sample == 70, "perf n_sample %d", pd.n_sample);
        CHECK(pd.t_sample_ms >= 0.0, "perf time");
        llama_perf_sampler_print(ch);
        llama_perf_sampler_reset(ch);
        CHECK(llama_perf_sampler(ch).n_sample == 0, "perf reset");

        // copy: the destination continues from the source's state
        struct llama_sampler * d1 = llama_sampler_init_dist(1);
        struct llama_sampler * d2 = llama_sampler_init_dist(2);
        CHECK(run(d1, 7, a), "run d1");
        llama_sampler_copy(d1, d2);
        CHECK(run(d1, 10, b) && run(d2, 10, c), "run after copy");
        CHECK(memcmp(b, c, sizeof(int) * 10) == 0, "copy carries the rng state");
        llama_sampler_free(d1);
        llama_sampler_free(d2);

        // LLAMA_DEFAULT_SEED draws a random seed, reported by get_seed
        struct llama_sampler * r = llama_sampler_init_dist(LLAMA_DEFAULT_SEED);
        struct llama_sampler * r2 = llama_sampler_init_dist(LLAMA_DEFAULT_SEED);
        CHECK(llama_sampler_get_seed(r) != llama_sampler_get_seed(r2), "two random seeds differ");
        llama_sampler_free(r);
        llama_sampler_free(r2);
        struct llama_sampler * g = llama_sampler_init_greedy();
        CHECK(llama_sampler_get_seed(g) == LLAMA_DEFAULT_SEED, "greedy has no seed");
        llama_sampler_free(g);
        llama_sampler_free(cl);
        llama_sampler_free(ch);
    }

    // --- edge cases on the array itself
    {
        llama_token_data d[4] = { { 0, 1.0f, 0 }, { 1, -INFINITY, 0 }, { 2, 3.0f, 0 }, { 3, 3.0f, 0 } };
        llama_token_data_array cur = { d, 4, -1, false };
        struct llama_sampler * g = llama_sampler_init_greedy();
        llama_sampler_apply(g, &cur);
        CHECK(cur.selected == 2, "greedy: first of tied maxima, got %lld", (long long) cur.selected);
        llama_token_data_array empty = { d, 0, -1, false };
        struct llama_sampler * dist = llama_sampler_init_dist(3);
        llama_sampler_apply(dist, &empty);
        CHECK(empty.selected == -1, "dist on an empty array selects -1");
        struct llama_sampler * tk = llama_sampler_init_top_k(2);
        llama_token_data_array c2 = { d, 4, -1, false };
        llama_sampler_apply(tk, &c2);
        CHECK(c2.size == 2 && c2.sorted, "top-k 2 keeps 2, sorted");
        llama_sampler_free(g);
        llama_sampler_free(dist);
        llama_sampler_free(tk);
    }

#ifndef AGAINST_REFERENCE
    // --- grammars: malformed text refused with line and column
    {
        log_clear();
        struct llama_sampler * s = llama_sampler_init_grammar(NULL, "root ::= \"a\"\nitem ::= (\"b\" | \"c\"\n", "root");
        CHECK(s == NULL, "malformed grammar: NULL");
        CHECK(log_has("line 2, column"), "message names the line and column: %s", g_log);
        log_clear();
        s = llama_sampler_init_grammar_lazy_patterns(NULL, "root ::= [a-", "root", NULL, 0, NULL, 0);
        CHECK(s == NULL && log_has("line 1, column"), "lazy: malformed refused: %s", g_log);
        log_clear();
        const char * bad_patterns[1] = { "[\\s\\S]*?(<tool" };
        s = llama_sampler_init_grammar_lazy_patterns(NULL, "root ::= \"a\"", "root", bad_patterns, 1, NULL, 0);
        CHECK(s == NULL && log_has("invalid trigger pattern"), "lazy: bad trigger pattern refused: %s", g_log);
        log_clear();
        s = llama_sampler_init_grammar(NULL, "start ::= \"a\"", "root");
        CHECK(s == NULL && log_has("does not contain a 'root' symbol"), "missing root refused: %s", g_log);
        log_clear();
        s = llama_sampler_init_grammar(NULL, "root ::= root \"a\" | \"b\"", "root");
        CHECK(s == NULL && log_has("left recursion"), "left recursion refused: %s", g_log);
        log_clear();
        s = llama_sampler_init_grammar(NULL, "root ::= undefined-rule", "root");
        CHECK(s == NULL && log_has("Undefined rule identifier 'undefined-rule'"), "undefined rule named: %s", g_log);
    }

    // --- NULL handles everywhere: failure values, messages, no crash
    {
        log_clear();
        CHECK(llama_sampler_init(NULL, NULL) == NULL, "init with NULL iface");
        CHECK(llama_sampler_name(NULL) == NULL, "name(NULL)");
        llama_sampler_accept(NULL, 1);
        llama_sampler_apply(NULL, NULL);
        llama_sampler_reset(NULL);
        CHECK(llama_sampler_clone(NULL) == NULL, "clone(NULL)");
        llama_sampler_copy(NULL, NULL);
        llama_sampler_free(NULL);
        llama_sampler_chain_add(NULL, NULL);
        CHECK(llama_sampler_chain_get(NULL, 0) == NULL, "chain_get(NULL)");
        CHECK(llama_sampler_chain_n(NULL) == -1, "chain_n(NULL)");
        CHECK(llama_sampler_chain_remove(NULL, 0) == NULL, "chain_remove(NULL)");
        CHECK(llama_sampler_get_seed(NULL) == LLAMA_DEFAULT_SEED, "get_seed(NULL)");
        struct llama_perf_sampler_data pd = llama_perf_sampler(NULL);
        CHECK(pd.n_sample == 0 && pd.t_sample_ms == 0.0, "perf(NULL)");
        llama_perf_sampler_print(NULL);
        llama_perf_sampler_reset(NULL);
        CHECK(llama_sampler_sample(NULL, NULL, 0) == -1, "sample(NULL)");
        CHECK(llama_sampler_init_logit_bias(10, 3, NULL) == NULL, "logit_bias with NULL entries");
        CHECK(llama_get_sampled_token_ith(NULL, 0) == LLAMA_TOKEN_NULL, "sampled token (NULL ctx)");
        CHECK(llama_get_sampled_probs_ith(NULL, 0) == NULL && llama_get_sampled_probs_count_ith(NULL, 0) == 0, "sampled probs (NULL ctx)");
        CHECK(llama_get_sampled_logits_ith(NULL, 0) == NULL && llama_get_sampled_logits_count_ith(NULL, 0) == 0, "sampled logits (NULL ctx)");
        CHECK(llama_get_sampled_candidates_ith(NULL, 0) == NULL && llama_get_sampled_candidates_count_ith(NULL, 0) == 0, "sampled candidates (NULL ctx)");
        CHECK(!llama_set_sampler(NULL, 0, NULL), "set_sampler (NULL ctx)");
        CHECK(g_log_count > 0, "messages logged");

        struct llama_sampler * ch = llama_sampler_chain_init(llama_sampler_chain_default_params());
        struct llama_sampler * g = llama_sampler_init_greedy();
        log_clear();
        llama_sampler_apply(ch, NULL);
        CHECK(log_has("cur_p is NULL"), "apply with a NULL array: %s", g_log);
        llama_sampler_chain_add(ch, NULL);
        CHECK(llama_sampler_chain_n(ch) == 0, "NULL not added");
        log_clear();
        llama_sampler_chain_add(g, g);
        CHECK(log_has("not a chain"), "add to a non-chain refused: %s", g_log);
        CHECK(llama_sampler_chain_n(g) == -1, "chain_n of a non-chain");
        pd = llama_perf_sampler(g);
        CHECK(pd.n_sample == 0, "perf of a non-chain");
        log_clear();
        llama_sampler_copy(ch, g);
        CHECK(log_has("different sampler types"), "copy between types refused: %s", g_log);
        llama_sampler_free(g);
        llama_sampler_free(ch);
    }
#endif

    return finish("test_samplers");
}
