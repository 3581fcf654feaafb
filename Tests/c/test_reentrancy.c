/* Callbacks of leap_conversation_generate() calling back into the same conversation: a nested generate,
 * append or remove is LEAP_ERR_BUSY; stop, is_generating and the history readers are allowed (the history
 * already holds the user message, not yet the answer); freeing the conversation from a callback lets the
 * running generation finish on its own reference; on_complete runs once the turn is in the history, so
 * the next turn may start from there. */
#include <stdlib.h>
#include "check.h"

typedef enum { ACT_PROBE, ACT_STOP, ACT_FREE, ACT_NEXT_TURN } action;

typedef struct {
    leap_conversation *conv;
    const leap_generation_options *options;
    action act;
    size_t history_before;       /* messages before the call */
    int chunks, completes, errors;
    leap_finish_reason reason;
    /* what the callbacks saw */
    leap_status nested_generate, nested_append, nested_remove, nested_history, nested_count, nested_generating;
    size_t count_in_callback;
    int history_has_user, history_has_no_answer, generating_flag;
    leap_status next_turn;
    int next_turn_completes;
} probe;

static leap_message *user(const char *text) {
    leap_message *m = NULL;
    leap_message_create(LEAP_ROLE_USER, &m);
    leap_message_add_text(m, text);
    return m;
}

static int32_t count_chunk(const char *t, size_t n, void *ud) {
    (void)t;
    (void)n;
    ((probe *)ud)->chunks++;
    return 0;
}

static void count_complete(const leap_message *m, leap_finish_reason r, const leap_generation_stats *s, void *ud) {
    (void)m;
    (void)r;
    (void)s;
    ((probe *)ud)->next_turn_completes++;
}

static int32_t on_chunk(const char *t, size_t n, void *ud) {
    probe *p = (probe *)ud;
    (void)t;
    (void)n;
    p->chunks++;
    if (p->chunks == 1 && p->act == ACT_PROBE) {
        leap_message *m = user("nested");
        char *json = NULL;
        p->nested_generate = leap_conversation_generate(p->conv, m, p->options, NULL);
        p->nested_append = leap_conversation_append(p->conv, m);
        p->nested_remove = leap_conversation_remove_last(p->conv);
        p->nested_count = leap_conversation_message_count(p->conv, &p->count_in_callback);
        p->nested_history = leap_conversation_history_json(p->conv, &json);
        p->history_has_user = json && strstr(json, "\"Say hello.\"") != NULL;
        p->history_has_no_answer = json && strstr(json, "\"role\":\"assistant\"") == NULL && strstr(json, "nested") == NULL;
        p->nested_generating = leap_conversation_is_generating(p->conv, &p->generating_flag);
        leap_string_free(json);
        leap_message_free(m);
    }
    if (p->chunks == 2 && p->act == ACT_STOP) CHECK_OK(leap_conversation_stop(p->conv));
    if (p->chunks == 1 && p->act == ACT_FREE) {
        leap_conversation_free(p->conv);
        p->conv = NULL;
    }
    return 0;
}

static void on_complete(const leap_message *m, leap_finish_reason r, const leap_generation_stats *s, void *ud) {
    probe *p = (probe *)ud;
    leap_role role;
    (void)s;
    p->completes++;
    p->reason = r;
    CHECK_OK(leap_message_role(m, &role));
    CHECK(role == LEAP_ROLE_ASSISTANT);
    if (p->act == ACT_NEXT_TURN) {
        leap_message *next = user("And again?");
        leap_generation_callbacks cb;
        leap_generation_callbacks_init(&cb, sizeof cb);
        cb.on_chunk = count_chunk;
        cb.on_complete = count_complete;
        cb.user_data = p;
        p->next_turn = leap_conversation_generate(p->conv, next, p->options, &cb);
        leap_message_free(next);
    }
}

static void on_error(leap_status st, const char *msg, void *ud) {
    (void)st;
    (void)msg;
    ((probe *)ud)->errors++;
}

static leap_status run(probe *p, const char *prompt) {
    leap_generation_callbacks cb;
    leap_message *m = user(prompt);
    leap_status st;
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = on_chunk;
    cb.on_complete = on_complete;
    cb.on_error = on_error;
    cb.user_data = p;
    if (p->conv) leap_conversation_message_count(p->conv, &p->history_before);
    st = leap_conversation_generate(p->conv, m, p->options, &cb);
    leap_message_free(m);
    return st;
}

