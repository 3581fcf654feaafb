/* Persistent thread pool. A run publishes a job by bumping `generation`; workers spin on it for a short
 * while (a decoded token issues hundreds of small matmuls back to back) and then sleep on a futex.
 * Tasks are claimed from `claim` = (generation << 32 | next task) by compare-and-swap, so uneven tasks
 * balance themselves, a worker that wakes late cannot take a task of a later run, and the caller waits
 * only for claimed tasks: when other processes keep a worker off the CPU, the caller does its share.
 * Each thread that runs kernels (workers and callers) owns a scratch buffer for them (lk_scratch). */
#define _GNU_SOURCE
#include "lk_internal.h"
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax(void) { _mm_pause(); }
#elif defined(__aarch64__)
static inline void cpu_relax(void) { __asm__ volatile("yield"); }
#else
static inline void cpu_relax(void) { }
#endif

enum { SPIN_NS = 200 * 1000 }; /* spin this long after a job before sleeping */

struct lk_pool {
    int32_t n_threads; /* including the caller */
    pthread_t *threads;
    _Atomic uint32_t generation; /* bumped once per run (and at shutdown) */
    atomic_int sleepers;
    atomic_int stop;
    /* the current job (valid for the generation in `claim`) */
    lk_task_fn fn;
    void *ctx;
    _Atomic int32_t n_tasks;
    int isa; /* the caller's kernel path, applied on the workers */
    _Atomic uint64_t claim; /* generation << 32 | index of the next unclaimed task */
    atomic_int done_tasks;
    atomic_int busy; /* a run is in progress: a nested or concurrent run executes inline instead */
};

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t expected) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr) {
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

/* Claims and runs tasks of run `gen` until none is left (or a later run has started). */
static void run_tasks(lk_pool *p, uint32_t gen, int32_t thread) {
    uint64_t st = atomic_load(&p->claim);
    for (;;) {
        if ((uint32_t)(st >> 32) != gen) return;
        const uint32_t t = (uint32_t)st;
        /* n_tasks may belong to a later run; then claim was closed (or moved on) first and the CAS fails */
        if (t >= (uint32_t)atomic_load_explicit(&p->n_tasks, memory_order_relaxed)) return;
        if (!atomic_compare_exchange_weak(&p->claim, &st, st + 1)) continue;
        /* task t of run gen is ours: the run cannot finish (and the job cannot change) before we report */
        if (thread != 0 && p->isa != lk_get_isa()) lk_set_thread_isa(p->isa);
        p->fn(p->ctx, (int32_t)t, thread);
        atomic_fetch_add_explicit(&p->done_tasks, 1, memory_order_release);
        st = atomic_load(&p->claim);
    }
}

/* ---- per-thread scratch ---- */
/* This thread's buffer. A key destructor frees it when a caller's thread exits; workers free theirs as they
 * leave worker_main (at lk_pool_free). */
static _Thread_local void *scratch;
static _Thread_local size_t scratch_bytes;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_key_create(void) { scratch_key_ok = pthread_key_create(&scratch_key, free) == 0; }

void *lk_scratch(size_t bytes) {
    if (scratch && bytes <= scratch_bytes) return scratch;
    if (bytes > SIZE_MAX - 63) return NULL;
    pthread_once(&scratch_once, scratch_key_create);
    const size_t size = bytes ? (bytes + 63) / 64 * 64 : 64;
    void *p = aligned_alloc(64, size);
    if (!p) return NULL; /* the old buffer stays for smaller requests */
    free(scratch);
    scratch = p;
    scratch_bytes = size;
    if (scratch_key_ok) pthread_setspecific(scratch_key, p);
    return p;
}

static void scratch_release(void) {
    if (scratch_key_ok) pthread_setspecific(scratch_key, NULL);
    free(scratch);
    scratch = NULL;
    scratch_bytes = 0;
}

typedef struct { lk_pool *pool; int32_t index; } worker_arg;

static void *worker_main(void *varg) {
    worker_arg arg = *(worker_arg *)varg;
    free(varg);
    lk_pool *p = arg.pool;
    uint32_t seen = 0; /* the generation at creation: a run may start before this thread does */
    for (;;) {
        /* wait for a new generation: spin, then sleep */
        uint32_t g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g == seen) {
            const uint64_t t0 = now_ns();
            for (int i = 0;; i++) {
                cpu_relax();
                g = atomic_load_explicit(&p->generation, memory_order_acquire);
                if (g != seen) break;
                if ((i & 255) == 255 && now_ns() - t0 > SPIN_NS) {
                    atomic_fetch_add(&p->sleepers, 1);
                    /* seq_cst pairs with the runner's bump-then-check: one of us sees the other */
                    g = atomic_load(&p->generation);
                    if (g == seen) futex_wait(&p->generation, seen);
                    atomic_fetch_sub(&p->sleepers, 1);
                    g = atomic_load_explicit(&p->generation, memory_order_acquire);
                    if (g != seen) break;
                }
            }
        }
        seen = g;
        if (atomic_load(&p->stop)) break;
        run_tasks(p, g, arg.index);
    }
    scratch_release();
    return NULL;
}

