/* The log callback from C across threads: a thread keeps producing warnings (a bundle manifest with an
 * unknown key, naming a missing model) while the main thread replaces the callback; once
 * leap_set_log_callback returns, the old callback is not running and is never called again (so its
 * user_data may be freed). A callback may also silence the log from inside itself. Needs no model. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "check.h"

typedef struct {
    int inside;  /* 1 while a call of slow_callback runs */
    int calls;
    int overlapped_reset;  /* a call was running when leap_set_log_callback returned */
} log_state;

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void slow_callback(leap_log_level level, const char *message, void *user_data) {
    log_state *s = (log_state *)user_data;
    (void)level;
    (void)message;
    __atomic_store_n(&s->inside, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_SEQ_CST);
    pause_ms(30);  /* long enough for the main thread to replace the callback meanwhile */
    __atomic_store_n(&s->inside, 0, __ATOMIC_SEQ_CST);
}

static int self_silencing_calls;

static void self_silencing_callback(leap_log_level level, const char *message, void *user_data) {
    (void)level;
    (void)message;
    (void)user_data;
    self_silencing_calls++;
    leap_set_log_callback(NULL, LEAP_LOG_WARNING, NULL);
}

static const char *manifest_path;
static int stop_producer;

/* Each load parses the manifest (a warning for its unknown key), then fails: the model is missing. */
static void *produce_warnings(void *unused) {
    (void)unused;
    while (!__atomic_load_n(&stop_producer, __ATOMIC_SEQ_CST)) {
        leap_model *m = NULL;
        leap_model_load_bundle(manifest_path, NULL, &m);
        pause_ms(1);
    }
    return NULL;
}

int main(void) {
    char dir[] = "/tmp/leap-c-log-XXXXXX", path[256];
    log_state *state = calloc(1, sizeof *state);
    pthread_t producer;
    leap_model *m = NULL;
    int i, calls_at_reset;
    FILE *f;

    CHECK(state != NULL && mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/Q8_0.json", dir);
    f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"load_time_parameters\": {\"model\": \"gone.gguf\"}, \"misspelt_key\": 1}", f);
        fclose(f);
    }
    manifest_path = path;

    /* A callback that silences the log from inside itself returns (no deadlock) and is called once. */
    CHECK_OK(leap_set_log_callback(self_silencing_callback, LEAP_LOG_WARNING, NULL));
    CHECK_STATUS(leap_model_load_bundle(path, NULL, &m), LEAP_ERR_IO);
    CHECK_STATUS(leap_model_load_bundle(path, NULL, &m), LEAP_ERR_IO);
    CHECK(self_silencing_calls == 1);

    /* Replacing a callback while another thread is inside it. */
    CHECK_OK(leap_set_log_callback(slow_callback, LEAP_LOG_WARNING, state));
    CHECK(pthread_create(&producer, NULL, produce_warnings, NULL) == 0);
    for (i = 0; i < 5; i++) {
        int waited = 0;
        while (!__atomic_load_n(&state->inside, __ATOMIC_SEQ_CST) && waited++ < 5000) pause_ms(1);
        CHECK(__atomic_load_n(&state->inside, __ATOMIC_SEQ_CST) == 1);
        CHECK_OK(leap_set_log_callback(NULL, LEAP_LOG_WARNING, NULL));
        if (__atomic_load_n(&state->inside, __ATOMIC_SEQ_CST)) state->overlapped_reset++;
        calls_at_reset = __atomic_load_n(&state->calls, __ATOMIC_SEQ_CST);
        pause_ms(50);  /* the producer keeps warning: none of it reaches the removed callback */
        CHECK(__atomic_load_n(&state->calls, __ATOMIC_SEQ_CST) == calls_at_reset);
        if (i < 4) CHECK_OK(leap_set_log_callback(slow_callback, LEAP_LOG_WARNING, state));
    }
    CHECK(state->overlapped_reset == 0);
    __atomic_store_n(&stop_producer, 1, __ATOMIC_SEQ_CST);
    pthread_join(producer, NULL);
    free(state);  /* the callback's user_data: nothing uses it any more */
    {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0);
    }
    return CHECK_SUMMARY("test_log");
}
