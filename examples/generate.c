/* generate: text generation through the low-level API (tokenize -> eval -> sample -> eval ...).
 *
 *   ./bin/generate MODEL.gguf [--prompt TEXT] [--tokens N] [--temperature T] [--seed S] [--threads N]
 *
 * The prompt is used as raw text (no chat template): this shows the engine, not the conversation API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "leap.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, leap_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [--prompt TEXT] [--tokens N] [--temperature T] [--seed S] [--threads N]\n", argv[0]);
        return 2;
    }
    const char *prompt = "Once upon a time";
    int n_gen = 64, threads = 0;
    float temperature = 0.0f;
    unsigned long long seed = 42;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--prompt")) prompt = argv[i + 1];
        else if (!strcmp(argv[i], "--tokens")) n_gen = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--temperature")) temperature = (float)atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    }

    leap_model_params mp;
    leap_model_params_init(&mp, sizeof mp);
    mp.n_threads = threads;
    leap_model *model = NULL;
    if (leap_model_load(argv[1], &mp, &model) != LEAP_OK) return fail("load");

    leap_context *ctx = NULL;
    if (leap_context_create(model, NULL, &ctx) != LEAP_OK) return fail("context");

    leap_sampler_params sp;
    leap_sampler_params_init(&sp, sizeof sp);
    sp.temperature = temperature;
    sp.seed = seed;
    leap_sampler *sampler = NULL;
    if (leap_sampler_create(&sp, &sampler) != LEAP_OK) return fail("sampler");

    int32_t *tokens = NULL;
    size_t n_tokens = 0;
    if (leap_model_tokenize(model, prompt, 1, 0, &tokens, &n_tokens) != LEAP_OK) return fail("tokenize");
    for (size_t i = 0; i < n_tokens; i++) leap_sampler_accept(sampler, tokens[i]);
    if (leap_context_eval(ctx, tokens, n_tokens) != LEAP_OK) return fail("eval");
    leap_buffer_free(tokens);

    fputs(prompt, stdout);
    for (int i = 0; i < n_gen; i++) {
        const float *logits;
        size_t n_vocab;
        int32_t tok, eog = 0;
        if (leap_context_logits(ctx, -1, &logits, &n_vocab) != LEAP_OK) return fail("logits");
        if (leap_sampler_sample(sampler, logits, n_vocab, &tok) != LEAP_OK) return fail("sample");
        leap_model_token_is_eog(model, tok, &eog);
        if (eog) break;
        uint8_t *piece = NULL;
        size_t n_piece = 0;
        if (leap_model_token_piece(model, tok, &piece, &n_piece) == LEAP_OK && piece) {
            fwrite(piece, 1, n_piece, stdout);
            fflush(stdout);
            leap_buffer_free(piece);
        }
        leap_sampler_accept(sampler, tok);
        leap_status st = leap_context_eval(ctx, &tok, 1);
        if (st == LEAP_ERR_PROMPT_EXCEEDS_CONTEXT) break;
        if (st != LEAP_OK) return fail("eval");
    }
    fputc('\n', stdout);
    leap_sampler_free(sampler);
    leap_context_free(ctx);
    leap_model_free(model);
    return 0;
}
