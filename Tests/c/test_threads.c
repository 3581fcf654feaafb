/* Threads: several conversations of one model generating at once from several threads (greedy output
 * must equal a sequential run of the same prompt), leap_conversation_stop() from another thread, and
 * leap_last_error() being per thread. Checks run in main after the joins (the counters of check.h are
 * not atomic). Also a ThreadSanitizer target: see the test script's sanitizer notes. */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c99 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "check.h"

#define N_WORKERS 3
#define MAX_TEXT 4096

typedef struct {
    leap_conversation *conv;
    const leap_generation_options *options;
    const char *prompt;
    char text[MAX_TEXT];
    size_t len;
    int started;                 /* set (atomically) by the first chunk */
    leap_status status;
    leap_finish_reason reason;
    int completes;
    int64_t completion_tokens;
    /* per-thread last error check */
    size_t bad_index;
    leap_status bad_status;
    int bad_message_ok;
} job;

static int32_t on_chunk(const char *t, size_t n, void *ud) {
    job *j = (job *)ud;
    if (j->len + n < MAX_TEXT) {
        memcpy(j->text + j->len, t, n);
        j->len += n;
        j->text[j->len] = 0;
    }
    __atomic_store_n(&j->started, 1, __ATOMIC_RELEASE);
    return 0;
}

static void on_complete(const leap_message *m, leap_finish_reason r, const leap_generation_stats *s, void *ud) {
    job *j = (job *)ud;
    (void)m;
    j->completes++;
    j->reason = r;
    j->completion_tokens = s->completion_tokens;
}

static leap_status run_job(job *j) {
    leap_message *m = NULL;
    leap_generation_callbacks cb;
    leap_status st = leap_message_create(LEAP_ROLE_USER, &m);
    if (st == LEAP_OK) st = leap_message_add_text(m, j->prompt);
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = on_chunk;
    cb.on_complete = on_complete;
    cb.user_data = j;
    if (st == LEAP_OK) st = leap_conversation_generate(j->conv, m, j->options, &cb);
    leap_message_free(m);
    return st;
}

static void *worker(void *arg) {
    job *j = (job *)arg;
    leap_message *none = NULL;
    char needle[64];
    j->status = run_job(j);
    /* A failure on this thread leaves its own message, whatever the other threads do meanwhile. */
    j->bad_status = leap_conversation_message(j->conv, j->bad_index, &none);
    snprintf(needle, sizeof needle, "index %zu is out of range", j->bad_index);
    j->bad_message_ok = strstr(leap_last_error(), needle) != NULL && none == NULL;
    return NULL;
}

/* Stops the conversation once it reports that it is generating (the stop lands while the generation is
 * starting, or just after). */
static void *stop_when_generating(void *arg) {
    leap_conversation *conv = (leap_conversation *)arg;
    int32_t busy = 0;
    long spins = 0;
    while (leap_conversation_is_generating(conv, &busy) == LEAP_OK && !busy && spins++ < 100000000L) {}
    leap_conversation_stop(conv);
    return NULL;
}

static void *stopper(void *arg) {
    job *j = (job *)arg;
    struct timespec pause = {0, 1000000};
    int i;
    for (i = 0; i < 60000 && !__atomic_load_n(&j->started, __ATOMIC_ACQUIRE); i++) nanosleep(&pause, NULL);
    leap_conversation_stop(j->conv);
    return NULL;
}