lk_pool *lk_pool_create(int32_t n_threads) {
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 1024) n_threads = 1024;
    lk_pool *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->n_threads = n_threads;
    p->threads = calloc((size_t)n_threads, sizeof(pthread_t));
    if (!p->threads) { free(p); return NULL; }
    for (int32_t i = 1; i < n_threads; i++) {
        worker_arg *arg = malloc(sizeof(*arg));
        if (!arg || pthread_create(&p->threads[i], NULL, worker_main, (arg->pool = p, arg->index = i, arg)) != 0) {
            free(arg);
            p->n_threads = i; /* keep the workers that did start */
            break;
        }
    }
    return p;
}

void lk_pool_free(lk_pool *p) {
    if (!p) return;
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->generation, 1); /* claim keeps the old generation: nothing to run */
    futex_wake_all(&p->generation);
    for (int32_t i = 1; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    free(p->threads);
    free(p);
}

int32_t lk_pool_threads(const lk_pool *p) { return p ? p->n_threads : 1; }

int64_t lk_pool_worker_cpu_ns(const lk_pool *p) {
    if (!p) return 0;
    int64_t total = 0;
    for (int32_t i = 1; i < p->n_threads; i++) {
        clockid_t clock;
        struct timespec ts;
        if (pthread_getcpuclockid(p->threads[i], &clock) != 0 || clock_gettime(clock, &ts) != 0) continue;
        total += (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    return total;
}

void lk_pool_run(lk_pool *p, lk_task_fn fn, void *ctx, int32_t n_tasks) {
    if (n_tasks <= 0) return;
    int idle = 0;
    if (!p || p->n_threads == 1 || n_tasks == 1 || !atomic_compare_exchange_strong(&p->busy, &idle, 1)) {
        for (int32_t t = 0; t < n_tasks; t++) fn(ctx, t, 0);
        return;
    }
    /* Every task of the previous run is done, but a late worker may still hold claim = (old gen | n_old)
     * and compare it with n_tasks: close the old run first, so that such a worker's CAS fails instead of
     * claiming task n_old of the old generation against the new job (a phantom task that ran the new job
     * out of range and left done_tasks one too high: the caller then waited forever). */
    const uint32_t gen = atomic_load(&p->generation) + 1;
    atomic_store(&p->claim, (uint64_t)(gen - 1) << 32 | UINT32_MAX);
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->n_tasks, n_tasks, memory_order_relaxed);
    p->isa = lk_get_isa();
    atomic_store(&p->done_tasks, 0);
    atomic_store(&p->claim, (uint64_t)gen << 32);
    atomic_store(&p->generation, gen); /* seq_cst: publishes the job */
    if (atomic_load(&p->sleepers) > 0) futex_wake_all(&p->generation);
    run_tasks(p, gen, 0);
    for (int i = 0; atomic_load_explicit(&p->done_tasks, memory_order_acquire) != n_tasks; i++) {
        cpu_relax();
        if ((i & 1023) == 1023) sched_yield(); /* the worker running the last task may be descheduled */
    }
    atomic_store(&p->busy, 0);
}

int32_t lk_physical_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int32_t)n : 1;
    }
    /* count distinct (package, core) pairs among the CPUs we may run on */
    enum { MAX_CORES = 1024 };
    long keys[MAX_CORES];
    int n_keys = 0, n_cpus = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &set)) continue;
        n_cpus++;
        char path[128];
        long core = -1, pkg = 0;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
        FILE *f = fopen(path, "r");
        if (f) { if (fscanf(f, "%ld", &core) != 1) core = -1; fclose(f); }
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
        f = fopen(path, "r");
        if (f) { if (fscanf(f, "%ld", &pkg) != 1) pkg = 0; fclose(f); }
        if (core < 0) return n_cpus > 0 ? CPU_COUNT(&set) : 1; /* no topology: count logical CPUs */
        const long key = pkg * 1000000 + core;
        int found = 0;
        for (int i = 0; i < n_keys; i++) if (keys[i] == key) { found = 1; break; }
        if (!found && n_keys < MAX_CORES) keys[n_keys++] = key;
    }
    return n_keys > 0 ? n_keys : 1;
}
