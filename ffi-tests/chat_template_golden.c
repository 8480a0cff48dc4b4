// chat_template_golden: prints what llama_chat_apply_template and
// llama_chat_builtin_templates return, for comparison with the reference.
//
// usage: chat_template_golden TEMPLATES_DIR [MODEL.gguf ...]
//
// Written against llama.h only: compiled once, it runs on minfer or, with
// LD_LIBRARY_PATH pointing at the reference's lib directory, on the
// reference library (ffi-tests/gen_chat_template_golden.sh makes
// golden/chat_templates.txt that way). Sections:
//   builtin   the name list (and a partial listing into a short array)
//   apply     every built-in name x 10 conversations x add_ass 0/1: return
//             value and the exact bytes (the add_ass=1 line shows only what
//             it appends when the add_ass=0 text is its prefix)
//   detect    template strings (synthetic ones for each heuristic, every
//             .jinja file of TEMPLATES_DIR, each model's chat template): which
//             built-in names give the same outputs on all 20 cases, and a
//             hash of those outputs
//   buffer    short and long buffers: return value and every byte of the
//             buffer (pre-filled with 0xAB) after the call
#define _POSIX_C_SOURCE 200809L
#include "test_util.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct conv {
    const char * name;
    size_t n;
    struct llama_chat_message msg[10];
};

static const struct conv CONVS[] = {
    { "none", 0, { { NULL, NULL } } },
    { "sys_user", 2, { { "system", "You are a helpful assistant." }, { "user", "Hello!" } } },
    { "user", 1, { { "user", "What is 2+2?" } } },
    { "multi", 4, { { "system", "Be brief." }, { "user", "Hi" }, { "assistant", "Hello, how can I help?" },
                    { "user", "Tell me a joke." } } },
    { "no_sys_multi", 4, { { "user", "one" }, { "assistant", "  two  " }, { "user", "three" }, { "assistant", "four\n" } } },
    { "empty", 4, { { "system", "" }, { "user", "" }, { "assistant", "" }, { "user", "" } } },
    { "unicode", 4, { { "system", " Syst\xc3\xa8me: \xc3\xa9t\xc3\xa9 \t" }, { "user", "h\xc3\xa9llo \xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x99\x82\n" },
                      { "assistant", "\n \xc2\xbfqu\xc3\xa9? \xe2\x80\x94 ok \r\n" }, { "user", "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82\x0b" } } },
    { "roles", 9, { { "tool", "{\"result\": 4}" }, { "user", "q" }, { "function", "f()" }, { "assistant_tool_call", "[call]" },
                    { "", "anon" }, { "model", "m" }, { "narrator", "n" }, { "system", "late system" }, { "user", "end" } } },
    { "assistant_first", 3, { { "assistant", "I start." }, { "system", "sys2" }, { "user", "ok" } } },
    { "two_systems", 3, { { "system", "A" }, { "system", " B " }, { "user", "u" } } },
};
#define N_CONVS (sizeof(CONVS) / sizeof(CONVS[0]))

