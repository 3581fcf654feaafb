/* The conversation API from C with a real model (SmolLM2-135M-Instruct): callbacks and the pull
 * iterator, stop from a callback, busy, history, options, and misuse of every entry point. */
#include <math.h>
#include <stdlib.h>
#include "check.h"

typedef struct {
    char text[8192];
    size_t len;
    int chunks, completes, errors, stop_after, audio_calls;
    leap_finish_reason reason;
    leap_generation_stats stats;
} collector;

static int32_t on_chunk(const char *t, size_t n, void *ud) {
    collector *c = (collector *)ud;
    if (c->len + n < sizeof c->text) {
        memcpy(c->text + c->len, t, n);
        c->len += n;
        c->text[c->len] = 0;
    }
    c->chunks++;
    CHECK(t[n] == 0);
    return c->stop_after && c->chunks >= c->stop_after;
}

static void on_complete(const leap_message *m, leap_finish_reason r, const leap_generation_stats *s, void *ud) {
    collector *c = (collector *)ud;
    leap_role role;
    CHECK_OK(leap_message_role(m, &role));
    CHECK(role == LEAP_ROLE_ASSISTANT);
    c->completes++;
    c->reason = r;
    c->stats = *s;
}

static void on_error(leap_status st, const char *msg, void *ud) {
    (void)st;
    (void)msg;
    ((collector *)ud)->errors++;
}

static int32_t on_audio(const float *samples, size_t n, int32_t rate, void *ud) {
    (void)samples;
    (void)n;
    (void)rate;
    ((collector *)ud)->audio_calls++;
    return 0;
}

typedef struct {
    int32_t tokens[64];
    float logprobs[64];
    int n, sorted, top_is_drawn;
    size_t n_top;
    char bytes[1024];
    size_t len;
} token_log;

static void log_token(token_log *t, const leap_token_logprob *tok, const leap_token_logprob *top, size_t n_top) {
    size_t i;
    if (t->n < 64) {
        t->tokens[t->n] = tok->token;
        t->logprobs[t->n] = tok->logprob;
    }
    t->n++;
    t->n_top = n_top;
    for (i = 1; i < n_top; i++) t->sorted &= top[i - 1].logprob >= top[i].logprob;
    t->top_is_drawn &= n_top > 0 && top[0].token == tok->token && top[0].logprob == tok->logprob;
    if (t->len + tok->n_bytes < sizeof t->bytes) {
        memcpy(t->bytes + t->len, tok->bytes, tok->n_bytes);
        t->len += tok->n_bytes;
        t->bytes[t->len] = 0;
    }
}

static int32_t on_token(const leap_token_logprob *tok, const leap_token_logprob *top, size_t n_top, void *ud) {
    log_token((token_log *)ud, tok, top, n_top);
    return 0;
}

static leap_message *user(const char *text) {
    leap_message *m = NULL;
    leap_message_create(LEAP_ROLE_USER, &m);
    leap_message_add_text(m, text);
    return m;
}

static void generate(leap_conversation *conv, const char *prompt, const leap_generation_options *o, collector *c) {
    leap_generation_callbacks cb;
    leap_message *m = user(prompt);
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = on_chunk;
    cb.on_audio_sample = on_audio;
    cb.on_complete = on_complete;
    cb.on_error = on_error;
    cb.user_data = c;
    CHECK_OK(leap_conversation_generate(conv, m, o, &cb));
    leap_message_free(m);
}

