/* LEAP model bundles through the C API: a manifest read from a path loads the tiny LFM2 fixture with the
 * manifest's chat template; one served by scripts/bundle_test_server.py on loopback downloads the model
 * into {cache}/{model}-{quant}@{scheme}-{host} with progress reports; a progress callback returning
 * non-zero and a cancel token set from another thread both stop a slow download, leaving no model and
 * only a .part file.
 * Runs from the repository root (scripts/test.sh does). */
#define _XOPEN_SOURCE 700 /* mkdtemp, fdopen, kill under -std=c99 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

static const char *fixture = "Tests/Fixtures/models/lfm2-tiny-q8_0.gguf";
static const char *template_source = "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}"
                                     "{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}";

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int copy_file(const char *from, const char *to) {
    char buf[65536];
    size_t n;
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    int ok = in && out;
    while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out) fclose(out);
    return ok;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The loopback server on ROOT: its pid, and its port in *port (0 when it did not start). */
static pid_t start_server(const char *root, int *port) {
    int fds[2];
    pid_t pid;
    FILE *f;
    *port = 0;
    if (pipe(fds) != 0) return -1;
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execlp("python3", "python3", "scripts/bundle_test_server.py", root, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    f = fdopen(fds[0], "r");
    if (!f || fscanf(f, "PORT %d", port) != 1) *port = 0;
    if (f) fclose(f);
    return pid;
}

typedef struct {
    char last_file[256];
    uint64_t done, total;
    int calls, stop_after;
} progress_state;

static int32_t on_progress(const char *file_name, uint64_t done, uint64_t total, void *user_data) {
    progress_state *s = (progress_state *)user_data;
    snprintf(s->last_file, sizeof s->last_file, "%s", file_name);
    s->done = done;
    s->total = total;
    s->calls++;
    return s->stop_after > 0 && s->calls >= s->stop_after;
}

static void *cancel_later(void *token) {
    struct timespec t = {0, 300 * 1000 * 1000};
    nanosleep(&t, NULL);
    leap_cancel_token_cancel((leap_cancel_token *)token);
    return NULL;
}

static void on_complete(const leap_message *m, leap_finish_reason r, const leap_generation_stats *s, void *ud) {
    (void)m;
    (void)r;
    *(int32_t *)ud = s->cached_prompt_tokens;
}

/* One short reply to "Hi" in a new conversation; returns the prompt positions the prompt cache restored. */
static int32_t greedy_reply(leap_model *m) {
    leap_conversation *conv = NULL;
    leap_message *hi = NULL;
    leap_generation_options o;
    leap_generation_callbacks cb;
    int32_t cached = -1;
    leap_generation_options_init(&o, sizeof o);
    o.max_tokens = 4;
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_complete = on_complete;
    cb.user_data = &cached;
    CHECK_OK(leap_conversation_create(m, "You are a helpful assistant who answers briefly.", &conv));
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &hi));
    CHECK_OK(leap_message_add_text(hi, "Hi"));
    CHECK_OK(leap_conversation_generate(conv, hi, &o, &cb));
    leap_message_free(hi);
    leap_conversation_free(conv);
    return cached;
}