int main(void) {
    char path[1024];
    const char *dir = getenv("LEAP_MODELS_DIR");
    leap_model *model = NULL;
    leap_model_params mp;
    leap_generation_options greedy;
    FILE *f;

    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir ? dir : "models");
    if (!(f = fopen(path, "rb"))) {
        printf("test_reentrancy: skipped (%s not found)\n", path);
        return CHECK_SUMMARY("test_reentrancy");
    }
    fclose(f);
    leap_model_params_init(&mp, sizeof mp);
    mp.context_size = 256;
    CHECK_OK(leap_model_load(path, &mp, &model));
    if (!model) return CHECK_SUMMARY("test_reentrancy");
    leap_generation_options_init(&greedy, sizeof greedy);
    greedy.temperature = 0;
    greedy.max_tokens = 6;

    {   /* nested calls from on_chunk */
        probe p;
        size_t n = 0;
        memset(&p, 0, sizeof p);
        p.options = &greedy;
        p.act = ACT_PROBE;
        CHECK_OK(leap_conversation_create(model, "Be brief.", &p.conv));
        CHECK_OK(run(&p, "Say hello."));
        CHECK(p.completes == 1 && p.errors == 0 && p.chunks > 1);
        CHECK_STATUS(p.nested_generate, LEAP_ERR_BUSY);
        CHECK_STATUS(p.nested_append, LEAP_ERR_BUSY);
        CHECK_STATUS(p.nested_remove, LEAP_ERR_BUSY);
        CHECK_OK(p.nested_count);
        CHECK(p.count_in_callback == p.history_before + 1); /* the user message, not the answer yet */
        CHECK_OK(p.nested_history);
        CHECK(p.history_has_user && p.history_has_no_answer);
        CHECK_OK(p.nested_generating);
        CHECK(p.generating_flag == 1);
        CHECK(p.reason == LEAP_FINISH_MAX_TOKENS);
        /* the busy nested calls changed nothing: system, user, assistant */
        CHECK_OK(leap_conversation_message_count(p.conv, &n));
        CHECK(n == 3);
        leap_conversation_free(p.conv);
    }
    {   /* stop from a callback */
        probe p;
        memset(&p, 0, sizeof p);
        p.options = &greedy;
        p.act = ACT_STOP;
        CHECK_OK(leap_conversation_create(model, NULL, &p.conv));
        CHECK_OK(run(&p, "Count to ten."));
        CHECK(p.completes == 1 && p.reason == LEAP_FINISH_INTERRUPTED && p.chunks == 2);
        leap_conversation_free(p.conv);
    }
    {   /* free the conversation from a callback: the generation completes, nothing crashes (ASan checks) */
        probe p;
        memset(&p, 0, sizeof p);
        p.options = &greedy;
        p.act = ACT_FREE;
        CHECK_OK(leap_conversation_create(model, NULL, &p.conv));
        CHECK_OK(run(&p, "Say hello."));
        CHECK(p.conv == NULL && p.completes == 1 && p.errors == 0);
        CHECK(p.reason == LEAP_FINISH_MAX_TOKENS);
    }
    {   /* on_complete: the turn is in the history and the conversation idle, so the next turn may start */
        probe p;
        size_t n = 0;
        memset(&p, 0, sizeof p);
        p.options = &greedy;
        p.act = ACT_NEXT_TURN;
        CHECK_OK(leap_conversation_create(model, NULL, &p.conv));
        CHECK_OK(run(&p, "Say hello."));
        CHECK(p.completes == 1);
        CHECK_STATUS(p.next_turn, LEAP_OK);
        CHECK(p.next_turn_completes == 1);
        CHECK_OK(leap_conversation_message_count(p.conv, &n));
        CHECK(n == 4);
        leap_conversation_free(p.conv);
    }
    {   /* the model freed while a conversation still uses it: the conversation keeps it alive */
        probe p;
        leap_model *m2 = NULL;
        memset(&p, 0, sizeof p);
        p.options = &greedy;
        p.act = ACT_STOP;
        CHECK_OK(leap_model_load(path, &mp, &m2));
        CHECK_OK(leap_conversation_create(m2, NULL, &p.conv));
        leap_model_free(m2);
        CHECK_OK(run(&p, "Count to ten."));
        CHECK(p.completes == 1);
        leap_conversation_free(p.conv);
    }
    {   /* a chat template that renders nothing: a clean error (this trapped on an empty prompt) */
        leap_model *m3 = NULL;
        probe p;
        memset(&p, 0, sizeof p);
        p.options = &greedy;
        mp.chat_template = "{% if false %}never{% endif %}";
        CHECK_OK(leap_model_load(path, &mp, &m3));
        mp.chat_template = NULL;
        CHECK_OK(leap_conversation_create(m3, NULL, &p.conv));
        CHECK_STATUS(run(&p, "Say hello."), LEAP_ERR_GENERATION);
        CHECK_ERROR_MENTIONS("empty prompt");
        CHECK(p.errors == 1 && p.completes == 0);
        {   /* the failed turn left the conversation idle */
            int32_t busy = 1;
            CHECK_OK(leap_conversation_is_generating(p.conv, &busy));
            CHECK(busy == 0);
        }
        leap_conversation_free(p.conv);
        leap_model_free(m3);
    }
    leap_model_free(model);
    return CHECK_SUMMARY("test_reentrancy");
}
