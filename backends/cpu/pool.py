"""The thread pool generated CPU kernels run their parallel loops on (C text).

Why not OpenMP's ``parallel for``: every OpenMP region ends in a barrier that waits until
each thread of the team has *arrived*, so when another process holds a core, a thread
that was descheduled holds up the whole region even if it took no iteration; with a
busy process beside it a kernel of 7 regions ran 2.5x slower on 2 threads than on one
(benchmarks/halide/compare.py, nb). Here, as in Halide's runtime, the caller publishes
the loop, takes iterations itself, and waits only for iterations that some thread has
taken and not finished; a worker that wakes late finds nothing left and goes back to
sleep.

Each thread starts on its own share of the iterations, a range of consecutive ones
(thread k of T: the k-th T-th), and takes them a few at a time; when its share is done it
takes what is left of the others'. So each thread walks through memory in one direction,
as the hardware prefetchers and the DRAM pages like, where taking the next iteration of
the whole loop interleaved the rows of the two threads; and a thread descheduled by
another process still holds up at most one take. The papers' 8 pipelines, each kernel's C
entry timed interleaved with Halide's realize into the same preallocated arrays on a
2-core Zen 5, one share per thread against one shared counter, ratio to Halide's time
(two runs): cvtColor 0.97/0.98 -> 0.94/0.90, heat2D 0.99/1.02 -> 0.82/0.83, conv2D
1.03/1.02 -> 0.89/0.88, nb 1.03/0.99 -> 0.68/0.90, rgbyuv420 1.01/0.99 -> 0.94/0.91;
gaussian, blurxy and warpAffine the same within the noise.

A take starts at one iteration and doubles while takes run shorter than 4 us (halves
when one runs over 16 us), so that a loop of tiny iterations does not pay an atomic add
per iteration, nor a loop of long ones wait at its end for a take of many; each thread
counts what it finished on its own cache line. A thread takes at most half of what is
left of a share, so that one that has run out steals no more than the owner has left.
On a 2-core Xeon, the same schedules, against one iteration per take counted on one
shared counter (interleaved in one process into the same outputs, best of 15, several
runs): jacobi1d (100 steps of 400000 points) 0.45-0.49x the time, stencil_chain
0.80-0.92, atax 0.88-0.90, heat2D 0.95; the others within the runs' noise (mttkrp's,
100 loops of 8 iterations, spread 0.93-1.27 between runs, as much as from aligning the
shares alone). Taking as many iterations as the take before while stealing, mttkrp ran
1.09-1.18x: the thread that stole took the owner's next iterations at once.

The caller waits for those last iterations spinning while they progress (at most 50 us
without one ending), then asleep on a condition variable that the thread that sees the
last one finished signals. A worker descheduled in the middle of an iteration by another process
resumes only when a core frees up; a caller that kept spinning (it used to
``sched_yield``) kept its core busy, so the scheduler had no idle core to move the worker
to, and the call waited for a whole time slice. Beside a busy process (``--busy``, three
interleaved runs each, median ratio to Halide): heat2D 1.51, 0.91, 1.07 -> 0.71, 0.97,
0.76; gaussian 0.88, 1.16, 0.98 -> 0.70, 0.65, 0.86; blurxy 0.55, 1.11, 0.98 -> 1.11,
0.69, 1.00; our spread (median over best) 16-136% -> 9-60%. Halide's callers sleep too.

After a loop a worker spins up to 100 us for the next one before it sleeps: a
kernel's loops follow each other within microseconds, and a wake-up through the
condition variable arrives tens of microseconds late (half of a 1-ms kernel's two-way
loop). Workers are started on first use (one fewer than the usable cores, or
``MIDDLEEND_NUM_THREADS``/``OMP_NUM_THREADS`` - 1), and exit after 2 s idle.

Each loop body is outlined by the printer into ``static void f(void *ctx, int64_t i)``;
a loop that starts while another one of the same library is running (a kernel called
from two Python threads) runs in its caller's thread, serially. After ``fork`` the child
starts with an empty pool.
"""

from __future__ import annotations