int main(void) {
    char dir[] = "/tmp/leap-c-bundle-XXXXXX", path[1600], text[4096], url[1200], cache[1200], cached[1400];
    leap_model *m = NULL;
    leap_bundle_params bp;
    leap_cancel_token *token = NULL;
    int32_t flag = -1;
    char *source = NULL;
    progress_state ps;
    int port = 0;
    pid_t server;
    long model_size = file_size(fixture);

    if (model_size <= 0) {
        printf("test_bundle: skipped (%s not found: run from the repository root)\n", fixture);
        return CHECK_SUMMARY("test_bundle");
    }
    CHECK(mkdtemp(dir) != NULL);
    snprintf(cache, sizeof cache, "%s/cache", dir);

    /* defaults, NULL safety */
    leap_bundle_params_init(&bp, sizeof bp);
    CHECK(bp.struct_size == sizeof bp && bp.cache_dir == NULL && bp.on_progress == NULL && bp.cancel == NULL);
    CHECK(bp.n_threads == 0 && bp.context_size == 0 && bp.stall_timeout_seconds == 0);
    CHECK_STATUS(leap_model_load_bundle("x.json", NULL, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_model_load_bundle(NULL, NULL, &m), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(m == NULL);
    CHECK_STATUS(leap_cancel_token_create(NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_cancel_token_cancel(NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_cancel_token_create(&token));
    CHECK_OK(leap_cancel_token_is_cancelled(token, &flag));
    CHECK(flag == 0);
    CHECK_OK(leap_cancel_token_cancel(token));
    CHECK_OK(leap_cancel_token_is_cancelled(token, &flag));
    CHECK(flag == 1);
    CHECK_STATUS(leap_cancel_token_is_cancelled(token, NULL), LEAP_ERR_INVALID_ARGUMENT);
    leap_cancel_token_free(token);
    leap_cancel_token_free(NULL);
    token = NULL;

    /* a manifest on disk naming the model next to it, with an inline chat template and sampling defaults */
    snprintf(path, sizeof path, "%s/Tiny-GGUF", dir);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/Tiny-GGUF/lfm2-tiny-q8_0.gguf", dir);
    CHECK(copy_file(fixture, path));
    snprintf(text, sizeof text,
             "{\"schema_version\": \"1.0.0\", \"inference_type\": \"llama.cpp/text-to-text\","
             " \"load_time_parameters\": {\"model\": \"lfm2-tiny-q8_0.gguf\", \"chat_template\": \"%s\"},"
             " \"generation_time_parameters\": {\"sampling_parameters\": {\"temperature\": 0.0},"
             " \"number_of_decoding_threads\": 1}}",
             template_source);
    snprintf(path, sizeof path, "%s/Tiny-GGUF/Q8_0.json", dir);
    write_text(path, text);
    bp.cache_dir = cache;
    CHECK_OK(leap_model_load_bundle(path, &bp, &m));
    if (m) {
        CHECK_OK(leap_model_chat_template(m, &source));
        CHECK(source != NULL && strncmp(source, "{% for m in messages %}<|im_start|>", 35) == 0);
        leap_string_free(source);
        greedy_reply(m);
        leap_model_free(m);
        m = NULL;
    }
    CHECK(file_size(cache) < 0); /* nothing to download: no cache folder */

    /* the prompt cache through bundle params: the second conversation restores the first one's prefix */
    CHECK(bp.prompt_cache_enabled == 0 && bp.prompt_cache_path == NULL && bp.prompt_cache_max_entries_disk == 4096);
    CHECK(bp.prompt_cache_max_entries_memory == 256 && bp.prompt_cache_max_bytes_memory == (int64_t)512 << 20);
    bp.prompt_cache_enabled = 1;
    CHECK_STATUS(leap_model_load_bundle(path, &bp, &m), LEAP_ERR_INVALID_ARGUMENT); /* disk cache, no path */
    CHECK_ERROR_MENTIONS("the prompt cache needs a path");
    CHECK(m == NULL);
    bp.prompt_cache_disk_disabled = 1;
    CHECK_OK(leap_model_load_bundle(path, &bp, &m));
    if (m) {
        CHECK(greedy_reply(m) == 0);
        CHECK(greedy_reply(m) > 10);
        leap_model_free(m);
        m = NULL;
    }
    bp.prompt_cache_enabled = 0;
    bp.prompt_cache_disk_disabled = 0;

    /* refusals name the field */
    snprintf(path, sizeof path, "%s/bad.json", dir);
    write_text(path, "{\"load_time_parameters\": {}}");
    CHECK_STATUS(leap_model_load_bundle(path, &bp, &m), LEAP_ERR_FORMAT);
    CHECK_ERROR_MENTIONS("load_time_parameters.model is missing");
    write_text(path, "{\"load_time_parameters\": {\"model\": \"gone.gguf\"}}");
    CHECK_STATUS(leap_model_load_bundle(path, &bp, &m), LEAP_ERR_IO);
    CHECK_ERROR_MENTIONS("gone.gguf', which cannot be read");
    CHECK(m == NULL);

    server = start_server(dir, &port);
    if (port == 0) {
        printf("test_bundle: loopback part skipped (python3 scripts/bundle_test_server.py did not start)\n");
    } else {
        /* the same manifest from a URL: the model is downloaded into the cache, with progress reports */
        memset(&ps, 0, sizeof ps);
        bp.on_progress = on_progress;
        bp.user_data = &ps;
        snprintf(url, sizeof url, "http://127.0.0.1:%d/etag/Tiny-GGUF/Q8_0.json", port);
        CHECK_OK(leap_model_load_bundle(url, &bp, &m));
        snprintf(cached, sizeof cached, "%s/Tiny-Q8_0@http-127.0.0.1:%d/lfm2-tiny-q8_0.gguf", cache, port);
        CHECK(file_size(cached) == model_size);
        CHECK(strcmp(ps.last_file, "lfm2-tiny-q8_0.gguf") == 0);
        CHECK(ps.done == (uint64_t)model_size && ps.total == (uint64_t)model_size);
        if (m) greedy_reply(m);
        leap_model_free(m);
        m = NULL;

        /* a progress callback returning non-zero cancels: no model, only a .part in the cache */
        snprintf(url, sizeof url, "http://127.0.0.1:%d/slow/Tiny-GGUF/Q8_0.json", port);
        snprintf(cache, sizeof cache, "%s/cache2", dir);
        memset(&ps, 0, sizeof ps);
        ps.stop_after = 3;
        CHECK_STATUS(leap_model_load_bundle(url, &bp, &m), LEAP_ERR_CANCELLED);
        CHECK(m == NULL);
        snprintf(cached, sizeof cached, "%s/Tiny-Q8_0@http-127.0.0.1:%d/lfm2-tiny-q8_0.gguf", cache, port);
        CHECK(file_size(cached) < 0);
        snprintf(path, sizeof path, "%s.part", cached);
        CHECK(file_size(path) > 0 && file_size(path) < model_size);

        /* a cancel token set from another thread */
        ps.stop_after = 0;
        CHECK_OK(leap_cancel_token_create(&token));
        bp.cancel = token;
        {
            pthread_t t;
            CHECK(pthread_create(&t, NULL, cancel_later, token) == 0);
            CHECK_STATUS(leap_model_load_bundle(url, &bp, &m), LEAP_ERR_CANCELLED);
            pthread_join(t, NULL);
        }
        CHECK(m == NULL && file_size(cached) < 0);
        leap_cancel_token_free(token);
        bp.cancel = NULL;

        /* a 404 */
        snprintf(url, sizeof url, "http://127.0.0.1:%d/missing/Tiny-GGUF/Q8_0.json", port);
        CHECK_STATUS(leap_model_load_bundle(url, &bp, &m), LEAP_ERR_IO);
        CHECK_ERROR_MENTIONS("HTTP 404");
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
    }
    {
        char cmd[1300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    return CHECK_SUMMARY("test_bundle");
}
