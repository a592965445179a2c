"""The loop-level scheduling language (Layer II) shared by computations and operations.

Every method records one command on the owning Function's command log and returns the
object for chaining; nothing is applied until the program is lowered (see
:mod:`middleend.ir.commands`). Computations and Layer IV operations are scheduled with the
same words: an operation (a copy, a barrier, a send) is ordered with ``after``/``before``
and its own loops are split, vectorized or parallelized like a computation's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import commands as cmd
from .errors import DefinitionError
from .names import check_name

if TYPE_CHECKING:
    from .function import Function


def dim_name(d: Any) -> str:
    """A loop level given as a Var or a name (checked like every other name, since loop
    names reach the loop AST and the generated code's comments)."""
    from .function import Var  # the Var class sits above this module (it is schedulable)

    if isinstance(d, Var):
        return d.name
    if isinstance(d, str):
        return check_name(d, "loop")
    raise DefinitionError(f"a loop level must be a me.Var or a name, not {d!r}")


def positive(v: Any, what: str) -> int:
    """A factor of a split, tile, unroll or vectorize: a positive int."""
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        raise DefinitionError(f"{what} factor must be a positive int, got {v!r}")
    return v


def level_name(level: Any) -> str:
    """A loop level of an ordering command: a loop (Var or name) or ``me.ROOT``."""
    if isinstance(level, str) and level == cmd.ROOT:
        return cmd.ROOT
    return dim_name(level)


def _scheduled_name(other: Any, what: str) -> str:
    if not isinstance(other, Schedulable):
        raise DefinitionError(f"{what}: expected a computation or an operation, got "
                              f"{other!r}")
    return other.name


class Schedulable:
    """A named statement with loops: a Layer I computation or a Layer IV operation."""

    name: str
    fn: Function

    def _log(self, c: cmd.Command) -> Any:
        self.fn.commands.add(c)
        return self

    # -- loop transformations --------------------------------------------------------
    def interchange(self, a: Any, b: Any) -> Any:
        return self._log(cmd.Interchange(self.name, dim_name(a), dim_name(b)))

    def split(self, dim: Any, factor: int, outer: Any, inner: Any) -> Any:
        return self._log(cmd.Split(self.name, dim_name(dim), positive(factor, "split"),
                                   dim_name(outer), dim_name(inner)))

    def fuse(self, outer: Any, inner: Any, fused: Any) -> Any:
        """One loop ``fused`` for loop ``inner`` and the loop ``outer`` directly around it,
        running over the same instances in the same order (``fused = outer * E + inner -
        lo``, ``E`` the inner loop's constant extent): fewer, longer loops to parallelize or
        to map to one GPU dimension."""
        return self._log(cmd.Fuse(self.name, dim_name(outer), dim_name(inner),
                                  dim_name(fused)))

    def tile(self, *args: Any) -> Any:
        """``tile(i, j, t1, t2, i0, j0, i1, j1)`` or the 3-D form with 12 arguments."""
        if len(args) == 8:
            n = 2
        elif len(args) == 12:
            n = 3
        else:
            raise DefinitionError(f"{self.name}.tile takes 8 (2-D) or 12 (3-D) arguments")
        dims = tuple(dim_name(a) for a in args[:n])
        sizes = tuple(positive(s, "tile") for s in args[n:2 * n])
        outers = tuple(dim_name(a) for a in args[2 * n:3 * n])
        inners = tuple(dim_name(a) for a in args[3 * n:4 * n])
        return self._log(cmd.Tile(self.name, dims, sizes, outers, inners))

    def shift(self, dim: Any, amount: int) -> Any:
        return self._log(cmd.Shift(self.name, dim_name(dim), int(amount)))

    def skew(self, a: Any, b: Any, factor: int, new_a: Any = None, new_b: Any = None) -> Any:
        na = dim_name(a if new_a is None else new_a)
        nb = dim_name(b if new_b is None else new_b)
        return self._log(cmd.Skew(self.name, dim_name(a), dim_name(b), int(factor), na, nb))

    def reverse(self, dim: Any) -> Any:
        return self._log(cmd.Reverse(self.name, dim_name(dim)))

    def unroll(self, dim: Any, factor: int | None = None, outer: Any = None,
               inner: Any = None) -> Any:
        d = dim_name(dim)
        return self._log(cmd.Unroll(
            self.name, d, None if factor is None else positive(factor, "unroll"),
            dim_name(outer) if outer is not None else f"{d}_uo",
            dim_name(inner) if inner is not None else f"{d}_ui"))

    def vectorize(self, dim: Any, factor: int, outer: Any = None, inner: Any = None) -> Any:
        d = dim_name(dim)
        return self._log(cmd.Vectorize(
            self.name, d, positive(factor, "vectorize"),
            dim_name(outer) if outer is not None else f"{d}_vo",
            dim_name(inner) if inner is not None else f"{d}_vi"))

    def parallelize(self, dim: Any) -> Any:
        return self._log(cmd.Parallelize(self.name, dim_name(dim)))

    parallel = parallelize

    def gpu(self, *dims: Any) -> Any:
        """Tag loops as GPU blocks (first half) and threads (second half), as in the paper;
        the last loop of each half is the x dimension."""
        names = tuple(dim_name(d) for d in dims)
        if not names or len(names) % 2 or len(names) > 6:
            raise DefinitionError(f"{self.name}.gpu needs as many block loops as thread loops "
                                  "(at most three of each)")
        h = len(names) // 2
        return self._log(cmd.Gpu(self.name, names[:h], names[h:]))

    def gpu_blocks(self, *dims: Any) -> Any:
        """Tag up to three loops as GPU blocks (the last is x)."""
        return self.gpu_loops(dims, ())

    def gpu_threads(self, *dims: Any) -> Any:
        """Tag up to three loops as GPU threads (the last is x): for a computation placed
        inside a block by compute_at, or a copy's own loops."""
        return self.gpu_loops((), dims)

    def gpu_loops(self, blocks: Any, threads: Any) -> Any:
        """Tag up to three loops as GPU blocks and up to three as threads (one command;
        ``gpu``, ``gpu_blocks`` and ``gpu_threads`` are its usual forms)."""
        b = tuple(dim_name(d) for d in blocks)
        t = tuple(dim_name(d) for d in threads)
        if len(b) > 3 or len(t) > 3 or not (b or t):
            raise DefinitionError(f"{self.name}: GPU mappings take one to three block loops "
                                  f"and up to three thread loops (or the reverse), got "
                                  f"{len(b)} and {len(t)}")
        return self._log(cmd.Gpu(self.name, b, t))

    def tile_gpu(self, i: Any, j: Any, t1: int, t2: int, i0: Any, j0: Any, i1: Any,
                 j1: Any) -> Any:
        return self._log(cmd.TileGpu(self.name, dim_name(i), dim_name(j),
                                     positive(t1, "tile"), positive(t2, "tile"), dim_name(i0),
                                     dim_name(j0), dim_name(i1), dim_name(j1)))

    def distribute(self, dim: Any) -> Any:
        return self._log(cmd.Distribute(self.name, dim_name(dim)))

    def pipeline(self, dim: Any, ii: int = 1) -> Any:
        """Pipeline loop ``dim`` with initiation interval ``ii`` (the fpga target): the
        loops inside it are unrolled and a new iteration starts every ``ii`` cycles."""
        return self._log(cmd.Pipeline(self.name, dim_name(dim), positive(ii, "pipeline ii")))

    def set_schedule(self, isl_map: str) -> Any:
        """Expert escape hatch: an ISL map from this statement's domain to its loops,
        e.g. ``"{bx[i,j,c] -> [j, i, c]}"``; it replaces the transformations so far."""
        if not isinstance(isl_map, str):
            raise DefinitionError(f"{self.name}.set_schedule takes ISL map text")
        return self._log(cmd.SetSchedule(self.name, isl_map))

    # -- ordering ----------------------------------------------------------------------
    # The ordering commands form a graph, resolved at lowering: the order they are written
    # in does not matter (``y.after(t, i)`` holds even if ``t.after(init, ROOT)`` comes
    # later and moves t), and orderings that cannot all hold (a cycle, two commands asking
    # for different shared loops) are refused naming both commands.
    def after(self, other: Any, level: Any) -> Any:
        """Run after ``other``, sharing the loops down to and including ``level`` (a loop
        of this statement) or none at ``me.ROOT``. Every ordering command holds in the
        end, whatever order they are written in; a statement after several others runs
        after the last of them."""
        return self._log(cmd.After(self.name, _scheduled_name(other, f"{self.name}.after"),
                                   level_name(level)))

    def before(self, other: Any, level: Any) -> Any:
        """``a.before(b, i)`` is ``b.after(a, i)`` (``i`` a loop of ``b``); like every
        ordering command, it holds whatever order the commands are written in."""
        return self._log(cmd.Before(self.name, _scheduled_name(other, f"{self.name}.before"),
                                    level_name(level)))

    def then(self, other: Any, level: Any) -> Any:
        """``a.then(b, i)`` is ``b.after(a, i)`` and returns ``b`` for chaining (a chain
        may be written in any order: ``b.then(c, j)`` before ``a.then(b, i)`` is the same)."""
        self._log(cmd.Then(self.name, _scheduled_name(other, f"{self.name}.then"),
                           level_name(level)))
        return other
