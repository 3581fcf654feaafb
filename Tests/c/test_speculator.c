/* leap_speculator (SmolLM2-135M-Instruct): the handle's contract (NULL-safety, refusals with precise
 * messages, a failing call changes nothing, reports only of guesses made) and a verify loop of the
 * caller's own on a leap_context (leap_context_eval_verify, whose rows are one-token decoding's) whose
 * greedy tokens are those of one-token decoding, with guesses made and taken by prompt lookup on a prompt
 * the continuation copies and by the model drafting for itself. */
#include <stdlib.h>
#include "check.h"

#define MAX_NEW 48

static const char *copy_text =
    "A: The Rhine begins in the Swiss Alps, flows through Germany and the Netherlands, and empties into the North Sea.\n"
    "B: The Rhine begins in the Swiss Alps, flows through Germany and the Netherlands, and empties into the North Sea.\n"
    "A: The Rhine begins in the Swiss Alps, flows through Germany and the Netherlands, and empties into the North Sea.\n"
    "B: The Rhine";

static int32_t greedy(leap_context *ctx, int32_t index) {
    const float *logits = NULL;
    size_t n = 0, best = 0;
    if (leap_context_logits(ctx, index, &logits, &n) != LEAP_OK) return -1;
    for (size_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return (int32_t)best;
}

/* One-token decoding: MAX_NEW greedy tokens after the prompt, its last token evaluated alone as the verify
 * loop's first pass does. */
static void decode_plain(leap_model *model, const int32_t *prompt, size_t n_prompt, int32_t *out) {
    leap_context *ctx = NULL;
    CHECK_OK(leap_context_create(model, NULL, &ctx));
    CHECK_OK(leap_context_eval(ctx, prompt, n_prompt - 1));
    CHECK_OK(leap_context_eval(ctx, prompt + n_prompt - 1, 1));
    for (int i = 0; i < MAX_NEW; i++) {
        out[i] = greedy(ctx, -1);
        CHECK_OK(leap_context_eval(ctx, &out[i], 1));
    }
    leap_context_free(ctx);
}

/* The verify loop of leap.h: the context holds the sequence but its last token; each pass evaluates that
 * token and the guesses, samples the rows in order while the sample is the guess. */
static void decode_speculated(leap_model *model, leap_speculator *spec, const int32_t *prompt, size_t n_prompt,
                              int32_t *out, size_t *drafted, size_t *taken_total) {
    leap_context *ctx = NULL;
    int32_t seq[1024], batch[15], guess[14];
    size_t n_seq = n_prompt, generated = 0;
    memcpy(seq, prompt, n_prompt * sizeof *seq);
    *drafted = *taken_total = 0;
    CHECK_OK(leap_context_create(model, NULL, &ctx));
    CHECK_OK(leap_context_eval(ctx, seq, n_seq - 1));
    while (generated < MAX_NEW) {
        size_t n_guess = 0, taken = 0;
        CHECK_OK(leap_speculator_draft(spec, seq, n_seq, MAX_NEW - generated - 1, guess, &n_guess));
        CHECK(n_guess <= 14 && n_guess <= MAX_NEW - generated - 1);
        batch[0] = seq[n_seq - 1];
        memcpy(batch + 1, guess, n_guess * sizeof *guess);
        CHECK_OK(leap_context_eval_verify(ctx, batch, 1 + n_guess));
        for (size_t i = 0; i <= n_guess && generated < MAX_NEW; i++) {
            int32_t tok = greedy(ctx, (int32_t)i);
            seq[n_seq++] = tok;
            out[generated++] = tok;
            if (i == n_guess || tok != guess[i]) break;
            taken++;
        }
        if (n_guess > 0) CHECK_OK(leap_speculator_accept(spec, taken));
        *drafted += n_guess;
        *taken_total += taken;
        CHECK_OK(leap_context_rewind(ctx, (int32_t)(n_seq - 1)));
    }
    leap_context_free(ctx);
}

static void contract(leap_model *model) {
    leap_speculator_params p;
    leap_speculator *spec = (leap_speculator *)0x1;
    int32_t history[3] = {1, 2, 3}, guess[4];
    size_t n = 99;

    leap_speculator_params_init(&p, sizeof p);
    CHECK(p.struct_size == sizeof p && p.drafter == LEAP_DRAFTER_DEFAULT && p.max_draft_tokens == 0 && p.context_size == 0);
    leap_speculator_params_init(NULL, sizeof p);
    leap_speculator_free(NULL);

    CHECK_STATUS(leap_speculator_create(NULL, NULL, &spec), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(spec == NULL);
    CHECK_ERROR_MENTIONS("model must not be NULL");
    CHECK_STATUS(leap_speculator_create(model, NULL, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("out_spec");

    p.drafter = 7;
    CHECK_STATUS(leap_speculator_create(model, &p, &spec), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("params->drafter: 7 is not a leap_drafter");
    p.drafter = LEAP_DRAFTER_NONE;
    CHECK_STATUS(leap_speculator_create(model, &p, &spec), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("a speculator needs a drafter");
    p.drafter = LEAP_DRAFTER_DRAFT_MODEL;
    CHECK_STATUS(leap_speculator_create(model, &p, &spec), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("the model was loaded without one");
    p.drafter = LEAP_DRAFTER_NGRAM;
    p.max_draft_tokens = 15;
    CHECK_STATUS(leap_speculator_create(model, &p, &spec), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("params->max_draft_tokens must be at most 14");
    p.max_draft_tokens = 4;
    p.context_size = -1;
    CHECK_STATUS(leap_speculator_create(model, &p, &spec), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("params->context_size must not be negative");
    CHECK(spec == NULL);
    /* A handle of another kind is refused, not used. */
    CHECK_STATUS(leap_speculator_draft((leap_speculator *)model, history, 3, 4, guess, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("not a valid speculator handle");
    CHECK_STATUS(leap_speculator_accept(NULL, 0), LEAP_ERR_INVALID_ARGUMENT);

    p.context_size = 0;
    CHECK_OK(leap_speculator_create(model, &p, &spec));
    if (!spec) return;
    {   /* the most guesses a draft makes: the params' own, or the default of 8 */
        leap_speculator *plain = NULL;
        int32_t most = 0;
        CHECK_OK(leap_speculator_max_draft_tokens(spec, &most));
        CHECK(most == p.max_draft_tokens);
        CHECK_OK(leap_speculator_create(model, NULL, &plain));
        CHECK_OK(leap_speculator_max_draft_tokens(plain, &most));
        CHECK(most == 8);
        leap_speculator_free(plain);
        CHECK_STATUS(leap_speculator_max_draft_tokens(spec, NULL), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_speculator_max_draft_tokens(NULL, &most), LEAP_ERR_INVALID_ARGUMENT);
    }
    CHECK_STATUS(leap_speculator_draft(spec, history, 0, 4, guess, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("n_history must be > 0");
    CHECK_STATUS(leap_speculator_draft(spec, NULL, 3, 4, guess, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_speculator_draft(spec, history, 3, 4, NULL, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("out_guesses must not be NULL");
    CHECK_STATUS(leap_speculator_draft(spec, history, 3, 4, guess, NULL), LEAP_ERR_INVALID_ARGUMENT);
    history[1] = 1 << 30;
    CHECK_STATUS(leap_speculator_draft(spec, history, 3, 4, guess, &n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("history token 1073741824 at index 1 is out of range");
    CHECK(n == 99);
    history[1] = 2;
    CHECK_OK(leap_speculator_draft(spec, history, 3, 0, NULL, &n));   /* no room: no guesses, no output */
    CHECK(n == 0);
    CHECK_STATUS(leap_speculator_accept(spec, 0), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("no guesses to report");

    {   /* 1 2 3 1 2 3 1 2: prompt lookup guesses 3 1 2 ... (a long match: worth a pass at once) */
        int32_t rep[8] = {1, 2, 3, 1, 2, 3, 1, 2};
        CHECK_OK(leap_speculator_draft(spec, rep, 8, 4, guess, &n));
        CHECK(n >= 1 && n <= 4 && guess[0] == 3);
        if (n >= 2) CHECK(guess[1] == 1);
        /* A failing draft leaves the guesses to report as they were. */
        rep[0] = -1;
        CHECK_STATUS(leap_speculator_draft(spec, rep, 8, 4, guess, &n), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(leap_speculator_accept(spec, 5), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("guesses accepted of the");
        CHECK_OK(leap_speculator_accept(spec, 1));
        CHECK_STATUS(leap_speculator_accept(spec, 1), LEAP_ERR_INVALID_ARGUMENT);
        CHECK_ERROR_MENTIONS("reported already");
    }
    leap_speculator_free(spec);
}

int main(void) {
    char path[1024];
    const char *dir = getenv("LEAP_MODELS_DIR");
    leap_model *model = NULL, *drafted = NULL;
    leap_model_params mp;
    leap_speculator_params p;
    leap_speculator *spec = NULL;
    int32_t *prompt = NULL, plain[MAX_NEW], fast[MAX_NEW];
    size_t n_prompt = 0, drafted_n = 0, taken_n = 0;
    FILE *f;

    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir ? dir : "models");
    if (!(f = fopen(path, "rb"))) {
        printf("test_speculator: skipped (%s not found)\n", path);
        return CHECK_SUMMARY("test_speculator");
    }
    fclose(f);
    leap_model_params_init(&mp, sizeof mp);
    mp.context_size = 512;
    CHECK_OK(leap_model_load(path, &mp, &model));
    if (!model) return CHECK_SUMMARY("test_speculator");
    contract(model);

    CHECK_OK(leap_model_tokenize(model, copy_text, 1, 0, &prompt, &n_prompt));
    decode_plain(model, prompt, n_prompt, plain);
    {   /* A verification pass: each row is the one-token decode's, bit for bit (Q4_1); 16 tokens refused. */
        leap_context *one = NULL, *few = NULL;
        const float *a = NULL, *b = NULL;
        size_t na = 0, nb = 0, tail = 12;
        int32_t n_past = 0;
        CHECK_OK(leap_context_create(model, NULL, &one));
        CHECK_OK(leap_context_create(model, NULL, &few));
        if (one && few) {
            CHECK_OK(leap_context_eval(one, prompt, n_prompt - tail));
            CHECK_OK(leap_context_eval(few, prompt, n_prompt - tail));
            CHECK_OK(leap_context_eval_verify(few, prompt + n_prompt - tail, tail));
            for (size_t i = 0; i < tail; i++) {
                CHECK_OK(leap_context_eval(one, prompt + n_prompt - tail + i, 1));
                CHECK_OK(leap_context_logits(one, -1, &a, &na));
                CHECK_OK(leap_context_logits(few, (int32_t)i, &b, &nb));
                CHECK(a && b && na == nb && memcmp(a, b, na * sizeof *a) == 0);
            }
            CHECK_STATUS(leap_context_eval_verify(few, prompt, 16), LEAP_ERR_INVALID_ARGUMENT);
            CHECK_ERROR_MENTIONS("n_tokens must be in 1...15");
            CHECK_STATUS(leap_context_eval_verify(NULL, prompt, 2), LEAP_ERR_INVALID_ARGUMENT);
            CHECK_OK(leap_context_n_past(few, &n_past));
            CHECK(n_past == (int32_t)n_prompt);   /* the refused passes changed nothing */
        }
        leap_context_free(one);
        leap_context_free(few);
    }

    /* Prompt lookup (the default without a draft model): the same tokens, some guesses taken. */
    leap_speculator_params_init(&p, sizeof p);
    CHECK_OK(leap_speculator_create(model, &p, &spec));
    if (spec) {
        decode_speculated(model, spec, prompt, n_prompt, fast, &drafted_n, &taken_n);
        CHECK(memcmp(plain, fast, sizeof plain) == 0);
        CHECK(drafted_n > 0 && taken_n > 0 && taken_n <= drafted_n);
        leap_speculator_free(spec);
    }

    /* The model drafting for itself: the same tokens, every guess taken (greedy, Q4_1's verified rows are
     * the one-token decode's). */
    mp.draft_model_path = path;
    CHECK_OK(leap_model_load(path, &mp, &drafted));
    if (drafted) {
        spec = NULL;
        CHECK_OK(leap_speculator_create(drafted, NULL, &spec));   /* the default: its draft model */
        leap_model_free(drafted);                                 /* the speculator keeps it alive */
        if (spec) {
            decode_speculated(model, spec, prompt, n_prompt, fast, &drafted_n, &taken_n);
            CHECK(memcmp(plain, fast, sizeof plain) == 0);
            CHECK(drafted_n > 0 && taken_n == drafted_n);
            leap_speculator_free(spec);
        }
    }
    leap_buffer_free(prompt);
    leap_model_free(model);
    return CHECK_SUMMARY("test_speculator");
}