// Synthetic template strings, one or more per branch of the reference's
// detection heuristics, and strings that are no template.
static const char * const SYNTHETIC[] = {
    "", "ChatML", "chatml ", "foo", "mistral", "mistral-v2",
    "<|im_start|>", "<|im_start|><|im_sep|>", "<|im_start|><end_of_utterance>",
    "[INST] [SYSTEM_PROMPT]", "' [INST] ' + system_message", "[AVAILABLE_TOOLS]\"[INST]\"", "[AVAILABLE_TOOLS][INST]",
    "[INST] <<SYS>>", "[INST] bos_token + '[INST] <<SYS>>", "[INST] content.strip() bos_token + '[INST]",
    "<|assistant|><|end|>", "[gMASK]<sop>", "<|assistant|><|user|><|tool_declare|>", "<|assistant|><|user|></s>",
    "<|assistant|><|user|>", "<|{{ item['role'] }}|><|begin_of_image|>", "<|user|><|endoftext|>",
    "bos_token + message['role']", "<start_of_turn>", "'\\n\\nAssistant: ' + eos_token", "GPT4 Correct ",
    "USER: ASSISTANT: ", "SYSTEM: USER: ASSISTANT: ", "### Instruction:<|EOT|>", "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>",
    "<|start_header_id|><|end_header_id|>", "[gMASK]sop", "<\xe7\x94\xa8\xe6\x88\xb7>",
    "'Assistant: ' + message['content'] + eos_token",
    "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><\xef\xbd\x9cUser\xef\xbd\x9c><\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "[|system|][|assistant|][|endofturn|]", "[|system|][|assistant|][|endofturn|][|tool|]",
    "rwkv-world", "{{- 'User: ' + message['content']|trim + '\\n\\n' -}}",
    "<|start_of_role|>", "<|start_of_role|><tools>", "<|start_of_role|><tool_call>g4_default_system_message",
    "message['role'] + additional_special_tokens[0] + message['content'] + additional_special_tokens[1]",
    "<|role_start|>", " \xd0\x90\xd1\x81\xd1\x81\xd0\xb8\xd1\x81\xd1\x82\xd0\xb5\xd0\xbd\xd1\x82:",
    "<role>ASSISTANT</role>'HUMAN'", "<role>ASSISTANT</role>\"HUMAN\"<think>", "<role>ASSISTANT</role><role>HUMAN</role><|role_end|>",
    "<|header_start|><|header_end|>", "<|endofuserprompt|>", "<|extra_0|><|extra_4|>", "<|start|><|channel|>",
    "<\xef\xbd\x9chy_Assistant\xef\xbd\x9c><\xef\xbd\x9chy_begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<\xef\xbd\x9chy_Assistant\xef\xbd\x9c><\xef\xbd\x9chy_place\xe2\x96\x81holder\xe2\x96\x81no\xe2\x96\x81" "3\xef\xbd\x9c>",
    "<|im_assistant|>assistant<|im_middle|>", "<seed:bos>", "'Assistant: '  + message['content'] + '<|separator|>",
    "[unused9]\xe7\xb3\xbb\xe7\xbb\x9f\xef\xbc\x9a[unused10]", "<|begin|><|end|><|content|>", "<|begin|><|end|>",
};
#define N_SYNTHETIC (sizeof(SYNTHETIC) / sizeof(SYNTHETIC[0]))

// Prints bytes as a C-like string literal. raw_utf8: bytes >= 0x80 as they
// are (readable text) or as \xHH (buffer dumps, where they may be cut).
static void print_escaped(const char * s, size_t n, int raw_utf8) {
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        if (c == '\\' || c == '"') printf("\\%c", c);
        else if (c == '\n') printf("\\n");
        else if (c == '\t') printf("\\t");
        else if (c == '\r') printf("\\r");
        else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !raw_utf8)) printf("\\x%02x", c);
        else putchar(c);
    }
    putchar('"');
}