int main(void) {
    char path[1024];
    const char *dir = getenv("LEAP_MODELS_DIR");
    leap_model *model = NULL;
    leap_model_params mp;
    leap_generation_options greedy, long_greedy;
    job reference, jobs[N_WORKERS], essay;
    pthread_t threads[N_WORKERS], essay_thread, stop_thread;
    const char *prompt = "Name three colors.";
    FILE *f;
    int i;

    snprintf(path, sizeof path, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", dir ? dir : "models");
    if (!(f = fopen(path, "rb"))) {
        printf("test_threads: skipped (%s not found)\n", path);
        return CHECK_SUMMARY("test_threads");
    }
    fclose(f);
    leap_model_params_init(&mp, sizeof mp);
    mp.context_size = 256;
    mp.n_threads = 1;
    CHECK_OK(leap_model_load(path, &mp, &model));
    if (!model) return CHECK_SUMMARY("test_threads");
    leap_generation_options_init(&greedy, sizeof greedy);
    greedy.temperature = 0;
    greedy.max_tokens = 12;
    long_greedy = greedy;
    long_greedy.max_tokens = 200;

    /* The expectation: the same prompt run alone. */
    memset(&reference, 0, sizeof reference);
    reference.options = &greedy;
    reference.prompt = prompt;
    CHECK_OK(leap_conversation_create(model, NULL, &reference.conv));
    CHECK_OK(run_job(&reference));
    CHECK(reference.completes == 1 && reference.len > 0);

    /* N conversations of one model from N threads, and one more stopped from another thread. */
    for (i = 0; i < N_WORKERS; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].options = &greedy;
        jobs[i].prompt = prompt;
        jobs[i].bad_index = 1000 + (size_t)i;
        CHECK_OK(leap_conversation_create(model, NULL, &jobs[i].conv));
    }
    memset(&essay, 0, sizeof essay);
    essay.options = &long_greedy;
    essay.prompt = "Write a long essay about the history of the sea, with many details.";
    essay.bad_index = 2000;
    CHECK_OK(leap_conversation_create(model, NULL, &essay.conv));
    CHECK(pthread_create(&essay_thread, NULL, worker, &essay) == 0);
    CHECK(pthread_create(&stop_thread, NULL, stopper, &essay) == 0);
    for (i = 0; i < N_WORKERS; i++) CHECK(pthread_create(&threads[i], NULL, worker, &jobs[i]) == 0);
    for (i = 0; i < N_WORKERS; i++) pthread_join(threads[i], NULL);
    pthread_join(stop_thread, NULL);
    pthread_join(essay_thread, NULL);

    for (i = 0; i < N_WORKERS; i++) {
        size_t n = 0;
        CHECK_STATUS(jobs[i].status, LEAP_OK);
        CHECK(jobs[i].completes == 1);
        CHECK(strcmp(jobs[i].text, reference.text) == 0);
        CHECK(jobs[i].bad_status == LEAP_ERR_INVALID_ARGUMENT && jobs[i].bad_message_ok);
        CHECK_OK(leap_conversation_message_count(jobs[i].conv, &n));
        CHECK(n == 2);
        leap_conversation_free(jobs[i].conv);
    }
    CHECK_STATUS(essay.status, LEAP_OK);
    CHECK(essay.completes == 1 && essay.reason == LEAP_FINISH_INTERRUPTED);
    CHECK(essay.completion_tokens > 0 && essay.completion_tokens < 200);
    CHECK(essay.bad_status == LEAP_ERR_INVALID_ARGUMENT && essay.bad_message_ok);
    {   /* the stopped conversation is idle and usable again */
        int32_t busy = 1;
        CHECK_OK(leap_conversation_is_generating(essay.conv, &busy));
        CHECK(busy == 0);
        memset(essay.text, 0, sizeof essay.text);
        essay.len = 0;
        essay.options = &greedy;
        essay.completes = 0;
        CHECK_OK(run_job(&essay));
        CHECK(essay.completes == 1 && essay.len > 0);
    }
    {   /* a stop issued once the conversation is generating always reaches that generation, even while
         * leap_conversation_generate_begin is still setting it up: it completes INTERRUPTED, 0 tokens */
        leap_message *m = NULL;
        int k, interrupted = 0, none_generated = 0;
        CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
        CHECK_OK(leap_message_add_text(m, "Hi"));
        for (k = 0; k < 40; k++) {
            leap_conversation *conv = NULL;
            leap_generation *g = NULL;
            leap_event ev;
            pthread_t t;
            CHECK_OK(leap_conversation_create(model, NULL, &conv));
            CHECK(pthread_create(&t, NULL, stop_when_generating, conv) == 0);
            CHECK_OK(leap_conversation_generate_begin(conv, m, &greedy, &g));
            pthread_join(t, NULL);
            for (;;) {
                memset(&ev, 0, sizeof ev);
                ev.struct_size = sizeof ev;
                if (leap_generation_next(g, &ev) != LEAP_OK || ev.kind == LEAP_EVENT_NONE) break;
                if (ev.kind == LEAP_EVENT_COMPLETE) {
                    interrupted += ev.finish_reason == LEAP_FINISH_INTERRUPTED;
                    none_generated += ev.stats->completion_tokens == 0;
                }
            }
            leap_generation_free(g);
            leap_conversation_free(conv);
        }
        CHECK(interrupted == 40 && none_generated == 40);
        leap_message_free(m);
    }
    leap_conversation_free(essay.conv);
    leap_conversation_free(reference.conv);
    leap_model_free(model);
    return CHECK_SUMMARY("test_threads");
}
