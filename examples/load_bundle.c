/* load_bundle: load a LEAP model bundle (a manifest path or URL), downloading its files with a progress
 * bar, then answer one prompt with the manifest's generation defaults.
 *
 *   ./bin/load_bundle MANIFEST [--cache DIR] [--prompt TEXT] [--max-tokens N]
 *   ./bin/load_bundle https://huggingface.co/LiquidAI/LeapBundles/resolve/main/<Model>-GGUF/<Quant>.json
 *
 * Ctrl-C during a download cancels it (the progress callback returns non-zero); the partial file stays
 * as <file>.part in the cache and the next run resumes it. */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "leap.h"

static volatile sig_atomic_t interrupted = 0;
static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* "  model.gguf  [##########..........]  50%  12.3 / 24.6 MB" on stderr, redrawn in place. */
static int32_t progress_bar(const char *file, uint64_t done, uint64_t total, void *user_data) {
    (void)user_data;
    char bar[31];
    int filled = total ? (int)(30.0 * (double)done / (double)total) : 0;
    for (int i = 0; i < 30; i++) bar[i] = i < filled ? '#' : '.';
    bar[30] = 0;
    if (total)
        fprintf(stderr, "\r  %s  [%s] %3d%%  %.1f / %.1f MB", file, bar, (int)(100.0 * (double)done / (double)total),
                (double)done / 1e6, (double)total / 1e6);
    else
        fprintf(stderr, "\r  %s  %.1f MB", file, (double)done / 1e6);
    if (total && done == total) fputc('\n', stderr);
    return interrupted; /* non-zero cancels the load */
}

static int32_t print_chunk(const char *text, size_t n, void *user_data) {
    (void)user_data;
    fwrite(text, 1, n, stdout);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MANIFEST_PATH_OR_URL [--cache DIR] [--prompt TEXT] [--max-tokens N]\n", argv[0]);
        return 2;
    }
    const char *prompt = "What is the capital of France?";
    leap_bundle_params bp;
    leap_bundle_params_init(&bp, sizeof bp);
    leap_generation_options opts;
    leap_generation_options_init(&opts, sizeof opts); /* unset fields: the manifest's sampling parameters */
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--cache")) bp.cache_dir = argv[i + 1];
        else if (!strcmp(argv[i], "--prompt")) prompt = argv[i + 1];
        else if (!strcmp(argv[i], "--max-tokens")) opts.max_tokens = atoi(argv[i + 1]);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, NULL);
    bp.on_progress = progress_bar;

    leap_model *model = NULL;
    leap_status s = leap_model_load_bundle(argv[1], &bp, &model);
    if (s != LEAP_OK) {
        fprintf(stderr, "\nload_bundle: %s: %s\n", leap_status_string(s), leap_last_error());
        return 1;
    }
    leap_conversation *conv = NULL;
    leap_message *msg = NULL;
    leap_generation_callbacks cb;
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = print_chunk;
    if (leap_conversation_create(model, NULL, &conv) != LEAP_OK || leap_message_create(LEAP_ROLE_USER, &msg) != LEAP_OK ||
        leap_message_add_text(msg, prompt) != LEAP_OK || leap_conversation_generate(conv, msg, &opts, &cb) != LEAP_OK) {
        fprintf(stderr, "load_bundle: %s\n", leap_last_error());
        return 1;
    }
    putchar('\n');
    leap_message_free(msg);
    leap_conversation_free(conv);
    leap_model_free(model);
    return 0;
}
