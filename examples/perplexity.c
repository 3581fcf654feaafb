/* perplexity: like llama.cpp's llama-perplexity, on a UTF-8 text file.
 *
 *   ./bin/perplexity MODEL.gguf TEXT.txt [--ctx N] [--threads N]
 *
 * The text is tokenized once (with BOS when the model adds one) and cut into windows of N tokens; each
 * window is evaluated from an empty context with all logits kept, and the negative log-likelihood of
 * every token of its second half is accumulated (as llama-perplexity does, so each scored token has at
 * least N/2 tokens of context). Prints the running and final perplexity exp(mean NLL). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "leap.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, leap_last_error());
    return 1;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf TEXT.txt [--ctx N] [--threads N]\n", argv[0]);
        return 2;
    }
    int n_ctx = 256, threads = 0;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ctx")) n_ctx = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
    }
    char *text = read_file(argv[2]);
    if (!text) { fprintf(stderr, "cannot read %s\n", argv[2]); return 1; }

    leap_model_params mp;
    leap_model_params_init(&mp, sizeof mp);
    mp.n_threads = threads;
    leap_model *model = NULL;
    if (leap_model_load(argv[1], &mp, &model) != LEAP_OK) return fail("load");
    leap_context_params cp;
    leap_context_params_init(&cp, sizeof cp);
    cp.context_size = n_ctx;
    leap_context *ctx = NULL;
    if (leap_context_create(model, &cp, &ctx) != LEAP_OK) return fail("context");

    int32_t *tokens = NULL;
    size_t n_tokens = 0;
    if (leap_model_tokenize(model, text, 1, 0, &tokens, &n_tokens) != LEAP_OK) return fail("tokenize");
    free(text);
    if (n_tokens < (size_t)n_ctx) n_ctx = (int)n_tokens;  /* short texts: one window */
    if (n_ctx < 2) { fprintf(stderr, "text too short (%zu tokens)\n", n_tokens); return 1; }

    double nll = 0.0;
    long scored = 0;
    size_t n_windows = n_tokens / (size_t)n_ctx;
    for (size_t w = 0; w < n_windows; w++) {
        const int32_t *win = tokens + w * (size_t)n_ctx;
        if (leap_context_rewind(ctx, 0) != LEAP_OK) return fail("rewind");
        if (leap_context_eval_all_logits(ctx, win, (size_t)n_ctx) != LEAP_OK) return fail("eval");
        for (int i = n_ctx / 2 - (n_windows == 1 && n_ctx < 4 ? n_ctx / 2 : 0); i < n_ctx - 1; i++) {
            const float *logits;
            size_t n_vocab;
            if (leap_context_logits(ctx, i, &logits, &n_vocab) != LEAP_OK) return fail("logits");
            double max = logits[0], sum = 0.0;
            for (size_t v = 1; v < n_vocab; v++) if (logits[v] > max) max = logits[v];
            for (size_t v = 0; v < n_vocab; v++) sum += exp((double)logits[v] - max);
            nll -= (double)logits[win[i + 1]] - max - log(sum);
            scored++;
        }
        printf("[%zu] %.4f\n", w + 1, exp(nll / (double)scored));
        fflush(stdout);
    }
    printf("perplexity: %.4f over %ld tokens (%zu windows of %d)\n", exp(nll / (double)scored), scored, n_windows, n_ctx);
    leap_buffer_free(tokens);
    leap_context_free(ctx);
    leap_model_free(model);
    return 0;
}
