"""Whole arrays on a root rank, and the launcher.

When the kernel runs inside an MPI job that is already running (mpi4py), the caller's
arrays are whole numpy arrays on the root (rank 0 of its communicator): each rank's block
of a distributed buffer is scattered from them and gathered back to them with
``MPI_Scatterv`` / ``MPI_Gatherv`` (uneven blocks: the last ranks may hold fewer rows, or
none), and a buffer that is not distributed is broadcast (the root computes in its own
array, so nothing is gathered). A block along a dimension that is not the first is a
strided set of rows: one MPI datatype (a vector of ``outer`` rows, resized to one row)
describes it on both sides, so nothing is packed by hand.

Under ``mpiexec`` the program is the same shared object, run by a generic launcher
(:data:`LAUNCHER`) that loads it and calls its ``me_main``: one build serves both ways of
running it.
"""

from __future__ import annotations

from backends.clike.cexpr import iexpr_c
from middleend.ir.distribution import Window
from middleend.ir.loopast import BufferDecl

ROOT_IO = r"""
/* a buffer that is not distributed: the root's copy to every rank (in pieces under 2 GiB) */
static void me_bcast(char *p, int64_t bytes) {
    while (bytes > 0) {
        int n = bytes > (1LL << 30) ? 1 << 30 : (int)bytes;
        MPI_Bcast(p, n, MPI_BYTE, 0, me_comm);
        p += n;
        bytes -= n;
    }
}
/* A distributed argument seen as [outer][n][inner] elements of es bytes: rows r*blk ..
   r*blk+blk-1 of the whole array g on rank root are rank r's block, at local row `at` of
   its window l ([outer][lw][inner]). Scattered from the root (gather 0) or gathered to
   it. */
static void me_blocks_root(char *g, char *l, int64_t es, int64_t outer, int64_t n,
                           int64_t inner, int64_t blk, int64_t lw, int64_t lo_halo,
                           int whole, int gather, int root) {
    int size;
    MPI_Comm_size(me_comm, &size);
    int64_t row = inner * es;
    if (row == 0 || outer == 0 || n == 0) return;
    MPI_Datatype unit, gv, gt, lv, lt;
    MPI_Type_contiguous(me_count(row), MPI_BYTE, &unit);
    MPI_Type_create_hvector(me_count(outer), 1, (MPI_Aint)(n * row), unit, &gv);
    MPI_Type_create_resized(gv, 0, (MPI_Aint)row, &gt);
    MPI_Type_create_hvector(me_count(outer), 1, (MPI_Aint)(lw * row), unit, &lv);
    MPI_Type_create_resized(lv, 0, (MPI_Aint)row, &lt);
    MPI_Type_commit(&gt);
    MPI_Type_commit(&lt);
    int *cnt = (int *)malloc((size_t)size * sizeof(int));
    int *dsp = (int *)malloc((size_t)size * sizeof(int));
    if (!cnt || !dsp) me_fail("out of memory for a scatter or gather");
    for (int r = 0; r < size; r++) {
        int64_t a = (int64_t)r * blk, b = me_min64(a + blk, n);
        cnt[r] = a < b ? me_count(b - a) : 0;
        dsp[r] = a < n ? me_count(a) : 0;
    }
    int64_t a = (int64_t)me_rank_id * blk;
    char *mine = l + (whole ? (a < n ? a : 0) : lo_halo) * row;
    if (gather)
        MPI_Gatherv(mine, cnt[me_rank_id], lt, g, cnt, dsp, gt, root, me_comm);
    else
        MPI_Scatterv(g, cnt, dsp, gt, mine, cnt[me_rank_id], lt, root, me_comm);
    free(cnt);
    free(dsp);
    MPI_Type_free(&lt);
    MPI_Type_free(&gt);
    MPI_Type_free(&lv);
    MPI_Type_free(&gv);
    MPI_Type_free(&unit);
}
"""


def root_io(b: BufferDecl, k: int, w: Window | None, gather: bool) -> list[str]:
    """Argument ``k`` between the root's whole array and this rank (see the module)."""
    c = b.dtype.c_name
    if w is None:
        if gather:
            return ["        /* the root computed it in its own array */"]
        count = " * ".join(["1LL"] + [f"d_{b.name}_{q}" for q in range(len(b.sizes))])
        return [f"        me_bcast((char *)l_{b.name}, ({count}) * (int64_t)sizeof({c}));"]
    blk = f"me_blk_{b.name}" if not w.whole else iexpr_c(w.block)
    return ["        " + blocks_call(b, w, f"me_here ? (char *)me_root[{k}] : NULL",
                                      f"l_{b.name}", f"ld_{b.name}_{w.dim}", blk, gather, 0,
                                      [f"d_{b.name}_{q}" for q in range(len(b.sizes))])]


def blocks_call(b: BufferDecl, w: Window, whole: str, local: str, width: str, blk: str,
                gather: bool, root: int, dims: list[str]) -> str:
    """The call of ``me_blocks_root`` moving ``b``'s blocks (``blk`` rows each) between
    the root's ``whole`` copy and each rank's window ``local`` (``width`` rows along the
    distributed dim; ``dims``: the C expressions of ``b``'s global extents)."""
    c = b.dtype.c_name
    outer = " * ".join(["1LL", *dims[:w.dim]])
    inner = " * ".join(["1LL", *dims[w.dim + 1:]])
    return (f"me_blocks_root({whole}, (char *){local}, (int64_t)sizeof({c}), {outer}, "
            f"{dims[w.dim]}, {inner}, {blk}, {width}, {w.lo_halo}, {int(w.whole)}, "
            f"{int(gather)}, {root});")


def root_copies(nargs: int) -> str:
    """The root's whole copy of each argument that a scatter or gather operation moves
    (set by ``me_run_job``, NULL elsewhere), for the kernel's operations."""
    return f"static void *me_root_copy[{nargs + 1}];\n"


LAUNCHER = r"""
/* The middle-end's MPI launcher: mpiexec -n R <this> <program.so> <run directory> <params>
   loads the program and runs its me_main on every rank. */
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "middleend launcher: usage: %s <program.so> <arguments>\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "middleend launcher: cannot load %s: %s\n", argv[1], dlerror());
        return 3;
    }
    int (*run)(int, char **) = (int (*)(int, char **))dlsym(lib, "me_main");
    if (run == NULL) {
        fprintf(stderr, "middleend launcher: %s has no me_main\n", argv[1]);
        return 3;
    }
    return run(argc - 1, argv + 1);
}
"""
