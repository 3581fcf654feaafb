/* Low-level evaluation API: contexts, logits, rewind, tokenization, samplers (incl. NULL / misuse). */
#include <math.h>
#include <stdlib.h>
#include "check.h"

#ifndef FIXTURES
#define FIXTURES "Tests/Fixtures/models/"
#endif

int main(void) {
    leap_model *model = NULL;
    CHECK_OK(leap_model_load(FIXTURES "lfm2-tiny-q8_0.gguf", NULL, &model));
    if (!model) return CHECK_SUMMARY("test_context");

    /* params */
    leap_context_params cp;
    leap_context_params_init(&cp, sizeof cp);
    CHECK(cp.struct_size == sizeof cp && cp.context_size == 0 && cp.kv_cache_f32 == 0);
    cp.context_size = 32;
    leap_context *ctx = NULL;
    CHECK_STATUS(leap_context_create(NULL, &cp, &ctx), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_create(model, &cp, NULL), LEAP_ERR_INVALID_ARGUMENT);
    cp.context_size = -1;
    CHECK_STATUS(leap_context_create(model, &cp, &ctx), LEAP_ERR_INVALID_ARGUMENT);
    cp.context_size = 32;
    CHECK_OK(leap_context_create(model, &cp, &ctx));

    int32_t size = 0, n_past = -1;
    CHECK_OK(leap_context_size(ctx, &size));
    CHECK(size == 32);
    CHECK_OK(leap_context_n_past(ctx, &n_past));
    CHECK(n_past == 0);

    /* tokenize (BOS = 1 for LFM2) */
    int32_t *toks = NULL;
    size_t n = 0;
    CHECK_OK(leap_model_tokenize(model, "Alice was beginning", 1, 0, &toks, &n));
    CHECK(n >= 3 && toks && toks[0] == 1);
    int32_t *no_toks = NULL;
    size_t no_n = 0;
    CHECK_STATUS(leap_model_tokenize(model, NULL, 1, 0, &no_toks, &no_n), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(no_toks == NULL && no_n == 0);
    uint8_t *piece = NULL;
    size_t np = 0;
    CHECK_OK(leap_model_token_piece(model, 7, &piece, &np));
    CHECK(np == 10 && piece && memcmp(piece, "<|im_end|>", 10) == 0);
    leap_buffer_free(piece);
    CHECK_STATUS(leap_model_token_piece(model, 100000, &piece, &np), LEAP_ERR_INVALID_ARGUMENT);
    int32_t eog = 0;
    CHECK_OK(leap_model_token_is_eog(model, 7, &eog));
    CHECK(eog == 1);

    /* logits before eval: error */
    const float *logits = NULL;
    size_t n_vocab = 0;
    CHECK_STATUS(leap_context_logits(ctx, -1, &logits, &n_vocab), LEAP_ERR_INVALID_ARGUMENT);

    /* eval all logits == eval one by one (last position) */
    CHECK_OK(leap_context_eval_all_logits(ctx, toks, n));
    CHECK_OK(leap_context_logits(ctx, (int32_t)n - 1, &logits, &n_vocab));
    CHECK(n_vocab == 512 && logits != NULL);
    if (!logits || n_vocab != 512) return CHECK_SUMMARY("test_context");
    float last[512];
    memcpy(last, logits, sizeof last);
    CHECK_OK(leap_context_logits(ctx, 0, &logits, &n_vocab));
    CHECK_STATUS(leap_context_logits(ctx, (int32_t)n, &logits, &n_vocab), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_context_n_past(ctx, &n_past));
    CHECK(n_past == (int32_t)n);

    /* rewind to 1 and re-evaluate the rest token by token: same logits */
    CHECK_OK(leap_context_rewind(ctx, 1));
    CHECK_STATUS(leap_context_rewind(ctx, 5), LEAP_ERR_INVALID_ARGUMENT);
    for (size_t i = 1; i < n; i++) CHECK_OK(leap_context_eval(ctx, toks + i, 1));
    CHECK_OK(leap_context_logits(ctx, -1, &logits, &n_vocab));
    float maxdiff = 0;
    for (int i = 0; i < 512; i++) maxdiff = fmaxf(maxdiff, fabsf(logits[i] - last[i]));
    /* One token per call instead of one batch: on the SIMD paths attention and matmul sums are ordered
     * differently (as in llama.cpp), which on this Q8_0 file can flip an 8-bit activation rounding;
     * 1e-3 of logits ~10 allows that, a wrong conv or KV state after the rewind moves them by O(0.1). */
    CHECK(maxdiff < 1e-3f);
    CHECK_OK(leap_context_logits(ctx, 0, &logits, &n_vocab));  /* the last eval had one token */
    CHECK_STATUS(leap_context_logits(ctx, 1, &logits, &n_vocab), LEAP_ERR_INVALID_ARGUMENT);

    /* bad tokens, empty input, full context */
    int32_t bad = 512;
    CHECK_STATUS(leap_context_eval(ctx, &bad, 1), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_eval(ctx, toks, 0), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_context_eval(ctx, NULL, 1), LEAP_ERR_INVALID_ARGUMENT);
    int32_t many[40] = {0};
    CHECK_STATUS(leap_context_eval(ctx, many, 40), LEAP_ERR_PROMPT_EXCEEDS_CONTEXT);

    /* sampler */
    leap_sampler_params sp;
    leap_sampler_params_init(&sp, sizeof sp);
    CHECK(sp.top_k == 40 && fabsf(sp.temperature - 0.8f) < 1e-6f && sp.penalty_last_n == 64);
    sp.temperature = 0;
    leap_sampler *greedy = NULL;
    CHECK_OK(leap_sampler_create(&sp, &greedy));
    int32_t tok = -1;
    CHECK_OK(leap_sampler_sample(greedy, last, 512, &tok));
    int best = 0;
    for (int i = 1; i < 512; i++) if (last[i] > last[best]) best = i;
    CHECK(tok == best);
    CHECK_OK(leap_sampler_accept(greedy, tok));
    CHECK_OK(leap_sampler_reset(greedy));
    CHECK_STATUS(leap_sampler_sample(greedy, NULL, 512, &tok), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_sampler_sample(greedy, last, 0, &tok), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_sampler_sample(NULL, last, 512, &tok), LEAP_ERR_INVALID_ARGUMENT);
    sp.repetition_penalty = 0;
    leap_sampler *bad_s = NULL;
    CHECK_STATUS(leap_sampler_create(&sp, &bad_s), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(bad_s == NULL);

    /* seeded sampling is reproducible */
    leap_sampler_params_init(&sp, sizeof sp);
    sp.temperature = 1.5f;
    sp.seed = 7;
    leap_sampler *a = NULL, *b = NULL;
    CHECK_OK(leap_sampler_create(&sp, &a));
    CHECK_OK(leap_sampler_create(&sp, &b));
    int same = 1;
    for (int i = 0; i < 20; i++) {
        int32_t ta, tb;
        leap_sampler_sample(a, last, 512, &ta);
        leap_sampler_sample(b, last, 512, &tb);
        if (ta != tb) same = 0;
    }
    CHECK(same);

    leap_sampler_free(a);
    leap_sampler_free(b);
    leap_sampler_free(greedy);
    leap_sampler_free(NULL);
    /* the context keeps the model alive */
    leap_model_free(model);
    CHECK_OK(leap_context_rewind(ctx, 0));
    CHECK_OK(leap_context_eval(ctx, toks, n));
    leap_buffer_free(toks);
    leap_context_free(ctx);
    leap_context_free(NULL);
    return CHECK_SUMMARY("test_context");
}
