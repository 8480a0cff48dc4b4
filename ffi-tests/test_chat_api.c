// The chat template API's conventions beyond what the reference shows
// (golden/chat_templates.txt covers its outputs): NULL arguments the
// reference would crash on get -1 and a message, failures leave the caller's
// buffer alone, long conversations, and the name list's pointers are stable.
//
// usage: test_chat_api
#include "test_util.h"

#include <stdint.h>

int main(void) {
    llama_log_set(capture_log, NULL);
    const struct llama_chat_message chat[2] = { { "system", "Be brief." }, { "user", "Hi" } };
    const char * expected = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    char buf[256];

    // --- NULL template means chatml; the text and its length
    memset(buf, 0x55, sizeof buf);
    int32_t n = llama_chat_apply_template(NULL, chat, 2, true, buf, sizeof buf);
    CHECK(n == (int32_t) strlen(expected) && strcmp(buf, expected) == 0, "NULL template: %d '%s'", n, buf);

    // --- NULL arguments: -1, a message, the buffer untouched
    struct {
        const struct llama_chat_message * chat;
        size_t n;
        const char * needle;
    } bad[3];
    const struct llama_chat_message null_role[2] = { { "user", "a" }, { NULL, "b" } };
    const struct llama_chat_message null_content[1] = { { "user", NULL } };
    bad[0].chat = NULL; bad[0].n = 2; bad[0].needle = "chat is NULL";
    bad[1].chat = null_role; bad[1].n = 2; bad[1].needle = "chat[1].role is NULL";
    bad[2].chat = null_content; bad[2].n = 1; bad[2].needle = "chat[0].content is NULL";
    for (int i = 0; i < 3; i++) {
        log_clear();
        memset(buf, 0x55, sizeof buf);
        n = llama_chat_apply_template("chatml", bad[i].chat, bad[i].n, true, buf, sizeof buf);
        CHECK(n == -1 && log_has(bad[i].needle), "bad input %d: %d, log '%s'", i, n, g_log);
        CHECK((unsigned char) buf[0] == 0x55 && (unsigned char) buf[255] == 0x55, "bad input %d: buffer untouched", i);
    }
    // an unknown template: -1, a message naming it, the buffer untouched
    log_clear();
    memset(buf, 0x55, sizeof buf);
    n = llama_chat_apply_template("{{ no known markers }}", chat, 2, true, buf, sizeof buf);
    CHECK(n == -1 && log_has("not supported") && log_has("no known markers"), "unknown template: %d '%s'", n, g_log);
    CHECK((unsigned char) buf[0] == 0x55, "unknown template: buffer untouched");
    // no messages, NULL chat: an empty text, the buffer zero-filled as strncpy does
    memset(buf, 0x55, sizeof buf);
    n = llama_chat_apply_template("llama3", NULL, 0, false, buf, 4);
    CHECK(n == 0 && buf[0] == 0 && buf[3] == 0 && (unsigned char) buf[4] == 0x55, "empty conversation: %d", n);

    // --- a long conversation (2000 messages of 1000 bytes)
    enum { N_LONG = 2000, LEN = 1000 };
    char * content = malloc(LEN + 1);
    memset(content, 'x', LEN);
    content[LEN] = 0;
    struct llama_chat_message * many = malloc(sizeof *many * N_LONG);
    for (int i = 0; i < N_LONG; i++) {
        many[i].role = i % 2 ? "assistant" : "user";
        many[i].content = content;
    }
    n = llama_chat_apply_template("chatml", many, N_LONG, false, NULL, 0);
    // "<|im_start|>" + role + "\n" + content + "<|im_end|>\n"
    const int32_t want = N_LONG / 2 * (12 + 4 + 1 + LEN + 11) + N_LONG / 2 * (12 + 9 + 1 + LEN + 11);
    CHECK(n == want, "long conversation: %d, expected %d", n, want);
    char * big = malloc((size_t) want);
    CHECK(llama_chat_apply_template("chatml", many, N_LONG, false, big, want) == want
              && memcmp(big + want - 11, "<|im_end|>\n", 11) == 0, "long conversation written in full (no NUL)");
    free(big);
    free(many);
    free(content);

    // --- the name list: NULL output with len > 0 fails, pointers are stable
    log_clear();
    CHECK(llama_chat_builtin_templates(NULL, 3) == -1 && log_has("output is NULL"), "NULL output: '%s'", g_log);
    const char * a[64], * b[64];
    int32_t count = llama_chat_builtin_templates(a, 64);
    CHECK(count > 0 && count <= 64 && llama_chat_builtin_templates(b, 64) == count, "count %d", count);
    int stable = 1, applies = 1;
    for (int32_t i = 0; i < count && i < 64; i++) {
        stable &= a[i] == b[i];
        applies &= llama_chat_apply_template(a[i], chat, 2, true, NULL, 0) >= 0;
    }
    CHECK(stable, "the same pointers on every call");
    CHECK(applies, "every listed name is accepted by llama_chat_apply_template");
    return finish("test_chat_api");
}