// FNV-1a over bytes
static uint64_t fnv(uint64_t h, const void * p, size_t n) {
    const unsigned char * b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

// Formats a conversation into a fresh buffer (NULL when the call fails);
// *ret gets the return value.
static char * format(const char * tmpl, const struct conv * c, int add_ass, int32_t * ret) {
    *ret = llama_chat_apply_template(tmpl, c->msg, c->n, add_ass != 0, NULL, 0);
    if (*ret < 0) return NULL;
    char * buf = malloc((size_t) *ret + 1);
    int32_t again = llama_chat_apply_template(tmpl, c->msg, c->n, add_ass != 0, buf, *ret + 1);
    if (again != *ret) {
        printf("ERROR second call returned %d, first %d\n", again, *ret);
    }
    return buf;
}

// The hash of a template string's results over every conversation and add_ass.
static uint64_t signature(const char * tmpl) {
    uint64_t h = 14695981039346656037ull;
    for (size_t c = 0; c < N_CONVS; c++) {
        for (int add_ass = 0; add_ass < 2; add_ass++) {
            int32_t ret;
            char * s = format(tmpl, &CONVS[c], add_ass, &ret);
            h = fnv(h, &ret, sizeof ret);
            if (s) h = fnv(h, s, (size_t) ret);
            free(s);
        }
    }
    return h;
}

static const char ** g_names;
static uint64_t * g_sigs;
static int32_t g_n_names;

static void print_detect(const char * kind, const char * label, const char * tmpl) {
    uint64_t sig = signature(tmpl);
    int32_t ret;
    char * probe = format(tmpl, &CONVS[3], 1, &ret);
    printf("detect %s=", kind);
    print_escaped(label, strlen(label), 1);
    if (probe == NULL) {
        printf(" -> unsupported ret=%d\n", ret);
        return;
    }
    printf(" -> ");
    int matched = 0;
    for (int32_t i = 0; i < g_n_names; i++) {
        if (g_sigs[i] == sig) printf("%s%s", matched++ ? "|" : "", g_names[i]);
    }
    if (!matched) {
        printf("(no built-in name) multi+add_ass: ");
        print_escaped(probe, (size_t) ret, 1);
    }
    printf(" hash=%016llx\n", (unsigned long long) sig);
    free(probe);
}

static int cmp_str(const void * a, const void * b) {
    return strcmp(*(char * const *) a, *(char * const *) b);
}

// One call into a buffer of `size` bytes pre-filled with 0xAB (4 more bytes
// after it to show that nothing is written past `size`).
static void print_buffer_case(const char * tmpl, const struct conv * c, int add_ass, int32_t size, int null_buf) {
    char buf[512];
    memset(buf, 0xAB, sizeof buf);
    int32_t ret = llama_chat_apply_template(tmpl, c->msg, c->n, add_ass != 0, null_buf ? NULL : buf, size);
    printf("buffer tmpl=%s conv=%s add_ass=%d length=%d%s ret=%d bytes=", tmpl ? tmpl : "(NULL)", c->name, add_ass, size,
           null_buf ? " buf=NULL" : "", ret);
    size_t shown = (size_t) (size > 0 ? size : 0) + 4;
    print_escaped(buf, shown, 0);
    printf("\n");
}

int main(int argc, char ** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TEMPLATES_DIR [MODEL.gguf ...]\n", argv[0]);
        return 2;
    }
    // --- builtin: the names, then a partial listing into 3 slots of 6
    g_n_names = llama_chat_builtin_templates(NULL, 0);
    printf("builtin count=%d\n", g_n_names);
    if (g_n_names <= 0) return 1;
    g_names = calloc((size_t) g_n_names, sizeof(char *));
    int32_t again = llama_chat_builtin_templates(g_names, (size_t) g_n_names);
    printf("builtin count (listing)=%d\n", again);
    for (int32_t i = 0; i < g_n_names; i++) printf("builtin %d %s\n", i, g_names[i]);
    const char * few[6];
    const char * canary = "canary";
    for (int i = 0; i < 6; i++) few[i] = canary;
    int32_t n_few = llama_chat_builtin_templates(few, 3);
    int untouched = few[3] == canary && few[4] == canary && few[5] == canary;
    int same = strcmp(few[0], g_names[0]) == 0 && strcmp(few[2], g_names[2]) == 0;
    printf("builtin partial len=3 ret=%d first3_equal=%d rest_untouched=%d\n", n_few, same, untouched);

    // --- apply: every name x conversation x add_ass
    int n_cases = 0;
    for (int32_t t = 0; t < g_n_names; t++) {
        for (size_t c = 0; c < N_CONVS; c++) {
            int32_t r0, r1;
            char * s0 = format(g_names[t], &CONVS[c], 0, &r0);
            char * s1 = format(g_names[t], &CONVS[c], 1, &r1);
            printf("apply %s %s add_ass=0 ret=%d ", g_names[t], CONVS[c].name, r0);
            if (s0) print_escaped(s0, (size_t) r0, 1);
            printf("\napply %s %s add_ass=1 ret=%d ", g_names[t], CONVS[c].name, r1);
            if (s0 && s1 && r1 >= r0 && memcmp(s0, s1, (size_t) r0) == 0) {
                putchar('+');
                print_escaped(s1 + r0, (size_t) (r1 - r0), 1);
            } else if (s1) {
                print_escaped(s1, (size_t) r1, 1);
            }
            printf("\n");
            n_cases += 2;
            free(s0);
            free(s1);
        }
    }
    printf("apply cases=%d\n", n_cases);

    // --- detect: NULL, synthetic strings, the .jinja files, the models' templates
    g_sigs = calloc((size_t) g_n_names, sizeof(uint64_t));
    for (int32_t i = 0; i < g_n_names; i++) g_sigs[i] = signature(g_names[i]);
    {
        uint64_t sig = signature(NULL);
        printf("detect NULL -> %s hash=%016llx\n", sig == signature("chatml") ? "chatml" : "(not chatml)", (unsigned long long) sig);
    }
    for (size_t i = 0; i < N_SYNTHETIC; i++) print_detect("string", SYNTHETIC[i], SYNTHETIC[i]);

    DIR * dir = opendir(argv[1]);
    if (!dir) {
        fprintf(stderr, "cannot open %s\n", argv[1]);
        return 1;
    }
    char * files[512];
    size_t n_files = 0;
    struct dirent * e;
    while ((e = readdir(dir)) != NULL && n_files < 512) {
        size_t len = strlen(e->d_name);
        if (len > 6 && strcmp(e->d_name + len - 6, ".jinja") == 0) files[n_files++] = strdup(e->d_name);
    }
    closedir(dir);
    qsort(files, n_files, sizeof(char *), cmp_str);
    for (size_t i = 0; i < n_files; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], files[i]);
        size_t len;
        char * text = read_file(path, &len);
        if (text) print_detect("file", files[i], text);
        free(text);
        free(files[i]);
    }
    printf("detect files=%zu\n", n_files);

    llama_backend_init();
    for (int i = 2; i < argc; i++) {
        struct llama_model_params mp = llama_model_default_params();
        mp.vocab_only = true;
        struct llama_model * model = llama_model_load_from_file(argv[i], mp);
        const char * base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        if (!model) {
            printf("detect model=%s load failed\n", base);
            continue;
        }
        const char * tmpl = llama_model_chat_template(model, NULL);
        if (tmpl) print_detect("model", base, tmpl);
        else printf("detect model=\"%s\" -> no chat template (NULL)\n", base);
        llama_model_free(model);
    }

    // --- buffer: lengths around the formatted size, zero and negative, NULL buffers
    const char * tmpls[] = { "chatml", "gemma", "yandex", NULL, "unknown-template" };
    for (size_t t = 0; t < sizeof tmpls / sizeof tmpls[0]; t++) {
        int32_t full = llama_chat_apply_template(tmpls[t], CONVS[1].msg, CONVS[1].n, true, NULL, 0);
        int32_t sizes[] = { -5, 0, 1, 7, full / 2, full - 1, full, full + 1, full + 9 };
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            if (sizes[k] > 500) continue;
            print_buffer_case(tmpls[t], &CONVS[1], 1, sizes[k], 0);
        }
        print_buffer_case(tmpls[t], &CONVS[1], 1, 64, 1);
    }
    // cut inside a multi-byte character
    print_buffer_case("yandex", &CONVS[6], 1, 4, 0);
    print_buffer_case("deepseek3", &CONVS[3], 1, 40, 0);

    llama_backend_free();
    free(g_names);
    free(g_sigs);
    return 0;
}
