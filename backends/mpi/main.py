"""The MPI program around one rank's kernel: its runtime helpers and ``main``.

``main`` runs on every rank: it reads the params from the command line, each rank reads
its part of the input arrays from the run directory's files (the block of a distributed
buffer it owns, the whole of any other), runs the kernel on its windows, and writes its
part of the outputs into the output files (its block of a distributed one; rank 0 the
whole of any other), in place: nothing is scattered or gathered through rank 0, which
used to cost more than the computation (benchmarks/mpi.py). The ranks must see the run
directory: on this machine (the kernel's loopback launch) or a shared file system. Any
failure on any rank prints ``middleend rank <r>: <what>`` and aborts the job, so the
caller can say which rank failed and why. The bytes each rank sent in sends and exchanges
(``stats_0``) and the longest time a rank spent in each phase (``stats_1``: MPI start,
input, compute, output) are written for the kernel's ``last_bytes_sent`` and
``last_phases``.
"""

from __future__ import annotations

from backends.clike.cexpr import ident, iexpr_c
from backends.clike.cstmt import dims_lines
from middleend.ir.distribution import Distribution
from middleend.ir.loopast import BufferDecl, Program

from .local import RANK, lo_param, width_param, window_decl

RUNTIME = r"""
/* MPI runtime of the middle-end's mpi target. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
static int me_rank_id = 0;
static int64_t me_bytes_sent = 0;
static MPI_Request *me_reqs = NULL;
static void **me_req_bufs = NULL;
static int me_nreqs = 0, me_capreqs = 0;
static void me_fail(const char *what) {
    fprintf(stderr, "middleend rank %d: %s\n", me_rank_id, what);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}
static void me_range_error(const char *loop, int64_t lo, int64_t hi) {
    char m[256];
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    snprintf(m, sizeof m, "distributed loop %s has iterations %lld..%lld, but the program "
             "runs on ranks 0..%d", loop, (long long)lo, (long long)hi, n - 1);
    me_fail(m);
}
static int me_count(int64_t bytes) {
    if (bytes < 0 || bytes > 2147483647LL) me_fail("a message of 2 GiB or more");
    return (int)bytes;
}
static void me_check_peer(int64_t peer, const char *op) {
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (peer < 0 || peer >= n) {
        char m[256];
        snprintf(m, sizeof m, "%s names rank %lld, which does not exist (ranks 0..%d)", op,
                 (long long)peer, n - 1);
        me_fail(m);
    }
}
/* mode 0: standard (MPI_Send), 1: synchronous (MPI_Ssend), 2: asynchronous (MPI_Isend; the
   message is freed once the send completes, at me_wait_sends) */
static void me_send(void *msg, int64_t bytes, int64_t peer, int tag, int mode, const char *op) {
    me_check_peer(peer, op);
    me_bytes_sent += bytes;
    if (mode == 2) {
        if (me_nreqs == me_capreqs) {
            me_capreqs = me_capreqs ? 2 * me_capreqs : 16;
            me_reqs = (MPI_Request *)realloc(me_reqs, me_capreqs * sizeof(MPI_Request));
            me_req_bufs = (void **)realloc(me_req_bufs, me_capreqs * sizeof(void *));
            if (!me_reqs || !me_req_bufs) me_fail("out of memory for pending sends");
        }
        MPI_Isend(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, MPI_COMM_WORLD,
                  &me_reqs[me_nreqs]);
        me_req_bufs[me_nreqs++] = msg;
        return;
    }
    if (mode == 1) MPI_Ssend(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, MPI_COMM_WORLD);
    else MPI_Send(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, MPI_COMM_WORLD);
    free(msg);
}
static void me_recv(void *msg, int64_t bytes, int64_t peer, int tag, const char *op) {
    MPI_Status st;
    int got;
    me_check_peer(peer, op);
    MPI_Probe((int)peer, tag, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((int64_t)got != bytes) {
        char m[256];
        snprintf(m, sizeof m, "%s expected %lld bytes from rank %lld, its send has %d", op,
                 (long long)bytes, (long long)peer, got);
        me_fail(m);
    }
    MPI_Recv(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
}
static void me_wait_sends(void) {
    if (me_nreqs) MPI_Waitall(me_nreqs, me_reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < me_nreqs; k++) free(me_req_bufs[k]);
    me_nreqs = 0;
}
static int64_t me_arg(const char *s) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == 0 || *end != 0) me_fail("a parameter on the command line is not an integer");
    return (int64_t)v;
}
/* The run directory's files: in_<k>.bin / out_<k>.bin hold argument k whole, row-major.
   Every rank reads and writes its own part there (the ranks share this machine, or a
   file system), so nothing is scattered or gathered through rank 0. */
static int me_open(const char *dir, const char *kind, int k, int w, char *path, size_t n) {
    char m[4200];
    snprintf(path, n, "%s/%s_%d.bin", dir, kind, k);
    int fd = open(path, w ? O_WRONLY | O_CREAT : O_RDONLY, 0600);
    if (fd < 0) { snprintf(m, sizeof m, "cannot open %s", path); me_fail(m); }
    return fd;
}
static void me_rw(int fd, char *p, int64_t bytes, int64_t at, int w, const char *path) {
    char m[4200];
    while (bytes > 0) {
        size_t n = bytes < (1LL << 30) ? (size_t)bytes : (size_t)1 << 30;
        ssize_t got = w ? pwrite(fd, p, n, (off_t)at) : pread(fd, p, n, (off_t)at);
        if (got <= 0) {
            snprintf(m, sizeof m, "short %s on %s", w ? "write" : "read", path);
            me_fail(m);
        }
        p += got; at += got; bytes -= got;
    }
}
static void me_close(int fd, const char *path) {
    char m[4200];
    if (close(fd) != 0) { snprintf(m, sizeof m, "cannot close %s", path); me_fail(m); }
}
/* the whole of argument k (bytes bytes) from / to its file */
static void me_whole(const char *dir, const char *kind, int k, void *p, int64_t bytes, int w) {
    char path[4096];
    int fd = me_open(dir, kind, k, w, path, sizeof path);
    me_rw(fd, (char *)p, bytes, 0, w, path);
    me_close(fd, path);
}
/* This rank's block of a distributed argument seen as [outer][n][inner] elements of es
   bytes: rows r*blk .. r*blk+blk-1 of the file, at local row `at` of [outer][lw][inner]. */
static void me_block(const char *dir, const char *kind, int k, char *l, int64_t es,
                     int64_t outer, int64_t n, int64_t inner, int64_t blk, int64_t lw,
                     int64_t lo_halo, int whole, int w) {
    int64_t a = (int64_t)me_rank_id * blk, b = a + blk < n ? a + blk : n;
    if (a >= b) return;
    int64_t row = (b - a) * inner * es, at = whole ? a : lo_halo;
    char path[4096];
    int fd = me_open(dir, kind, k, w, path, sizeof path);
    for (int64_t o = 0; o < outer; o++)
        me_rw(fd, l + ((o * lw + at) * inner) * es, row, ((o * n + a) * inner) * es, w, path);
    me_close(fd, path);
}
static double me_clock(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
"""


