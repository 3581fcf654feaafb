/* The prompt cache from C: params defaults, a restarted model restoring the system prompt from disk, two
 * processes (fork) writing one folder at once, explicit state files, bad folders. Run from the repository
 * root (the tiny LFM2 fixture). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

#ifndef FIXTURES
#define FIXTURES "Tests/Fixtures/models/"
#endif
#define MODEL FIXTURES "lfm2-tiny-f32.gguf"

static const char *SYSTEM = "You are a careful assistant. Keep every answer short and never change the subject.";

typedef struct {
    char text[512];
    leap_generation_stats stats;
    int completes;
} collector;

static int32_t on_chunk(const char *t, size_t len, void *ud) {
    collector *c = (collector *)ud;
    size_t n = strlen(c->text);
    if (n + len < sizeof c->text) {
        memcpy(c->text + n, t, len);
        c->text[n + len] = 0;
    }
    return 0;
}

static void on_complete(const leap_message *m, leap_finish_reason r, const leap_generation_stats *s, void *ud) {
    (void)m;
    (void)r;
    ((collector *)ud)->stats = *s;
    ((collector *)ud)->completes++;
}

/* One greedy turn of `conv` (fresh collector). */
static leap_status turn(leap_conversation *conv, const char *prompt, collector *c) {
    leap_generation_options o;
    leap_generation_callbacks cb;
    leap_message *m = NULL;
    leap_status st;
    memset(c, 0, sizeof *c);
    leap_generation_options_init(&o, sizeof o);
    o.temperature = 0;
    o.max_tokens = 8;
    o.repetition_penalty = 1;
    leap_generation_callbacks_init(&cb, sizeof cb);
    cb.on_chunk = on_chunk;
    cb.on_complete = on_complete;
    cb.user_data = c;
    leap_message_create(LEAP_ROLE_USER, &m);
    leap_message_add_text(m, prompt);
    st = leap_conversation_generate(conv, m, &o, &cb);
    leap_message_free(m);
    return st;
}

static leap_status load(const char *root, int32_t max_disk, leap_model **out) {
    leap_model_params p;
    leap_model_params_init(&p, sizeof p);
    p.context_size = 256;
    if (root) {
        p.cache_enabled = 1;
        p.cache_path = root;
        p.cache_max_entries_disk = max_disk;
    }
    return leap_model_load(MODEL, &p, out);
}

/* Snapshot files (*.snap) and temporary files (.tmp-*) in the model folders under root. */
static void count_files(const char *root, int *snaps, int *tmps) {
    DIR *r = opendir(root);
    struct dirent *e;
    *snaps = *tmps = 0;
    if (!r) return;
    while ((e = readdir(r)) != NULL) {
        char sub[1024];
        DIR *d;
        struct dirent *f;
        if (e->d_name[0] == '.') continue;
        snprintf(sub, sizeof sub, "%s/%s", root, e->d_name);
        if ((d = opendir(sub)) == NULL) continue;
        while ((f = readdir(d)) != NULL) {
            size_t n = strlen(f->d_name);
            if (f->d_name[0] != '.' && n > 5 && strcmp(f->d_name + n - 5, ".snap") == 0) (*snaps)++;
            if (strncmp(f->d_name, ".tmp-", 5) == 0) (*tmps)++;
        }
        closedir(d);
    }
    closedir(r);
}

/* A child process: 12 turns over 4 system prompts in the shared folder; exit status 0 when all ran. */
static int child(const char *root, int order) {
    leap_model *m = NULL;
    int i, failures = 0;
    if (load(root, 3, &m) != LEAP_OK) return 1;
    for (i = 0; i < 12; i++) {
        char system[256];
        leap_conversation *conv = NULL;
        collector c;
        snprintf(system, sizeof system, "System prompt %d: answer briefly, in plain words, and stay on topic.",
                 order ? 3 - i % 4 : i % 4);
        if (leap_conversation_create(m, system, &conv) != LEAP_OK || turn(conv, "Hello there", &c) != LEAP_OK ||
            c.completes != 1)
            failures++;
        leap_conversation_free(conv);
    }
    leap_model_free(m);
    return failures != 0;
}

/* One conversation of a shared model on its own thread: a turn whose system prompt the cache holds. */
typedef struct {
    leap_model *model;
    const char *system;
    collector c;
    leap_status status;
    /* then, together with the other thread, saves of the conversation's state to one file */
    pthread_barrier_t *together;
    const char *state_path;
    int save_failures;
} threaded_turn;

