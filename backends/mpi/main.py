"""The MPI program around one rank's kernel: its runtime helpers and ``main``.

``main`` runs on every rank: it reads the params from the command line, rank 0 reads the
whole input arrays from the run directory and scatters them (the block of a distributed
buffer to its owner, the whole of any other to every rank), each rank runs the kernel on
its windows, and rank 0 gathers the outputs and writes them back. Any failure on any rank
prints ``middleend rank <r>: <what>`` and aborts the job, so the caller can say which rank
failed and why. The bytes each rank sent in sends and exchanges (not in the scatter and
the gather) are written to ``stats`` for the benchmarks.
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
static void me_file(const char *dir, const char *kind, int k, void *p, int64_t bytes, int w) {
    char path[4096], m[4200];
    snprintf(path, sizeof path, "%s/%s_%d.bin", dir, kind, k);
    FILE *f = fopen(path, w ? "wb" : "rb");
    if (!f) { snprintf(m, sizeof m, "cannot open %s", path); me_fail(m); }
    size_t n = bytes ? (w ? fwrite(p, 1, (size_t)bytes, f) : fread(p, 1, (size_t)bytes, f)) : 0;
    if (fclose(f) != 0 || (int64_t)n != bytes) {
        snprintf(m, sizeof m, "short %s on %s", w ? "write" : "read", path);
        me_fail(m);
    }
}
/* Blocks of a buffer seen as [outer][n][inner] elements of es bytes: rank q owns rows
   q*blk .. q*blk+blk-1, stored on q at local row `at(q)` of a local [outer][w][inner]. */
static void me_blocks(int scatter, char *g, char *l, int64_t es, int64_t outer, int64_t n,
                      int64_t inner, int64_t blk, int64_t w, int64_t lo_halo, int whole) {
    int nr;
    MPI_Comm_size(MPI_COMM_WORLD, &nr);
    for (int q = 0; q < nr; q++) {
        int64_t a = (int64_t)q * blk, b = a + blk < n ? a + blk : n;
        if (a >= b) continue;
        int64_t row = (b - a) * inner * es, at = whole ? a : lo_halo;
        if (me_rank_id != 0 && me_rank_id != q) continue;
        char *msg = (char *)malloc(outer * row > 0 ? (size_t)(outer * row) : 1);
        if (!msg) me_fail("out of memory scattering or gathering a buffer");
        if (scatter) {
            if (me_rank_id == 0)
                for (int64_t o = 0; o < outer; o++)
                    memcpy(msg + o * row, g + ((o * n + a) * inner) * es, (size_t)row);
            if (q != 0) {
                if (me_rank_id == 0) MPI_Send(msg, me_count(outer * row), MPI_BYTE, q, 1,
                                              MPI_COMM_WORLD);
                else MPI_Recv(msg, me_count(outer * row), MPI_BYTE, 0, 1, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE);
            }
            if (me_rank_id == q)
                for (int64_t o = 0; o < outer; o++)
                    memcpy(l + ((o * w + at) * inner) * es, msg + o * row, (size_t)row);
        } else {
            if (me_rank_id == q)
                for (int64_t o = 0; o < outer; o++)
                    memcpy(msg + o * row, l + ((o * w + at) * inner) * es, (size_t)row);
            if (q != 0) {
                if (me_rank_id == q) MPI_Send(msg, me_count(outer * row), MPI_BYTE, 0, 2,
                                              MPI_COMM_WORLD);
                else MPI_Recv(msg, me_count(outer * row), MPI_BYTE, q, 2, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE);
            }
            if (me_rank_id == 0)
                for (int64_t o = 0; o < outer; o++)
                    memcpy(g + ((o * n + a) * inner) * es, msg + o * row, (size_t)row);
        }
        free(msg);
    }
}
static void me_bcast(void *p, int64_t bytes) {
    char *c = (char *)p;
    while (bytes > 0) {
        int64_t n = bytes < (1LL << 30) ? bytes : (1LL << 30);
        MPI_Bcast(c, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        c += n;
        bytes -= n;
    }
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
    lines = ["int main(int argc, char **argv) {", *init,
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
                  f"    {c} *g_{b.name} = NULL;",
                  f"    if (l_{b.name} == NULL) me_fail(\"out of memory for {b.name}\");",
                  "    if (me_r == 0) {",
                  f"        g_{b.name} = ({c} *)calloc((size_t)({_count(b, 'd')}) + 1, "
                  f"sizeof({c}));",
                  f"        if (g_{b.name} == NULL) me_fail(\"out of memory for {b.name}\");"]
        if b.role in ("input", "inout"):
            lines.append(f"        me_file(me_dir, \"in\", {k}, g_{b.name}, "
                         f"({_count(b, 'd')}) * (int64_t)sizeof({c}), 0);")
        lines.append("    }")
        if b.role in ("input", "inout"):
            lines += _move(b, dist, scatter=True)
    call += [f"l_{b.name}" for b in args]
    lines.append(f"    int me_rc = me_{local.name}({', '.join(call)});")
    lines += ["    me_wait_sends();",
              "    if (me_rc == 1) me_fail(\"a data-dependent index was out of bounds\");",
              "    if (me_rc != 0) me_fail(\"out of memory in the kernel\");"]
    for k, b in enumerate(args):
        if b.role in ("output", "inout"):
            lines += _move(b, dist, scatter=False)
            c = b.dtype.c_name
            lines.append(f"    if (me_r == 0) me_file(me_dir, \"out\", {k}, g_{b.name}, "
                         f"({_count(b, 'd')}) * (int64_t)sizeof({c}), 1);")
    lines += [f"    int64_t me_sent[{R}];",
              "    MPI_Gather(&me_bytes_sent, 1, MPI_INT64_T, me_sent, 1, MPI_INT64_T, 0, "
              "MPI_COMM_WORLD);",
              "    if (me_r == 0) {",
              "        me_file(me_dir, \"stats\", 0, me_sent, (int64_t)sizeof(me_sent), 1);",
              "    }"]
    for b in args:
        lines += [f"    free(l_{b.name});", f"    free(g_{b.name});"]
    lines += ["    MPI_Finalize();", "    return 0;", "}", ""]
    return ("\n".join([THREADS, *lines]) if threads else "\n".join(lines))


def _move(b: BufferDecl, dist: Distribution, scatter: bool) -> list[str]:
    """Scatter (rank 0 -> owners / everyone) or gather (owners / rank 0 -> rank 0)."""
    c = b.dtype.c_name
    w = dist.windows.get(b.name)
    if w is None:
        if scatter:
            return [f"    if (me_r == 0) memcpy(l_{b.name}, g_{b.name}, (size_t)("
                    f"{_count(b, 'd')}) * sizeof({c}));",
                    f"    me_bcast(l_{b.name}, ({_count(b, 'd')}) * (int64_t)sizeof({c}));"]
        return [f"    if (me_r == 0) memcpy(g_{b.name}, l_{b.name}, (size_t)("
                f"{_count(b, 'd')}) * sizeof({c}));"]
    outer = " * ".join(["1LL"] + [f"d_{b.name}_{k}" for k in range(w.dim)])
    inner = " * ".join(["1LL"] + [f"d_{b.name}_{k}" for k in range(w.dim + 1, len(b.sizes))])
    blk = f"me_blk_{b.name}" if not w.whole else iexpr_c(w.block)
    return [f"    me_blocks({1 if scatter else 0}, (char *)g_{b.name}, (char *)l_{b.name}, "
            f"(int64_t)sizeof({c}), {outer}, d_{b.name}_{w.dim}, {inner}, {blk}, "
            f"ld_{b.name}_{w.dim}, {w.lo_halo}, {1 if w.whole else 0});"]