def _count(b: BufferDecl, prefix: str) -> str:
    out = "1LL"
    for k in range(len(b.sizes)):
        out = f"{out} * {prefix}_{b.name}_{k}"
    return out


def _local_dims(b: BufferDecl) -> list[str]:
    """``ld_<b>_<k>``: the sizes of one rank's copy of ``b``."""
    return [f"const int64_t ld_{b.name}_{k} = me_dim({iexpr_c(s)});"
            for k, s in enumerate(b.sizes)]


THREADS = r"""
/* The threads of the cpu pool each rank may use, unless MIDDLEEND_NUM_THREADS or
   OMP_NUM_THREADS says: this process's cores shared by the ranks on this node. */
static void me_default_threads(void) {
    if (getenv("MIDDLEEND_NUM_THREADS") != NULL || getenv("OMP_NUM_THREADS") != NULL) return;
    MPI_Comm node;
    int local = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)
            == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    cpu_set_t set;
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    char v[32];
    snprintf(v, sizeof v, "%d", cores / local > 1 ? cores / local : 1);
    setenv("MIDDLEEND_NUM_THREADS", v, 1);
}
"""


def generate_main(program: Program, local: Program, dist: Distribution,
                  threads: bool = False) -> str:
    """``main`` for ``program`` (global shapes) running ``local`` on each rank;
    ``threads``: the kernel runs parallel loops on the cpu thread pool (MPI is then
    initialised for threads of which only the main one calls it)."""
    R = dist.ranks
    init = ["    int me_thr;",
            "    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &me_thr);"] if threads \
        else ["    MPI_Init(&argc, &argv);"]
    lines = ["int main(int argc, char **argv) {", "    double me_t[5];",
             "    me_t[0] = me_clock();", *init,
             "    int me_r, me_size;", "    MPI_Comm_rank(MPI_COMM_WORLD, &me_r);",
             "    MPI_Comm_size(MPI_COMM_WORLD, &me_size);", "    me_rank_id = me_r;",
             f"    if (me_size != {R}) me_fail(\"this program was built for {R} ranks; run it "
             f"with mpiexec -n {R}\");",
             f"    if (argc != {2 + len(program.params)}) me_fail(\"usage: <program> <run "
             f"directory> <{len(program.params)} integer parameter(s)>\");",
             "    const char *me_dir = argv[1];"]
    if threads:
        lines += ["    if (me_thr < MPI_THREAD_FUNNELED) me_fail(\"this MPI does not allow "
                  "threads (MPI_THREAD_FUNNELED), which parallel loops need\");",
                  "    me_default_threads();"]
    lines.append("    me_t[1] = me_clock();")
    for k, q in enumerate(program.params):
        lines.append(f"    const int64_t {ident('p_' + q, 'parameter')} = me_arg(argv[{2 + k}]);")
    lines.append(f"    const int64_t p_{RANK} = me_r;")
    args = list(program.arguments)
    for b in args:
        lines += ["    " + x for x in dims_lines(b)]
    call = [f"p_{q}" for q in program.params] + [f"p_{RANK}"]
    for name in sorted(n for n, w in dist.windows.items() if not w.whole):
        w = dist.windows[name]
        lines += [f"    const int64_t me_blk_{name} = {iexpr_c(w.block)};",
                  f"    const int64_t p_{lo_param(name)} = p_{RANK} * me_blk_{name} - "
                  f"{w.lo_halo};",
                  f"    const int64_t p_{width_param(name)} = me_blk_{name} + "
                  f"{w.lo_halo + w.hi_halo};"]
        call += [f"p_{lo_param(name)}", f"p_{width_param(name)}"]
    for k, b in enumerate(args):
        c = b.dtype.c_name
        lb = window_decl(b, dist.windows.get(b.name))
        lines += ["    " + x for x in _local_dims(lb)]
        lines += [f"    {c} *l_{b.name} = ({c} *)calloc((size_t)({_count(lb, 'ld')}) + 1, "
                  f"sizeof({c}));",
                  f"    if (l_{b.name} == NULL) me_fail(\"out of memory for {b.name}\");"]
        if b.role in ("input", "inout"):
            lines += _io(b, k, dist, write=False)
    lines.append("    me_t[2] = me_clock();")
    call += [f"l_{b.name}" for b in args]
    lines.append(f"    int me_rc = me_{local.name}({', '.join(call)});")
    lines += ["    me_wait_sends();",
              "    if (me_rc == 1) me_fail(\"a data-dependent index was out of bounds\");",
              "    if (me_rc != 0) me_fail(\"out of memory in the kernel\");",
              "    me_t[3] = me_clock();"]
    for k, b in enumerate(args):
        if b.role in ("output", "inout"):
            lines += _io(b, k, dist, write=True)
    lines += ["    me_t[4] = me_clock();",
              # each phase's longest time over the ranks, for the kernel's last_phases
              "    double me_ph[4] = {me_t[1] - me_t[0], me_t[2] - me_t[1], me_t[3] - me_t[2], "
              "me_t[4] - me_t[3]}, me_phmax[4];",
              "    MPI_Reduce(me_ph, me_phmax, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);",
              f"    int64_t me_sent[{R}];",
              "    MPI_Gather(&me_bytes_sent, 1, MPI_INT64_T, me_sent, 1, MPI_INT64_T, 0, "
              "MPI_COMM_WORLD);",
              "    if (me_r == 0) {",
              "        me_whole(me_dir, \"stats\", 0, me_sent, (int64_t)sizeof(me_sent), 1);",
              "        me_whole(me_dir, \"stats\", 1, me_phmax, (int64_t)sizeof(me_phmax), 1);",
              "    }"]
    lines += [f"    free(l_{b.name});" for b in args]
    lines += ["    MPI_Finalize();", "    return 0;", "}", ""]
    return ("\n".join([THREADS, *lines]) if threads else "\n".join(lines))