static void *run_threaded_turn(void *arg) {
    threaded_turn *t = (threaded_turn *)arg;
    leap_conversation *conv = NULL;
    int i;
    t->status = leap_conversation_create(t->model, t->system, &conv);
    if (t->status == LEAP_OK) t->status = turn(conv, "What is two plus two?", &t->c);
    pthread_barrier_wait(t->together);
    for (i = 0; i < 100; i++) {
        if (leap_conversation_save_state(conv, t->state_path) != LEAP_OK) t->save_failures++;
    }
    leap_conversation_free(conv);
    return NULL;
}

extern char **environ;

int main(int argc, char **argv) {
    char root[] = "/tmp/leap-c-prompt-cache-XXXXXX";
    char state[1100], damaged[1100];
    leap_model *plain = NULL, *first = NULL, *second = NULL;
    leap_conversation *conv = NULL;
    collector expected, c;
    leap_model_params p;
    int snaps, tmps, k, status;
    pid_t kids[2];

    if (argc == 4 && strcmp(argv[1], "--child") == 0) return child(argv[2], atoi(argv[3]));
    CHECK(mkdtemp(root) != NULL);
    leap_model_params_init(&p, sizeof p);
    CHECK(p.cache_enabled == 0);
    CHECK(p.cache_max_entries_disk == 4096 && p.cache_max_entries_memory == 256);
    CHECK(p.cache_max_bytes_memory == (int64_t)512 << 20 && p.cache_disk_disabled == 0);

    /* Uncached reference, then a first launch (miss, writes) and a second one (restores from disk). */
    CHECK_OK(load(NULL, 0, &plain));
    CHECK_OK(leap_conversation_create(plain, SYSTEM, &conv));
    CHECK_OK(turn(conv, "What is two plus two?", &expected));
    leap_conversation_free(conv);
    CHECK_OK(load(root, 4096, &first));
    CHECK_OK(leap_conversation_create(first, SYSTEM, &conv));
    CHECK_OK(turn(conv, "What is two plus two?", &c));
    CHECK(c.stats.cached_prompt_tokens == 0);
    CHECK(strcmp(c.text, expected.text) == 0);
    leap_conversation_free(conv);
    CHECK_OK(leap_model_cache_flush(first));
    leap_model_free(first);
    count_files(root, &snaps, &tmps);
    CHECK(snaps == 1 && tmps == 0);
    CHECK_OK(load(root, 4096, &second));
    CHECK_OK(leap_conversation_create(second, SYSTEM, &conv));
    CHECK_OK(turn(conv, "What is two plus two?", &c));
    CHECK(c.stats.cached_prompt_tokens > 20);
    CHECK(c.stats.cached_prompt_tokens + c.stats.prompt_tokens == expected.stats.prompt_tokens);
    CHECK(strcmp(c.text, expected.text) == 0);

    /* Explicit state files: save, restore into a conversation of the same history, refuse a damaged one. */
    snprintf(state, sizeof state, "%s/state.snap", root);
    snprintf(damaged, sizeof damaged, "%s/damaged.snap", root);
    CHECK_OK(leap_conversation_save_state(conv, state));
    {
        FILE *in = fopen(state, "rb"), *out = fopen(damaged, "wb");
        int ch, i = 0;
        CHECK(in != NULL && out != NULL);
        while (in && out && (ch = fgetc(in)) != EOF) fputc(i++ == 300 ? ch ^ 4 : ch, out);
        if (in) fclose(in);
        if (out) fclose(out);
    }
    leap_conversation_free(conv);
    CHECK_OK(leap_conversation_create(plain, SYSTEM, &conv));
    CHECK_STATUS(leap_conversation_save_state(conv, state), LEAP_ERR_INVALID_ARGUMENT);  /* nothing evaluated */
    CHECK_STATUS(leap_conversation_load_state(conv, damaged), LEAP_ERR_FORMAT);
    /* A sparse 1 TiB file is refused by its size, without reading (or allocating) it. */
    {
        FILE *huge = fopen(damaged, "wb");
        if (huge) fclose(huge);
        CHECK(truncate(damaged, (off_t)1 << 40) == 0);
        CHECK_STATUS(leap_conversation_load_state(conv, damaged), LEAP_ERR_FORMAT);
        CHECK_ERROR_MENTIONS("is larger than any saved state");
    }
    CHECK_STATUS(leap_conversation_load_state(conv, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_conversation_load_state(NULL, state), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_OK(leap_conversation_load_state(conv, state));
    CHECK_OK(turn(conv, "What is two plus two?", &c));
    CHECK(c.stats.cached_prompt_tokens > 20);
    CHECK(strcmp(c.text, expected.text) == 0);
    leap_conversation_free(conv);

    /* Two threads, each with its conversation of one cached model, at once: the system prompt of the
     * first launch is restored (a memory hit), a second system prompt is computed and written by the
     * background writer while the other thread reads; both answer as the uncached model. Then both save
     * their states to one file at once, 100 times each: every save succeeds and the file is one whole
     * state (each save writes its own temporary file). */
    {
        threaded_turn t[2];
        pthread_t th[2];
        pthread_barrier_t together;
        collector other;
        const char *system2 = "You are a terse assistant. Reply in as few words as you can, always.";
        CHECK_OK(leap_conversation_create(plain, system2, &conv));
        CHECK_OK(turn(conv, "What is two plus two?", &other));
        leap_conversation_free(conv);
        CHECK(pthread_barrier_init(&together, NULL, 2) == 0);
        for (k = 0; k < 2; k++) {
            memset(&t[k], 0, sizeof t[k]);
            t[k].model = second;
            t[k].system = k == 0 ? SYSTEM : system2;
            t[k].together = &together;
            t[k].state_path = state;
            CHECK(pthread_create(&th[k], NULL, run_threaded_turn, &t[k]) == 0);
        }
        for (k = 0; k < 2; k++) {
            pthread_join(th[k], NULL);
            CHECK_OK(t[k].status);
            CHECK(t[k].c.completes == 1);
            CHECK(t[k].save_failures == 0);
        }
        pthread_barrier_destroy(&together);
        CHECK(strcmp(t[0].c.text, expected.text) == 0 && t[0].c.stats.cached_prompt_tokens > 20);
        CHECK(strcmp(t[1].c.text, other.text) == 0);
        CHECK_OK(leap_model_cache_flush(second));
        CHECK_OK(leap_conversation_create(second, NULL, &conv));
        CHECK_OK(leap_conversation_load_state(conv, state));
        leap_conversation_free(conv);
    }

    /* Two processes (this program again) writing one folder at once, with a cap of 3 snapshots: both
     * finish, and the folder ends within the cap with no temporary file. */
    for (k = 0; k < 2; k++) {
        char order[2] = {(char)('0' + k), 0};
        char *args[5];
        args[0] = argv[0];
        args[1] = "--child";
        args[2] = root;
        args[3] = order;
        args[4] = NULL;
        kids[k] = -1;
        CHECK(posix_spawn(&kids[k], "/proc/self/exe", NULL, NULL, args, environ) == 0);
    }
    for (k = 0; k < 2; k++) {
        CHECK(kids[k] > 0 && waitpid(kids[k], &status, 0) == kids[k]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    count_files(root, &snaps, &tmps);
    CHECK(snaps >= 1 && snaps <= 3);
    CHECK(tmps == 0);

    /* Folders that cannot be used. */
    {
        char blocker[1100], below[1200];
        leap_model *m = NULL;
        FILE *f;
        snprintf(blocker, sizeof blocker, "%s/file", root);
        snprintf(below, sizeof below, "%s/cache", blocker);
        f = fopen(blocker, "wb");
        if (f) fclose(f);
        CHECK_STATUS(load(below, 4096, &m), LEAP_ERR_IO);
        CHECK_ERROR_MENTIONS(blocker);
        CHECK(m == NULL);
        CHECK_STATUS(load(root, 0, &m), LEAP_ERR_INVALID_ARGUMENT);
        leap_model_params_init(&p, sizeof p);
        p.cache_enabled = 1;   /* no path, disk on */
        CHECK_STATUS(leap_model_load(MODEL, &p, &m), LEAP_ERR_INVALID_ARGUMENT);
        p.cache_disk_disabled = 1;
        CHECK_OK(leap_model_load(MODEL, &p, &m));
        leap_model_free(m);
    }
    CHECK_OK(leap_model_cache_flush(plain));   /* no cache: nothing to wait for */
    CHECK_STATUS(leap_model_cache_flush(NULL), LEAP_ERR_INVALID_ARGUMENT);
    leap_model_free(second);
    leap_model_free(plain);
    {
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        CHECK(system(cmd) == 0);
    }
    return CHECK_SUMMARY("test_prompt_cache");
}
