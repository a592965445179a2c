"""The measured single-precision FMA peak of this machine, the ceiling an sgemm is judged
against: every core runs independent chains of fused multiply-adds on vectors of the
widest width the compiler's ``-march=native`` reports (AVX-512: 16 floats, AVX/AVX2: 8,
else 4), built with the CPU backend's own compiler and flags (plus FMA contraction).

Why measured and not computed from a data sheet: these machines differ (AVX2 or AVX-512,
one or two FMA units, turbo under load), and the shared host may give us less than the
whole CPU; the measured figure is the peak a kernel can reach here, now.

    python benchmarks/peak.py            # prints GFLOP/s and the vector width used
"""

from __future__ import annotations

import ctypes
import time

import common  # noqa: F401  (sets up the import path)

from backends.cpu.build import compile_shared

_SOURCE = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#if defined(__AVX512F__)
#define ME_W 16
#elif defined(__AVX__)
#define ME_W 8
#else
#define ME_W 4
#endif
#define ME_CHAINS 12
typedef float me_vf __attribute__((vector_size(ME_W * 4)));

int me_peak_width(void) { return ME_W; }

typedef struct { long iters; float sink; } me_arg;

/* ME_CHAINS independent chains of fused multiply-adds, ``iters`` rounds. */
static void *me_chains(void *p) {
    me_arg *a = (me_arg *)p;
    me_vf acc[ME_CHAINS];
    me_vf mul, add;
    for (int l = 0; l < ME_W; l++) { mul[l] = 0.999999f; add[l] = 1e-7f; }
    for (int k = 0; k < ME_CHAINS; k++)
        for (int l = 0; l < ME_W; l++) acc[k][l] = (float)(k + l) * 1e-3f;
    for (long i = 0; i < a->iters; i++) {
        #pragma GCC unroll 12
        for (int k = 0; k < ME_CHAINS; k++) acc[k] = acc[k] * mul + add;
    }
    float s = 0.0f;
    for (int k = 0; k < ME_CHAINS; k++)
        for (int l = 0; l < ME_W; l++) s += acc[k][l];
    a->sink = s;
    return NULL;
}

/* One thread per usable core (at most 256), or only the caller's with ``one``; returns
   the flops done. The chains' sum goes to ``*sink``, read by the caller: without a use
   of it gcc removes the calling thread's share as dead code (it inlines me_chains). */
double me_peak(long iters, int one, float *sink) {
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    if (n > 256) n = 256;
    if (one) n = 1;
    pthread_t t[256];
    me_arg args[256];
    int started = 0;
    for (int k = 1; k < n; k++) {
        args[k].iters = iters;
        if (pthread_create(&t[k], NULL, me_chains, &args[k]) != 0) break;
        started = k;
    }
    args[0].iters = iters;
    me_chains(&args[0]);
    *sink = args[0].sink;
    for (int k = 1; k <= started; k++) {
        pthread_join(t[k], NULL);
        *sink += args[k].sink;
    }
    return 2.0 * ME_CHAINS * ME_W * (double)iters * (started + 1);
}
"""


def fma_peak(seconds: float = 0.3, reps: int = 5, one_core: bool = False
             ) -> tuple[float, int]:
    """(best GFLOP/s over ``reps`` runs of about ``seconds`` each, vector width in floats).
    ``one_core``: the calling thread alone, timed by its own CPU time, the ceiling of a
    single-thread CPU-time measurement (all cores' wall-clock figure divided by their
    number is too low on a busy machine: other processes take part of each core)."""
    lib = ctypes.CDLL(str(compile_shared(_SOURCE, fp_contract=True).path))
    lib.me_peak.restype = ctypes.c_double
    lib.me_peak.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
    clock = time.thread_time if one_core else time.perf_counter
    sink = ctypes.c_float()
    iters = 1_000_000
    t0 = clock()
    lib.me_peak(iters, int(one_core), ctypes.byref(sink))
    iters = max(1, int(iters * seconds / max(clock() - t0, 1e-6)))
    best = 0.0
    for _ in range(reps):
        t0 = clock()
        flops = lib.me_peak(iters, int(one_core), ctypes.byref(sink))
        best = max(best, flops / (clock() - t0) / 1e9)
    return best, int(lib.me_peak_width())


def main() -> None:
    g, w = fma_peak()
    print(f"FMA peak: {g:.1f} GFLOP/s (float32, {w}-lane vectors, all cores)")


if __name__ == "__main__":
    main()
