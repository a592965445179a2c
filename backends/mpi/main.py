"""The MPI program around one rank's kernel: its runtime helpers and its two entry points.

The program is a shared object. ``me_main`` is ``main`` under ``mpiexec`` (through the
generic launcher of :mod:`backends.mpi.rootio`); ``me_inproc`` runs the same job inside
an MPI job that is already running (mpi4py), on the caller's communicator, with whole
arrays on the root scattered to the ranks and gathered back (MPI_Scatterv/Gatherv).

Under the launcher, every rank reads the params from the command line, reads
its part of the input arrays from the run directory's files (the block of a distributed
buffer it owns, the whole of any other), runs the kernel on its windows, and writes its
part of the outputs into the output files (its block of a distributed one; rank 0 the
whole of any other), in place: nothing is scattered or gathered through rank 0, which
used to cost more than the computation (benchmarks/mpi.py), unless a ``me.scatter`` /
``me.gather`` operation asks for it (its root then reads / writes the whole file, and
the operation moves the blocks where it is scheduled). The ranks must see the run
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
from middleend.ir.distribution import BLOCK_C, Distribution
from middleend.ir.loopast import BufferDecl, Program

from .local import RANK, lo_param, width_param, window_decl
from .rootio import root_io

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
/* the job's communicator: MPI_COMM_WORLD under the launcher, the caller's in a job that
   runs the kernel in-process (mpi4py) */
static MPI_Comm me_comm = MPI_COMM_NULL;
static int me_rank_id = 0;
static int me_zero_others = 1;
static int64_t me_bytes_sent = 0;
static MPI_Request *me_reqs = NULL;
static void **me_req_bufs = NULL;
static int me_nreqs = 0, me_capreqs = 0;
static void me_fail(const char *what) {
    fprintf(stderr, "middleend rank %d: %s\n", me_rank_id, what);
    fflush(stderr);
    MPI_Abort(me_comm == MPI_COMM_NULL ? MPI_COMM_WORLD : me_comm, 3);
    exit(3);
}
static void me_range_error(const char *loop, int64_t lo, int64_t hi) {
    char m[256];
    int n;
    MPI_Comm_size(me_comm, &n);
    snprintf(m, sizeof m, "distributed loop %s has iterations %lld..%lld, but the program "
             "runs on ranks 0..%d", loop, (long long)lo, (long long)hi, n - 1);
    me_fail(m);
}
static char me_err_text[320];
static int me_err_rank = -1;
static int me_in_job = 0;  /* 1: in a running job (me_inproc), 0: under the launcher */
/* the failure every rank agreed on in the last call (in a running job): rank and text */
const char *me_last_error(int *rank) {
    *rank = me_err_rank;
    return me_err_text;
}
/* A check every rank makes at the same point of a call: the lowest failing rank's message
   goes to every rank. In a running job each rank then returns it as the call's status (an
   exception on every rank, naming that rank, and the job goes on); under the launcher that
   rank aborts the job, as any failure does. Returns whether some rank failed. */
static int me_agree(int bad, const char *what) {
    int mine = bad ? me_rank_id : 1 << 30, first = 0;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, me_comm);
    if (first == 1 << 30) return 0;
    char m[320];
    memset(m, 0, sizeof m);
    if (me_rank_id == first) snprintf(m, sizeof m, "%s", what);
    MPI_Bcast(m, (int)sizeof m, MPI_CHAR, first, me_comm);
    if (!me_in_job) {
        if (me_rank_id == first) me_fail(m);
        MPI_Barrier(me_comm);  /* ended by the failing rank's abort */
    }
    me_err_rank = first;
    memcpy(me_err_text, m, sizeof m);
    return 1;
}
static int64_t me_nranks(void) {
    int n;
    MPI_Comm_size(me_comm, &n);
    return (int64_t)n;
}
/* ranks read at run time: a distributed loop reaches beyond the ranks' blocks */
static void me_blocks_error(const char *loop, int64_t lo, int64_t hi, int64_t blk) {
    char m[320];
    snprintf(m, sizeof m, "distributed loop %s has iterations %lld..%lld, beyond the blocks "
             "of %lld that %lld ranks own (0..%lld)", loop, (long long)lo, (long long)hi,
             (long long)blk, (long long)me_nranks(), (long long)(me_nranks() * blk - 1));
    me_fail(m);
}
static int me_count(int64_t bytes) {
    if (bytes < 0 || bytes > 2147483647LL) me_fail("a message of 2 GiB or more");
    return (int)bytes;
}
static void me_check_peer(int64_t peer, const char *op) {
    int n;
    MPI_Comm_size(me_comm, &n);
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
        MPI_Isend(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, me_comm,
                  &me_reqs[me_nreqs]);
        me_req_bufs[me_nreqs++] = msg;
        return;
    }
    if (mode == 1) MPI_Ssend(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, me_comm);
    else MPI_Send(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, me_comm);
    free(msg);
}
static void me_recv(void *msg, int64_t bytes, int64_t peer, int tag, const char *op) {
    MPI_Status st;
    int got;
    me_check_peer(peer, op);
    MPI_Probe((int)peer, tag, me_comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((int64_t)got != bytes) {
        char m[256];
        snprintf(m, sizeof m, "%s expected %lld bytes from rank %lld, its send has %d", op,
                 (long long)bytes, (long long)peer, got);
        me_fail(m);
    }
    MPI_Recv(msg, me_count(bytes), MPI_BYTE, (int)peer, tag, me_comm,
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
static int64_t me_min64(int64_t a, int64_t b) { return a < b ? a : b; }
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
    if (MPI_Comm_split_type(me_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)
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
    """``me_run_job`` (one call of ``program``, global shapes, running ``local`` on each rank)
    and its entry points ``me_main`` (under the launcher) and ``me_inproc`` (inside a
    running MPI job); ``threads``: the kernel runs parallel loops on the cpu thread pool
    (MPI is then initialised for threads of which only the main one calls it)."""
    R, P = dist.ranks, len(program.params)
    parts = [THREADS if threads else "", _job(program, local, dist, threads)]
    init = ["    int me_thr;",
            "    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &me_thr);"] if threads \
        else ["    MPI_Init(&argc, &argv);"]
    lines = ["int me_main(int argc, char **argv) {", "    double me_t[5];",
             "    me_t[0] = me_clock();", *init, "    me_comm = MPI_COMM_WORLD;",
             "    MPI_Comm_rank(me_comm, &me_rank_id);",
             f"    if (argc != {2 + P}) me_fail(\"usage: <program> <run directory> <{P} "
             "integer parameter(s)>\");"]
    if threads:
        lines.append("    if (me_thr < MPI_THREAD_FUNNELED) me_fail(\"this MPI does not allow "
                     "threads (MPI_THREAD_FUNNELED), which parallel loops need\");")
    lines += [f"    int64_t me_p[{P + 1}];",
              *(f"    me_p[{k}] = me_arg(argv[{2 + k}]);" for k in range(P)),
              *_sent_decl(dist), "    double me_phmax[4];",
              "    me_in_job = 0;",
              "    me_run_job(argv[1], NULL, me_p, me_t, me_sent, me_phmax);",
              "    if (me_rank_id == 0) {",
              "        me_whole(argv[1], \"stats\", 0, me_sent, me_sent_bytes, 1);",
              "        me_whole(argv[1], \"stats\", 1, me_phmax, (int64_t)sizeof(me_phmax), 1);",
              "    }", "    MPI_Finalize();", "    return 0;", "}", "",
              # in a running job: 10 MPI is not initialised, 11 the communicator's size is
              # not the ranks, 12 no MPI_THREAD_FUNNELED, 13 not the thread that initialised
              # zero_others: the other ranks' outputs are zeroed (each rank has its own
              # arrays); 0 when the ranks share the root's (a kept job's files)
              "int me_inproc(int64_t comm_f, const int64_t *me_p, void **arrays, "
              "double *phases, int64_t *sent, int zero_others) {",
              "    me_zero_others = zero_others;",
              "    double me_t[5];", "    me_t[0] = me_clock();",
              "    int me_ok = 0, me_n = 0;", "    MPI_Initialized(&me_ok);",
              "    if (!me_ok) return 10;", "    me_comm = MPI_Comm_f2c((MPI_Fint)comm_f);",
              "    MPI_Comm_size(me_comm, &me_n);",
              *([] if dist.runtime else [f"    if (me_n != {R}) return 11;"]),
              "    MPI_Comm_rank(me_comm, &me_rank_id);"]
    if threads:
        lines += ["    int me_thr = 0;", "    MPI_Query_thread(&me_thr);",
                  "    if (me_thr < MPI_THREAD_FUNNELED) return 12;",
                  "    MPI_Is_thread_main(&me_ok);", "    if (!me_ok) return 13;"]
    # 20: a failure every rank agreed on (me_last_error says which rank, and what)
    lines += ["    me_in_job = 1;", "    me_err_rank = -1;",
              "    return me_run_job(NULL, arrays, me_p, me_t, sent, phases);", "}", ""]
    return "\n".join([*parts, *lines])


def _job(program: Program, local: Program, dist: Distribution, threads: bool) -> str:
    """``me_run_job``: every rank's part of one call. Its data come from the run directory
    ``me_dir`` (each rank its own part) or, when that is NULL, from the root's whole
    arrays ``me_root`` (scattered and broadcast, and gathered back to them)."""
    R = dist.ranks
    lines = ["static int me_run_job(const char *me_dir, void **me_root, const int64_t *me_p, "
             "double *me_t, int64_t *me_sent, double *me_phmax) {",
             "    int me_r = me_rank_id, me_size;",
             "    MPI_Comm_size(me_comm, &me_size);",
             *([] if dist.runtime else [
                 f"    if (me_size != {R}) me_fail(\"this program was built for {R} ranks; "
                 f"run it with mpiexec -n {R}\");"]),
             "    const int me_here = me_root != NULL && me_r == 0;  /* the root's arrays */"]
    if threads:
        lines.append("    me_default_threads();")
    lines.append("    me_t[1] = me_clock();")
    for k, q in enumerate(program.params):
        lines.append(f"    const int64_t {ident('p_' + q, 'parameter')} = me_p[{k}];")
    lines.append(f"    const int64_t p_{RANK} = me_r;")
    args = list(program.arguments)
    for b in args:
        lines += ["    " + x for x in dims_lines(b)]
    call = [f"p_{q}" for q in program.params] + [f"p_{RANK}"]
    if dist.runtime:
        lines += _block_size(program, dist)
    for name in sorted(n for n, w in dist.windows.items() if not w.whole):
        w = dist.windows[name]
        lines += [f"    const int64_t me_blk_{name} = {iexpr_c(w.block)};",
                  f"    const int64_t p_{lo_param(name)} = p_{RANK} * me_blk_{name} - "
                  f"{w.lo_halo};",
                  f"    const int64_t p_{width_param(name)} = me_blk_{name} + "
                  f"{w.lo_halo + w.hi_halo};"]
        call += [f"p_{lo_param(name)}", f"p_{width_param(name)}"]
    if dist.runtime:
        call.append(BLOCK_C)
    moved = {(o.kind, o.buffer): o.root for o in dist.root_ops.values()}
    for k, b in enumerate(args):
        c = b.dtype.c_name
        w = dist.windows.get(b.name)
        lb = window_decl(b, w)
        root = moved.get(("scatter", b.name), moved.get(("gather", b.name)))
        if root is not None:
            lines += _root_copy(b, k, root, ("scatter", b.name) in moved)
        lines += ["    " + x for x in _local_dims(lb)]
        # the root's own array serves as its copy of a buffer that is not distributed
        mine = f"me_here ? ({c} *)me_root[{k}] : " if w is None else ""
        lines += [f"    {c} *l_{b.name} = {mine}({c} *)calloc((size_t)({_count(lb, 'ld')}) + 1, "
                  f"sizeof({c}));",
                  f"    if (l_{b.name} == NULL) me_fail(\"out of memory for {b.name}\");"]
        if b.role in ("input", "inout") and ("scatter", b.name) not in moved:
            lines += ["    if (me_dir != NULL) {", *("    " + x for x in _io(b, k, dist, False)),
                      "    } else {", *root_io(b, k, w, gather=False), "    }"]
    lines.append("    me_t[2] = me_clock();")
    call += [f"l_{b.name}" for b in args]
    lines.append(f"    int me_rc = me_{local.name}({', '.join(call)});")
    lines += ["    me_wait_sends();",
              "    int me_status = 0;",
              # every rank gets here: a failure becomes every rank's status in a job
              "    if (me_agree(me_rc != 0, me_rc == 1 ? \"a data-dependent index was out of "
              "bounds\" : \"out of memory in the kernel\")) {",
              "        me_status = 20;", "        goto me_free;", "    }",
              "    me_t[3] = me_clock();"]
    for k, b in enumerate(args):
        if b.role not in ("output", "inout"):
            continue
        root = moved.get(("gather", b.name))
        if root is not None:  # the gather operation brought it to the root's copy
            size = f"({_count(b, 'd')}) * (int64_t)sizeof({b.dtype.c_name})"
            lines += [f"    if (me_dir != NULL && me_r == {root}) me_whole(me_dir, \"out\", "
                      f"{k}, me_root_copy[{k}], {size}, 1);"]
        else:
            root = 0
            lines += ["    if (me_dir != NULL) {", *("    " + x for x in _io(b, k, dist, True)),
                      "    } else {", *root_io(b, k, dist.windows.get(b.name), gather=True),
                      "    }"]
        # in a running job, the outputs are the root's; the other ranks' are zeros
        lines.append(f"    if (me_root != NULL && me_zero_others && me_r != {root}) "
                     f"memset(me_root[{k}], 0, "
                     f"(size_t)({_count(b, 'd')}) * sizeof({b.dtype.c_name}));")
    lines += ["    me_t[4] = me_clock();",
              # each phase's longest time over the ranks, for the kernel's last_phases
              "    double me_ph[4] = {me_t[1] - me_t[0], me_t[2] - me_t[1], me_t[3] - me_t[2], "
              "me_t[4] - me_t[3]};",
              "    MPI_Allreduce(me_ph, me_phmax, 4, MPI_DOUBLE, MPI_MAX, me_comm);",
              "    MPI_Allgather(&me_bytes_sent, 1, MPI_INT64_T, me_sent, 1, MPI_INT64_T, "
              "me_comm);",
              "me_free:", "    me_bytes_sent = 0;"]
    for k, b in enumerate(args):
        keep = "if (!me_here) " if b.name not in dist.windows else ""
        lines.append(f"    {keep}free(l_{b.name});")
        if ("scatter", b.name) in moved or ("gather", b.name) in moved:
            lines += [f"    if (me_dir != NULL) free(me_root_copy[{k}]);",
                      f"    me_root_copy[{k}] = NULL;"]
    lines += ["    return me_status;", "}", ""]
    return "\n".join(lines)


def _sent_decl(dist: Distribution) -> list[str]:
    """``me_sent``: one count per rank, for the stats file (``me_sent_bytes`` long)."""
    if not dist.runtime:
        return [f"    int64_t me_sent[{dist.ranks}];",
                "    const int64_t me_sent_bytes = (int64_t)sizeof(me_sent);"]
    return ["    int me_nr = 1;", "    MPI_Comm_size(MPI_COMM_WORLD, &me_nr);",
            "    int64_t *me_sent = (int64_t *)calloc((size_t)me_nr, sizeof(int64_t));",
            "    if (me_sent == NULL) me_fail(\"out of memory\");",
            "    const int64_t me_sent_bytes = (int64_t)me_nr * (int64_t)sizeof(int64_t);"]


def _block_size(program: Program, dist: Distribution) -> list[str]:
    """Ranks read at run time: the block size of every window, the largest
    ceil(extent / ranks) of the distributed dims, checked against the halo that the
    exchanges with the neighbouring ranks need."""
    decls = {b.name: b for b in program.buffers}
    lines = [f"    int64_t {BLOCK_C} = 1;"]
    for name in sorted(dist.windows):
        w = dist.windows[name]
        ext = iexpr_c(decls[name].sizes[w.dim])
        lines.append(f"    {{ const int64_t me_e = {ext}; const int64_t me_b = (me_e + me_size "
                     f"- 1) / me_size; if (me_b > {BLOCK_C}) {BLOCK_C} = me_b; }}")
    need = dist.min_block
    if need > 1:
        lines += [f"    if ({BLOCK_C} < {need}) {{",
                  "        char me_m[320];",
                  "        snprintf(me_m, sizeof me_m, \"ranks at run time: on %d ranks the "
                  "blocks have %lld element(s) along the distributed dimension, fewer than "
                  f"the halo of {need} that the exchanges take from the neighbouring ranks; "
                  "run it on fewer ranks\", me_size, (long long)" + BLOCK_C + ");",
                  "        if (me_agree(1, me_m)) return 20;", "    }"]
    return lines


def _root_copy(b: BufferDecl, k: int, root: int, scatter: bool) -> list[str]:
    """The root's whole copy of argument ``k``, which a scatter or gather operation moves:
    in a running job, the root's own array; under the launcher, read from (or, for a
    gather, written to) the run directory's file whole by the root."""
    c = b.dtype.c_name
    n = f"({_count(b, 'd')})"
    lines = [f"    me_root_copy[{k}] = NULL;",
             f"    if (me_root != NULL && me_r == {root}) me_root_copy[{k}] = me_root[{k}];",
             f"    if (me_dir != NULL && me_r == {root}) {{",
             f"        me_root_copy[{k}] = calloc((size_t){n} + 1, sizeof({c}));",
             f"        if (me_root_copy[{k}] == NULL) me_fail(\"out of memory for the whole "
             f"{b.name}\");"]
    if scatter:
        lines.append(f"        me_whole(me_dir, \"in\", {k}, me_root_copy[{k}], {n} * "
                     f"(int64_t)sizeof({c}), 0);")
    return [*lines, "    }"]


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
