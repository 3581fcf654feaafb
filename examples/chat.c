/* A streaming chat REPL: loads a GGUF model, keeps one conversation, prints tokens as they arrive.
 *
 *   chat MODEL.gguf [--system "You are ..."] [--prompt "one question"] [--temperature 0.3] [--seed 42]
 *
 * Without --prompt it reads lines from stdin until EOF or "/quit". Ctrl-C stops the current answer.
 *   cc chat.c $(pkg-config --cflags --libs leap) -o chat */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <leap.h>

static volatile sig_atomic_t g_interrupted = 0;

/* Only sets a flag: a signal handler must not call into libraries. The next chunk callback sees it and
 * returns non-zero, which stops the generation (another thread could call leap_conversation_stop). */
static void on_sigint(int sig) {
    (void)sig;
    g_interrupted = 1;
}

static int32_t on_chunk(const char *text, size_t n, void *ud) {
    (void)ud;
    fwrite(text, 1, n, stdout);
    fflush(stdout);
    return g_interrupted ? 1 : 0; /* non-zero stops the generation */
}

static int32_t on_reasoning(const char *text, size_t n, void *ud) {
    (void)ud;
    fprintf(stderr, "\x1b[2m%.*s\x1b[0m", (int)n, text); /* reasoning, dimmed, on stderr */
    return 0;
}

static int32_t on_calls(const char *calls_json, void *ud) {
    (void)ud;
    printf("\n[function calls] %s\n", calls_json);
    return 0;
}

static void on_complete(const leap_message *m, leap_finish_reason reason, const leap_generation_stats *s, void *ud) {
    static const char *names[] = {"stop", "exceed context", "interrupted", "constraint", "error", "max tokens"};
    (void)m;
    (void)ud;
    fprintf(stderr, "\n[%s; %lld prompt tokens (%lld cached), %lld generated, %.1f tok/s, first token after %.0f ms]\n",
            (unsigned)reason < 6 ? names[reason] : "?", (long long)s->prompt_tokens, (long long)s->cached_prompt_tokens,
            (long long)s->completion_tokens, s->tokens_per_second, s->time_to_first_token * 1000.0);
}

static void on_error(leap_status status, const char *message, void *ud) {
    (void)ud;
    fprintf(stderr, "\n[error %s: %s]\n", leap_status_string(status), message);
}

static int ask(leap_conversation *conv, const char *text, const leap_generation_options *opts) {
    leap_message *msg = NULL;
    leap_generation_callbacks cb;
    leap_status st;
    if (leap_message_create(LEAP_ROLE_USER, &msg) != LEAP_OK || leap_message_add_text(msg, text) != LEAP_OK) {
        fprintf(stderr, "message: %s\n", leap_last_error());
        leap_message_free(msg);
        return 1;
    }
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = on_chunk;
    cb.on_reasoning_chunk = on_reasoning;
    cb.on_function_calls = on_calls;
    cb.on_complete = on_complete;
    cb.on_error = on_error;
    g_interrupted = 0;
    st = leap_conversation_generate(conv, msg, opts, &cb);
    leap_message_free(msg);
    return st == LEAP_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *system = "You are a helpful assistant.", *prompt = NULL;
    leap_model_params mp;
    leap_generation_options opts;
    leap_model *model = NULL;
    leap_conversation *conv = NULL;
    char line[4096];
    int i, rc = 0;

    leap_generation_options_init(&opts, sizeof opts);
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--system") && i + 1 < argc) system = argv[++i];
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) prompt = argv[++i];
        else if (!strcmp(argv[i], "--temperature") && i + 1 < argc) opts.temperature = (float)atof(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) { opts.use_rng_seed = 1; opts.rng_seed = strtoull(argv[++i], NULL, 10); }
        else if (!strcmp(argv[i], "--max-tokens") && i + 1 < argc) opts.max_tokens = atoi(argv[++i]);
        else if (!model_path) model_path = argv[i];
        else { fprintf(stderr, "unknown argument %s\n", argv[i]); return 2; }
    }
    if (!model_path) {
        fprintf(stderr, "usage: %s MODEL.gguf [--system TEXT] [--prompt TEXT] [--temperature T] [--seed N] [--max-tokens N]\n", argv[0]);
        return 2;
    }
    leap_model_params_init(&mp, sizeof mp);
    if (leap_model_load(model_path, &mp, &model) != LEAP_OK) {
        fprintf(stderr, "cannot load %s: %s\n", model_path, leap_last_error());
        return 1;
    }
    if (leap_conversation_create(model, system, &conv) != LEAP_OK) {
        fprintf(stderr, "conversation: %s\n", leap_last_error());
        leap_model_free(model);
        return 1;
    }
    signal(SIGINT, on_sigint);
    if (prompt) {
        printf("> %s\n", prompt);
        rc = ask(conv, prompt, &opts);
    } else {
        fprintf(stderr, "chatting with %s -- type /quit to leave, Ctrl-C stops an answer\n", model_path);
        for (;;) {
            size_t n;
            printf("> ");
            fflush(stdout);
            if (!fgets(line, sizeof line, stdin)) break;
            n = strlen(line);
            while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
            if (!strcmp(line, "/quit")) break;
            if (n == 0) continue;
            ask(conv, line, &opts);
        }
    }
    leap_conversation_free(conv);
    leap_model_free(model);
    return rc;
}