int main(void) {
    char path[1024];
    const char *dir = getenv("LEAP_MODELS_DIR");
    leap_model *model = NULL;
    leap_model_params mp;
    leap_generation_options greedy;
    leap_conversation *conv = NULL;
    FILE *f;

    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir ? dir : "models");
    if (!(f = fopen(path, "rb"))) {
        printf("test_conversation: skipped (%s not found)\n", path);
        return CHECK_SUMMARY("test_conversation");
    }
    fclose(f);

    leap_model_params_init(&mp, sizeof mp);
    mp.context_size = 512;
    CHECK_OK(leap_model_load(path, &mp, &model));
    if (!model) return CHECK_SUMMARY("test_conversation");
    leap_generation_options_init(&greedy, sizeof greedy);
    greedy.temperature = 0;
    greedy.max_tokens = 16;

    {   /* callbacks: a streamed answer that lands in the history */
        collector c;
        size_t n = 0;
        char *json = NULL;
        memset(&c, 0, sizeof c);
        CHECK_OK(leap_conversation_create(model, "You are a helpful assistant.", &conv));
        /* A question whose greedy answer wins by a margin at every token (asked "What is the capital of
         * France?", this model's first token is a near tie: llama.cpp and libleap both start in French) */
        generate(conv, "Name the capital of France.", &greedy, &c);
        CHECK(c.completes == 1 && c.errors == 0 && c.chunks > 0);
        CHECK(strstr(c.text, "Paris") != NULL);
        CHECK(c.stats.completion_tokens > 0 && c.stats.total_tokens == c.stats.prompt_tokens + c.stats.completion_tokens);
        CHECK_OK(leap_conversation_message_count(conv, &n));
        CHECK(n == 3);
        CHECK_OK(leap_conversation_history_json(conv, &json));
        CHECK(json && strstr(json, "\"role\":\"assistant\"") != NULL);
        leap_string_free(json);
    }
    {   /* second turn reuses the cache; a callback returning non-zero stops it */
        collector c;
        memset(&c, 0, sizeof c);
        c.stop_after = 2;
        generate(conv, "And of Germany?", &greedy, &c);
        CHECK(c.reason == LEAP_FINISH_INTERRUPTED && c.chunks == 2);
        CHECK(c.stats.cached_prompt_tokens > 10);
    }
    {   /* token log-probabilities: the same from callbacks and the iterator, greedy picks the top one */
        leap_generation_options o = greedy;
        leap_generation_callbacks cb;
        leap_conversation *a = NULL, *b = NULL;
        leap_generation *g = NULL;
        leap_event ev;
        leap_message *m = user("Name a color.");
        token_log viaCallback, viaIterator;
        int i, same = 1;
        memset(&viaCallback, 0, sizeof viaCallback);
        memset(&viaIterator, 0, sizeof viaIterator);
        viaCallback.sorted = viaCallback.top_is_drawn = viaIterator.sorted = viaIterator.top_is_drawn = 1;
        o.top_logprobs = 3;
        o.repetition_penalty = 1;   /* raw logits are what the alternatives rank: no penalty, so greedy takes the first */
        CHECK_OK(leap_conversation_create(model, NULL, &a));
        CHECK_OK(leap_conversation_create(model, NULL, &b));
        leap_generation_callbacks_init(&cb, sizeof cb);
        cb.on_token = on_token;
        cb.user_data = &viaCallback;
        CHECK_OK(leap_conversation_generate(a, m, &o, &cb));
        CHECK_OK(leap_conversation_generate_begin(b, m, &o, &g));
        for (;;) {
            memset(&ev, 0, sizeof ev);
            ev.struct_size = sizeof ev;
            CHECK_OK(leap_generation_next(g, &ev));
            if (ev.kind == LEAP_EVENT_NONE) break;
            if (ev.kind == LEAP_EVENT_TOKEN) log_token(&viaIterator, &ev.token, ev.top_logprobs, ev.n_top_logprobs);
        }
        leap_generation_free(g);
        CHECK(viaCallback.n > 0 && viaCallback.n == viaIterator.n);
        CHECK(viaCallback.n_top == 3 && viaIterator.n_top == 3);
        CHECK(viaCallback.sorted && viaCallback.top_is_drawn && viaIterator.sorted && viaIterator.top_is_drawn);
        for (i = 0; i < viaCallback.n && i < 64; i++) {
            same &= viaCallback.tokens[i] == viaIterator.tokens[i] && viaCallback.logprobs[i] == viaIterator.logprobs[i];
            same &= viaCallback.logprobs[i] <= 0;
        }
        CHECK(same);
        CHECK(viaCallback.len > 0 && strcmp(viaCallback.bytes, viaIterator.bytes) == 0);
        o.top_logprobs = 21;
        CHECK_STATUS(leap_conversation_generate_begin(b, m, &o, &g), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("top_logprobs");
        o.top_logprobs = -1;
        o.presence_penalty = NAN;
        CHECK_STATUS(leap_conversation_generate_begin(b, m, &o, &g), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("presence_penalty");
        leap_message_free(m);
        leap_conversation_free(a);
        leap_conversation_free(b);
    }
    {   /* the pull iterator gives the same answer as callbacks for the same history */
        leap_conversation *a = NULL, *b = NULL;
        leap_generation *g = NULL;
        leap_event ev;
        leap_message *m = user("Name a planet.");
        collector c;
        char pulled[8192] = "";
        size_t len = 0;
        int complete = 0;
        memset(&c, 0, sizeof c);
        CHECK_OK(leap_conversation_create(model, NULL, &a));
        CHECK_OK(leap_conversation_create(model, NULL, &b));
        generate(a, "Name a planet.", &greedy, &c);
        CHECK_OK(leap_conversation_generate_begin(b, m, &greedy, &g));
        {   /* as in LEAP, the user message enters the history when the generation starts */
            size_t n = 0;
            CHECK_OK(leap_conversation_message_count(b, &n));
            CHECK(n == 1);
        }
        for (;;) {
            memset(&ev, 0, sizeof ev);
            ev.struct_size = sizeof ev;
            CHECK_OK(leap_generation_next(g, &ev));
            if (ev.kind == LEAP_EVENT_NONE) break;
            if (ev.kind == LEAP_EVENT_CHUNK && len + ev.text_len < sizeof pulled) {
                memcpy(pulled + len, ev.text, ev.text_len);
                len += ev.text_len;
                pulled[len] = 0;
            }
            if (ev.kind == LEAP_EVENT_COMPLETE) {
                complete++;
                CHECK(ev.message != NULL && ev.stats != NULL);
                CHECK(ev.finish_reason == (int32_t)c.reason);
            }
        }
        CHECK(complete == 1);
        CHECK(strcmp(pulled, c.text) == 0);
        /* busy: a second generation on a generating conversation */
        {
            leap_generation *g2 = NULL, *g3 = NULL;
            int32_t busy = 0;
            CHECK_OK(leap_conversation_generate_begin(b, m, &greedy, &g2));
            CHECK_OK(leap_conversation_is_generating(b, &busy));
            CHECK(busy == 1);
            CHECK_STATUS(leap_conversation_generate_begin(b, m, &greedy, &g3), LEAP_ERR_BUSY);
            CHECK(g3 == NULL);
            CHECK_STATUS(leap_conversation_append(b, m), LEAP_ERR_BUSY);
            leap_generation_free(g2); /* freeing early stops it */
            CHECK_OK(leap_conversation_is_generating(b, &busy));
            CHECK(busy == 0);
        }
        leap_generation_free(g);
        leap_message_free(m);
        leap_conversation_free(a);
        leap_conversation_free(b);
    }
    {   /* an assistant turn with generated audio (LEAP: an audio_pcm_f32 part after the text) survives the
         * history JSON and is replayed as its text; a text model never calls on_audio_sample */
        static const char history[] =
            "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Say hi.\"}]},"
            "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Hi!\"},"
            "{\"type\":\"audio_pcm_f32\",\"samples\":[0.5,-0.25,0.125],\"sampleRate\":24000}]}]";
        leap_conversation *a = NULL;
        leap_message *copy = NULL;
        char *json = NULL;
        collector c;
        float *pcm = NULL;
        size_t n = 0;
        int32_t rate = 0;
        leap_content_type type = LEAP_CONTENT_TEXT;
        memset(&c, 0, sizeof c);
        CHECK_OK(leap_conversation_create_from_history(model, history, &a));
        CHECK_OK(leap_conversation_history_json(a, &json));
        CHECK(json && strcmp(json, history) == 0);
        leap_string_free(json);
        CHECK_OK(leap_conversation_message(a, 1, &copy));
        CHECK_OK(leap_message_part_type(copy, 1, &type));
        CHECK(type == LEAP_CONTENT_AUDIO_PCM_F32);
        CHECK_OK(leap_message_part_pcm(copy, 1, &pcm, &n, &rate));
        CHECK(n == 3 && pcm[0] == 0.5f && pcm[1] == -0.25f && pcm[2] == 0.125f && rate == 24000);
        leap_buffer_free(pcm);
        leap_message_free(copy);
        generate(a, "And again?", &greedy, &c);
        CHECK(c.completes == 1 && c.errors == 0 && c.audio_calls == 0);
        CHECK_OK(leap_conversation_message_count(a, &n));
        CHECK(n == 4);
        leap_conversation_free(a);
    }
    {   /* errors: context overflow, bad options, bad JSON, NULLs */
        leap_model *small = NULL;
        leap_conversation *s = NULL;
        leap_message *m = user("word word word word word word word word word word word word word word word word "
                               "word word word word word word word word word word word word word word word word");
        collector c;
        leap_generation_callbacks cb;
        leap_generation_options bad;
        memset(&c, 0, sizeof c);
        mp.context_size = 16;
        CHECK_OK(leap_model_load(path, &mp, &small));
        CHECK_OK(leap_conversation_create(small, NULL, &s));
        leap_generation_callbacks_init(&cb, sizeof cb);
        cb.on_error = on_error;
        cb.user_data = &c;
        CHECK_STATUS(leap_conversation_generate(s, m, &greedy, &cb), LEAP_ERR_PROMPT_EXCEEDS_CONTEXT);
        CHECK(c.errors == 1);
        CHECK_ERROR_MENTIONS("exceeds the max context length of 16 tokens");
        leap_generation_options_init(&bad, sizeof bad);
        bad.function_call_parser = 9;
        CHECK_STATUS(leap_conversation_generate(conv, m, &bad, NULL), LEAP_ERR_INVALID_ARGUMENT);
        bad.function_call_parser = 1;
        bad.json_schema_constraint = "{not json";
        CHECK_STATUS(leap_conversation_generate(conv, m, &bad, NULL), LEAP_ERR_INVALID_ARGUMENT);
        {   /* refused turns (non-finite options, a prompt too long, an image on a text model) change nothing */
            size_t before = 0, after = 0;
            leap_message *img = user("What is this?");
            static const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0, 0};
            char *json_before = NULL, *json_after = NULL;
            CHECK_OK(leap_conversation_message_count(conv, &before));
            CHECK_OK(leap_conversation_history_json(conv, &json_before));
            leap_generation_options_init(&bad, sizeof bad);
            bad.temperature = NAN;
            CHECK_STATUS(leap_conversation_generate(conv, m, &bad, NULL), LEAP_ERR_INVALID_ARGUMENT);
            CHECK_ERROR_MENTIONS("options->temperature is nan");
            leap_generation_options_init(&bad, sizeof bad);
            bad.top_p = INFINITY;
            CHECK_STATUS(leap_conversation_generate(conv, m, &bad, NULL), LEAP_ERR_INVALID_ARGUMENT);
            CHECK_OK(leap_message_add_image_jpeg(img, jpeg, sizeof jpeg));
            CHECK_STATUS(leap_conversation_generate(conv, img, &greedy, NULL), LEAP_ERR_UNSUPPORTED);
            CHECK_STATUS(leap_conversation_append(conv, img), LEAP_ERR_UNSUPPORTED);
            CHECK_OK(leap_conversation_message_count(conv, &after));
            CHECK_OK(leap_conversation_history_json(conv, &json_after));
            CHECK(before == after);
            CHECK(json_before && json_after && strcmp(json_before, json_after) == 0);
            leap_string_free(json_before);
            leap_string_free(json_after);
            leap_message_free(img);
        }
        leap_conversation_free(s);
        leap_model_free(small);
        CHECK_STATUS(leap_conversation_create_from_history(model, "[{\"role\":\"x\"}]", &s), LEAP_ERR_SERIALIZATION);
        CHECK(s == NULL);
        CHECK_STATUS(leap_conversation_register_function(conv, "{\"name\":\"\"}"), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_conversation_register_function(conv, "{\"name\":"), LEAP_ERR_SERIALIZATION);
        CHECK_OK(leap_conversation_register_function(conv, "{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"d\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}"));
        CHECK_STATUS(leap_conversation_generate(NULL, m, NULL, NULL), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_conversation_generate(conv, NULL, NULL, NULL), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_conversation_generate(conv, (leap_message *)model, NULL, NULL), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_model_load("/nonexistent.gguf", NULL, &small), LEAP_ERR_IO);
        CHECK(small == NULL);
        CHECK_STATUS(leap_conversation_stop(NULL), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_OK(leap_conversation_stop(conv)); /* idle: no-op */
        CHECK_OK(leap_conversation_remove_last(conv));
        leap_conversation_free(NULL);
        leap_generation_free(NULL);
        leap_model_free(NULL);
        leap_message_free(m);
    }
    leap_conversation_free(conv);
    leap_model_free(model); /* conversations keep the model alive; here all are gone */
    return CHECK_SUMMARY("test_conversation");
}