def _io(b: BufferDecl, k: int, dist: Distribution, write: bool) -> list[str]:
    """Argument ``k`` between the run directory and this rank: a distributed one, the
    rank's block (every rank its own); any other, whole (read by every rank, written by
    rank 0, whose copy is the result)."""
    c = b.dtype.c_name
    kind = "out" if write else "in"
    w = dist.windows.get(b.name)
    if w is None:
        guard = "if (me_r == 0) " if write else ""
        return [f"    {guard}me_whole(me_dir, \"{kind}\", {k}, l_{b.name}, "
                f"({_count(b, 'd')}) * (int64_t)sizeof({c}), {int(write)});"]
    outer = " * ".join(["1LL"] + [f"d_{b.name}_{q}" for q in range(w.dim)])
    inner = " * ".join(["1LL"] + [f"d_{b.name}_{q}" for q in range(w.dim + 1, len(b.sizes))])
    blk = f"me_blk_{b.name}" if not w.whole else iexpr_c(w.block)
    return [f"    me_block(me_dir, \"{kind}\", {k}, (char *)l_{b.name}, (int64_t)sizeof({c}), "
            f"{outer}, d_{b.name}_{w.dim}, {inner}, {blk}, ld_{b.name}_{w.dim}, {w.lo_halo}, "
            f"{int(w.whole)}, {int(write)});"]
