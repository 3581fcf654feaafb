/* Speculative decoding from C (SmolLM2-135M-Instruct): prompt lookup and a draft model leave the output
 * as it is without speculation and count their drafts; options and model params of the sizes before the
 * speculation fields still work; bad values and a draft model of another vocabulary are refused. */
#include <stddef.h>
#include <stdlib.h>
#include "check.h"

typedef struct {
    char text[8192];
    size_t len;
    int completes, errors;
    leap_generation_stats stats;
} collector;

static int32_t on_chunk(const char *t, size_t n, void *ud) {
    collector *c = (collector *)ud;
    if (c->len + n < sizeof c->text) {
        memcpy(c->text + c->len, t, n);
        c->len += n;
        c->text[c->len] = 0;
    }
    return 0;
}

static void on_complete(const leap_message *m, leap_finish_reason r, const leap_generation_stats *s, void *ud) {
    collector *c = (collector *)ud;
    (void)m;
    (void)r;
    c->completes++;
    c->stats = *s;
}

static void on_error(leap_status st, const char *msg, void *ud) {
    (void)st;
    (void)msg;
    ((collector *)ud)->errors++;
}

static const char *prompt = "Repeat this sentence exactly: The Rhine begins in the Swiss Alps, flows through Germany "
                            "and the Netherlands, and empties into the North Sea.";

/* One turn of a new conversation; returns the status of the generate call. */
static leap_status turn(leap_model *model, const leap_generation_options *o, collector *c) {
    leap_conversation *conv = NULL;
    leap_message *m = NULL;
    leap_generation_callbacks cb;
    leap_status st;
    memset(c, 0, sizeof *c);
    CHECK_OK(leap_conversation_create(model, NULL, &conv));
    leap_message_create(LEAP_ROLE_USER, &m);
    leap_message_add_text(m, prompt);
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = on_chunk;
    cb.on_complete = on_complete;
    cb.on_error = on_error;
    cb.user_data = c;
    st = leap_conversation_generate(conv, m, o, &cb);
    leap_message_free(m);
    leap_conversation_free(conv);
    return st;
}

int main(void) {
    char path[1024], other[1024];
    const char *dir = getenv("LEAP_MODELS_DIR");
    leap_model *model = NULL, *drafted = NULL, *refused = NULL;
    leap_model_params mp;
    leap_generation_options o, old;
    collector plain, lookup, small, draft;
    FILE *f;

    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir ? dir : "models");
    snprintf(other, sizeof other, "%s/gemma-3-270m-q4_k_m.gguf", dir ? dir : "models");
    if (!(f = fopen(path, "rb"))) {
        printf("test_speculative: skipped (%s not found)\n", path);
        return CHECK_SUMMARY("test_speculative");
    }
    fclose(f);
    leap_model_params_init(&mp, sizeof mp);
    CHECK(mp.draft_model_path == NULL);
    mp.context_size = 512;
    CHECK_OK(leap_model_load(path, &mp, &model));
    if (!model) return CHECK_SUMMARY("test_speculative");

    leap_generation_options_init(&o, sizeof o);
    CHECK(o.drafter == LEAP_DRAFTER_DEFAULT && o.max_draft_tokens == 0);
    o.temperature = 0;
    o.max_tokens = 40;
    CHECK_OK(turn(model, &o, &plain));
    CHECK(plain.completes == 1 && plain.stats.drafted_tokens == 0 && plain.stats.accepted_draft_tokens == 0);

    /* Prompt lookup: the same text; the answer copies the prompt, so guesses are taken. */
    o.drafter = LEAP_DRAFTER_NGRAM;
    CHECK_OK(turn(model, &o, &lookup));
    CHECK(lookup.completes == 1 && strcmp(lookup.text, plain.text) == 0);
    CHECK(lookup.stats.completion_tokens == plain.stats.completion_tokens);
    CHECK(lookup.stats.accepted_draft_tokens > 0 && lookup.stats.accepted_draft_tokens <= lookup.stats.drafted_tokens);

    /* A struct of the size before the speculation fields: their defaults (no drafting). */
    leap_generation_options_init(&old, offsetof(leap_generation_options, drafter));
    CHECK(old.struct_size == offsetof(leap_generation_options, drafter));
    old.temperature = 0;
    old.max_tokens = 40;
    CHECK_OK(turn(model, &old, &small));
    CHECK(strcmp(small.text, plain.text) == 0 && small.stats.drafted_tokens == 0);

    /* Bad values: refused before anything runs. */
    o.drafter = 7;
    CHECK(turn(model, &o, &small) == LEAP_ERR_INVALID_ARGUMENT && strstr(leap_last_error(), "drafter") != NULL);
    o.drafter = LEAP_DRAFTER_NGRAM;
    o.max_draft_tokens = 15;
    CHECK(turn(model, &o, &small) == LEAP_ERR_INVALID_ARGUMENT && strstr(leap_last_error(), "max_draft_tokens") != NULL);
    o.max_draft_tokens = 0;
    o.drafter = LEAP_DRAFTER_DRAFT_MODEL;   /* this model has none */
    turn(model, &o, &small);
    CHECK(small.errors == 1 && small.completes == 0);

    /* A draft model: the model itself shares its vocabulary (every guess right, greedy). */
    mp.draft_model_path = path;
    CHECK_OK(leap_model_load(path, &mp, &drafted));
    if (drafted) {
        o.drafter = LEAP_DRAFTER_DEFAULT;   /* the draft model, as it was loaded with one */
        CHECK_OK(turn(drafted, &o, &draft));
        CHECK(strcmp(draft.text, plain.text) == 0);
        CHECK(draft.stats.drafted_tokens > 0 && draft.stats.accepted_draft_tokens > 0);
        leap_model_free(drafted);
    }
    /* Gemma 3's vocabulary is not SmolLM2's. */
    if ((f = fopen(other, "rb"))) {
        fclose(f);
        mp.draft_model_path = other;
        CHECK(leap_model_load(path, &mp, &refused) == LEAP_ERR_MODEL_LOADING && refused == NULL);
        CHECK(strstr(leap_last_error(), "vocabulary") != NULL);
    }
    leap_model_free(model);
    return CHECK_SUMMARY("test_speculative");
}