POOL_C = r"""
/* The parallel-loop runtime (see backends/cpu/pool.py). */
typedef void (*me_body_fn)(void *, int64_t);
/* One thread's share of a loop, [next, end): its next iteration (atomic), and the
   iterations that the thread starting on it has finished (atomic), on its own cache line. */
typedef struct { int64_t next, end, done; char pad[40]; } __attribute__((aligned(64))) me_share;
typedef struct me_job {
    me_body_fn fn;
    void *ctx;
    int64_t first, step, count;
    int refs;      /* the caller and the workers holding the job (atomic) */
    int arrived;   /* threads that came to work on it (atomic): the k-th takes share k */
    int shares;
    me_share share[];  /* consecutive ranges of iterations, one per thread */
} me_job;
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t finished;  /* a loop's last iteration is done (the caller may sleep) */
    me_job *job;
    uint64_t gen;
    int workers;
} me_pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
              NULL, 0, 0 };
static pthread_once_t me_pool_once = PTHREAD_ONCE_INIT;

static void me_pool_after_fork(void) {
    pthread_mutex_init(&me_pool.lock, NULL);
    pthread_cond_init(&me_pool.wake, NULL);
    pthread_cond_init(&me_pool.finished, NULL);
    me_pool.job = NULL;
    me_pool.workers = 0;
}
static void me_pool_init(void) { pthread_atfork(NULL, NULL, me_pool_after_fork); }

static int me_pool_threads(void) {
    const char *names[2] = { "MIDDLEEND_NUM_THREADS", "OMP_NUM_THREADS" };
    for (int k = 0; k < 2; k++) {
        const char *s = getenv(names[k]);
        if (s != NULL && atoi(s) > 0) return atoi(s);
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void me_job_release(me_job *j) {
    if (__atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL) == 0) free(j);
}

/* The iterations finished, over all threads. */
static int64_t me_job_done(const me_job *j) {
    int64_t d = 0;
    for (int s = 0; s < j->shares; s++)
        d += __atomic_load_n(&j->share[s].done, __ATOMIC_SEQ_CST);
    return d;
}

/* Its own share first, then what is left of the others'. It takes one iteration, then
   twice as many each time a take ran for less than ME_GRAIN_NS, and stops timing at the
   first that did not: a loop of tiny iterations pays two atomic adds per few
   microseconds of work, one of long ones a clock reading per thread, and a thread that
   is descheduled holds up at most one take, as long as one long iteration. The
   iterations finished are counted on the thread's own share's line (one counter for the
   whole loop, which every thread added to after every iteration, moved between the
   cores each time: atax's 2100 sums of 8 numbers ran 0.11 ms over 2 threads, 0.01 ms on
   one). Of the threads that find nothing left to take, the one that sees every
   iteration finished wakes the caller: each counts its last take before it reads the
   others' counts, so at least one of them sees them all. */
#define ME_GRAIN_NS 4000
static void me_job_work(me_job *j) {
    int k = __atomic_fetch_add(&j->arrived, 1, __ATOMIC_RELAXED) % j->shares;
    int64_t *mine = &j->share[k].done;
    int64_t grain = 1;  /* iterations per take */
    for (int t = 0; t < j->shares; t++) {
        me_share *s = &j->share[(k + t) % j->shares];
        for (;;) {
            /* at most half of what is left of the share: a thread that has run out of
               iterations of its own takes no more from another's than their owner has
               left to do, and a share's last iterations are taken one at a time */
            int64_t half = (s->end - __atomic_load_n(&s->next, __ATOMIC_RELAXED)) / 2;
            int64_t take = grain < half ? grain : half > 1 ? half : 1;
            int64_t i = __atomic_fetch_add(&s->next, take, __ATOMIC_RELAXED);
            if (i >= s->end) break;
            int64_t stop = i + take < s->end ? i + take : s->end;
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int64_t v = i; v < stop; v++) j->fn(j->ctx, j->first + v * j->step);
            __atomic_add_fetch(mine, stop - i, __ATOMIC_SEQ_CST);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            int64_t ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
            if (ns < ME_GRAIN_NS && take == grain)  /* (a take cut short says nothing) */
                grain *= 2;
            else if (ns > 4 * ME_GRAIN_NS && grain > 1)
                grain /= 2;
        }
    }
    if (me_job_done(j) == j->count) {
        pthread_mutex_lock(&me_pool.lock);  /* the caller may be asleep: wake it */
        pthread_cond_broadcast(&me_pool.finished);
        pthread_mutex_unlock(&me_pool.lock);
    }
}

/* Spin up to ns nanoseconds until load(word) != seen; 1 if it changed. A kernel's loops
   follow each other within microseconds, and a worker woken from its condition variable
   arrives tens of microseconds late, when the caller has often taken its iterations
   already; the last iterations of a loop mostly end within microseconds too. */
#define ME_SPIN_NS 100000
#define ME_FINISH_SPIN_NS 50000
static int64_t me_load_word(const void *word) {
    return __atomic_load_n((const int64_t *)word, __ATOMIC_ACQUIRE);
}
static int64_t me_load_done(const void *job) { return me_job_done((const me_job *)job); }
static int me_spin_while(int64_t (*load)(const void *), const void *word, int64_t seen,
                         long ns) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int k = 1;; k++) {
        if (load(word) != seen) return 1;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (k % 64 == 0) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) > ns)
                return 0;
        }
    }
}

static void *me_worker(void *arg) {
    uint64_t seen = (uint64_t)(uintptr_t)arg;
    pthread_mutex_lock(&me_pool.lock);
    for (;;) {
        if (me_pool.gen == seen) {
            pthread_mutex_unlock(&me_pool.lock);
            me_spin_while(me_load_word, &me_pool.gen, (int64_t)seen, ME_SPIN_NS);
            pthread_mutex_lock(&me_pool.lock);
        }
        while (me_pool.gen == seen) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 2;
            if (pthread_cond_timedwait(&me_pool.wake, &me_pool.lock, &until) != 0
                    && me_pool.gen == seen) {
                me_pool.workers--;  /* idle: give the thread back */
                pthread_mutex_unlock(&me_pool.lock);
                return NULL;
            }
        }
        seen = me_pool.gen;
        me_job *j = me_pool.job;
        if (j == NULL) continue;
        __atomic_add_fetch(&j->refs, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_unlock(&me_pool.lock);
        me_job_work(j);
        me_job_release(j);
        pthread_mutex_lock(&me_pool.lock);
    }
}

static void me_serial_for(int64_t first, int64_t count, int64_t step, me_body_fn fn,
                          void *ctx) {
    for (int64_t i = 0; i < count; i++) fn(ctx, first + i * step);
}

/* for (v = first; v <= last; v += step) fn(ctx, v), iterations spread over the pool. */
static void me_parallel_for(int64_t first, int64_t last, int64_t step, me_body_fn fn,
                            void *ctx) {
    if (last < first) return;
    int64_t count = (last - first) / step + 1;
    int want = me_pool_threads() - 1;
    if (count == 1 || want < 1) { me_serial_for(first, count, step, fn, ctx); return; }
    int shares = want + 1 < count ? want + 1 : (int)count;
    me_job *j = NULL;  /* the shares on lines of their own */
    if (posix_memalign((void **)&j, 64, sizeof *j + (size_t)shares * sizeof(me_share)))
        j = NULL;
    if (j == NULL) { me_serial_for(first, count, step, fn, ctx); return; }
    j->fn = fn; j->ctx = ctx; j->first = first; j->step = step; j->count = count;
    j->refs = 1; j->arrived = 0; j->shares = shares;
    for (int s = 0; s < shares; s++) {
        j->share[s].done = 0;
        j->share[s].next = count / shares * s + (s < count % shares ? s : count % shares);
        j->share[s].end = j->share[s].next + count / shares + (s < count % shares);
    }
    pthread_once(&me_pool_once, me_pool_init);
    pthread_mutex_lock(&me_pool.lock);
    if (me_pool.job != NULL) {  /* another loop of this library is running */
        pthread_mutex_unlock(&me_pool.lock);
        free(j);
        me_serial_for(first, count, step, fn, ctx);
        return;
    }
    me_pool.job = j;
    __atomic_add_fetch(&me_pool.gen, 1, __ATOMIC_RELEASE);  /* spinning workers read it */
    if (me_pool.workers < want) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        while (me_pool.workers < want) {
            pthread_t t;
            if (pthread_create(&t, &attr, me_worker, (void *)(uintptr_t)(me_pool.gen - 1)))
                break;  /* fewer threads: the caller does the rest */
            me_pool.workers++;
        }
        pthread_attr_destroy(&attr);
    }
    pthread_cond_broadcast(&me_pool.wake);
    pthread_mutex_unlock(&me_pool.lock);
    me_job_work(j);
    /* the iterations other threads took: spin a little, then sleep until the last ends */
    for (int64_t d; (d = me_job_done(j)) < count;)
        if (!me_spin_while(me_load_done, j, d, ME_FINISH_SPIN_NS)) break;
    pthread_mutex_lock(&me_pool.lock);
    while (me_job_done(j) < count)
        pthread_cond_wait(&me_pool.finished, &me_pool.lock);
    me_pool.job = NULL;
    pthread_mutex_unlock(&me_pool.lock);
    me_job_release(j);
}
"""

POOL_HEADERS = "#define _GNU_SOURCE\n#include <pthread.h>\n#include <sched.h>\n" \
               "#include <time.h>\n#include <unistd.h>\n"

__all__ = ["POOL_C", "POOL_HEADERS"]
