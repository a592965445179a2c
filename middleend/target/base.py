"""The interface a target implements to plug into the middle-end.

A target is a class registered under a name (entry-point group ``middleend.targets``; see
``backends/README.md``). It declares the loop tags and Layer IV operations it honours and
its options, says whether its toolchain is available here, prints source from the shared
loop AST, builds it, and loads what it built as a kernel with the common calling convention
(:class:`~middleend.target.kernel.Kernel`). Nothing outside ``backends/`` names a
particular target: the engine, the service, the CLI and ``f.compile`` look targets up by
name (:mod:`middleend.driver.targets`).
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..ir.commands import Command, operations_of, tags_of
from ..ir.errors import TargetError, TargetUnavailable
from ..ir.loopast import For, Node, Program, Stmt, statements, walk_nodes
from .artifact import Artifact
from .kernel import Kernel


@dataclass(frozen=True)
class TargetOption:
    """One option of a target (``f.compile(target=..., <name>=value)``)."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Availability:
    """Whether a target can build here: ``detail`` names the toolchain found (or what is
    missing); ``tool`` and ``install`` say what to install and how, when it is not."""

    available: bool
    detail: str
    tool: str = ""
    install: str = ""


@dataclass(frozen=True)
class SourceText:
    """A generated source file (``language``: c, cuda, opencl, hls-c++, ...)."""

    name: str
    language: str
    text: str


class Target(abc.ABC):
    """A code generator and its toolchain. Subclasses set the class attributes and
    implement the abstract methods; instances hold no state between compiles."""

    name: ClassVar[str]
    summary: ClassVar[str]
    tags: ClassVar[frozenset[str]] = frozenset()
    operations: ClassVar[frozenset[str]] = frozenset()
    options: ClassVar[tuple[TargetOption, ...]] = ()
    # whether a statement outside every device loop runs (on the host); a target that
    # runs every computation on a device refuses such a statement, so a front-end whose
    # language runs it on the host gives it a device mapping first (:func:`traits`)
    host_statements: ClassVar[bool] = True

    def machine(self) -> Machine | None:
        """The machine this target's code is built for, where the target knows it (a
        native build for this host): what a front-end answers its language's target
        queries from (Halide's ``target_arch_is``, ``target_has_feature``, ...) without
        naming a target or an instruction set. None: the target does not say (a device,
        a simulator), and such queries are refused."""
        return None

    # ------------------------------------------------------------------ toolchain
    @abc.abstractmethod
    def availability(self) -> Availability:
        """Whether this machine has what the target needs to build (cheap: no build)."""

    def describe(self) -> str:
        """What ``middleend targets`` prints about this target here (default: the
        availability's detail; a target may probe its toolchain further)."""
        return self.availability().detail

    def require(self) -> None:
        """Raise TargetUnavailable (naming the tool and how to install it) unless
        available."""
        a = self.availability()
        if not a.available:
            how = f"; {a.install}" if a.install else ""
            raise TargetUnavailable(f"target {self.name!r} is not available here: {a.detail}"
                                    f"{how}", target=self.name, tool=a.tool, install=a.install)

    @abc.abstractmethod
    def identity(self) -> str:
        """Everything besides the request that determines what a build produces (the
        compiler's version, the host's instruction set): part of every cache key."""

    # ------------------------------------------------------------------ options
    def resolve_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The options of one compile: ``given`` checked against :attr:`options`, the
        others at their defaults."""
        known = {o.name: o for o in self.options}
        out = {o.name: o.default for o in self.options}
        for k, v in given.items():
            o = known.get(k)
            if o is None:
                names = ", ".join(known) or "none"
                raise TargetError(f"target {self.name!r} has no option {k!r} (its options: "
                                  f"{names})", target=self.name)
            if o.type is float and isinstance(v, int) and not isinstance(v, bool):
                v = float(v)
            if not isinstance(v, o.type) or (o.type is int and isinstance(v, bool)):
                raise TargetError(f"target {self.name!r}: option {k!r} must be a "
                                  f"{o.type.__name__}, got {v!r}", target=self.name)
            if o.choices and v not in o.choices:
                raise TargetError(f"target {self.name!r}: option {k!r} must be one of "
                                  f"{list(o.choices)}, got {v!r}", target=self.name)
            out[k] = v
        return out

    # ------------------------------------------------------------------ compile
    def check_commands(self, commands: Sequence[Command]) -> None:
        """Refuse, before anything is lowered, a command that asks for a loop tag or a
        Layer IV operation this target does not honour (the loop AST is checked again
        after lowering, for what the compiler adds)."""
        for k, c in enumerate(commands):
            for tag, loop in tags_of(c):
                if tag not in self.tags:
                    raise TargetError(
                        f"target {self.name!r} cannot honour tag {tag!r} on loop {loop!r} "
                        f"of {c.comp} (set by {c.describe()} (command #{k}))",
                        target=self.name, computations=(c.comp,), loop=loop,
                        command=c.describe(), feature=("tag", tag))
            for op, name in operations_of(c):
                if op not in self.operations:
                    raise TargetError(
                        f"target {self.name!r} cannot honour the {op} operation {name!r} "
                        f"(created by {c.describe()} (command #{k}))", target=self.name,
                        computations=(name,), command=c.describe(),
                        feature=("operation", op))

    def check(self, program: Program, options: Mapping[str, Any] | None = None) -> None:
        """Refuse, before any code is printed, a loop tag or a Layer IV operation this
        target does not honour, naming the computations, the loop and the command (tags
        first: an operation the compiler inserted for them is a consequence)."""
        nodes = list(walk(program.body))
        for node, _ in nodes:
            if isinstance(node, For) and node.tag is not None and node.tag not in self.tags:
                comps = tuple(sorted(computations_in(node)))
                raise TargetError(
                    f"target {self.name!r} cannot honour tag {node.tag!r} on loop "
                    f"{node.name or node.var!r} of {', '.join(comps)}"
                    + (f" (set by {node.command})" if node.command else ""),
                    target=self.name, computations=comps, loop=node.name or node.var,
                    command=node.command or None, feature=("tag", node.tag))
        for node, loops in nodes:
            if isinstance(node, Stmt):
                info = program.stmts.get(node.comp)
                if info is not None and info.op is not None and \
                        info.op not in self.operations:
                    outer = [x for x in loops if x not in info.iters]  # not its own loops
                    where = f" in loop {outer[-1]!r}" if outer else ""
                    raise TargetError(
                        f"target {self.name!r} cannot honour the {info.op} operation "
                        f"{node.comp!r}{where}"
                        + (f" (created by {info.command})" if info.command else ""),
                        target=self.name, computations=(node.comp,),
                        loop=outer[-1] if outer else None, command=info.command or None,
                        feature=("operation", info.op))

    def lowering(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """What lowering needs from this target's options (default nothing; a distributed
        target returns ``{"ranks": n}``: the middle-end then plans the distribution)."""
        return {}

    def estimate_cycles(self, program: Program, params: Mapping[str, int]) -> float | None:
        """This target's own estimate of one call's cycles at these parameter values, or
        None (the default) where it has no model of its own: an automatic scheduler then
        ranks candidates with its analytical model. The fpga target has one (its latency
        model: pipelines' depth and II, loop trips), which is what HLS schedules are judged
        by, so candidates for it are compared on that."""
        return None

    def declaration(self, program: Program) -> str:
        """The entry point as a C declaration, for callers outside Python ("" when the
        target has no C-callable entry point)."""
        return ""

    def build_host_library(self, source: str, include_dirs: Sequence[str] = ()) -> Path:
        """A shared library of the C ``source``, built for this process by the target's
        host compiler (``include_dirs``: more header directories, ``-I``): a front-end's
        host-side shim (the Halide front-end's call of an extern stage, its CPython
        extension for repeated calls). Targets without a host C compiler refuse."""
        raise TargetError(f"the {self.name} target builds no host C library", target=self.name)

    @abc.abstractmethod
    def generate(self, program: Program, options: Mapping[str, Any]) -> list[SourceText]:
        """The source files of ``program`` (no toolchain needed)."""

    @abc.abstractmethod
    def build(self, program: Program, sources: list[SourceText],
              options: Mapping[str, Any]) -> tuple[Artifact, str]:
        """Build ``sources``; returns the artifact and the build log."""

    @abc.abstractmethod
    def load(self, artifact: Artifact, **kernel_args: Any) -> Kernel:
        """A callable kernel from an artifact this target built (possibly elsewhere; the
        kernel keeps it as ``kernel.artifact``); ``kernel_args`` go to the Kernel (source,
        cache_key, inspect)."""


def walk(node: Node, loops: tuple[str, ...] = ()) -> Iterator[tuple[Node, tuple[str, ...]]]:
    """Every node of a loop AST with the names of the loops around it."""
    return walk_nodes(node, loops)


def computations_in(node: Node) -> set[str]:
    """The statements (computations and operations) inside ``node``."""
    return {s.comp for s in statements(node)}


@dataclass(frozen=True)
class Machine:
    """A machine as its C compiler describes it: the predefined macros of a compile for
    it (``cc -march=native -dM -E``: ``__x86_64__``, ``__AVX2__``, ``__linux__``,
    ``__SIZEOF_SIZE_T__``...), name to value. Compiler-neutral facts a front-end maps its
    own target queries onto (:meth:`Target.machine`). ``caches``: for a target that builds
    for this host, its CPU's caches as the operating system reports them (level, type:
    "Data", "Instruction" or "Unified", bytes; for one core), for sizing tiles."""

    macros: tuple[tuple[str, str], ...]
    caches: tuple[tuple[int, str, int], ...] = ()

    def defines(self, name: str) -> bool:
        return any(n == name for n, _ in self.macros)

    def value(self, name: str) -> str | None:
        return next((v for n, v in self.macros if n == name), None)

    def vector_bytes(self, is_float: bool, size: int) -> int | None:
        """The widest vector a build for this machine computes elements of ``size`` bytes
        in (x86: AVX-512F for floats and 32/64-bit integers, AVX-512BW for 8/16-bit ones,
        AVX for floats, AVX2 for integers; SSE2 and NEON 16 bytes), None where the
        compiler describes no vector unit known here. One rule for the cpu target's
        register tiles and the front-ends' queries (the builds use these widths:
        ``backends.cpu.build.vector_flags``)."""
        if self.defines("__AVX512F__") and (is_float or size >= 4
                                             or self.defines("__AVX512BW__")):
            return 64
        if self.defines("__AVX2__") or (is_float and self.defines("__AVX__")):
            return 32
        if self.defines("__SSE2__") or self.defines("__ARM_NEON"):
            return 16
        return None

    def vector_registers(self) -> int | None:
        """Architectural vector registers: 32 with AVX-512 (zmm0-31) and on AArch64, 16 on
        other x86-64; None elsewhere."""
        if self.defines("__AVX512F__") or self.defines("__aarch64__"):
            return 32
        return 16 if self.defines("__x86_64__") else None

    def cache_bytes(self, level: int) -> int | None:
        """The size of the level-``level`` cache that holds data (a data or unified
        cache), None where the machine reports none."""
        return next((b for lv, kind, b in self.caches
                     if lv == level and kind in ("Data", "Unified")), None)

    @staticmethod
    def from_defines(text: str, caches: tuple[tuple[int, str, int], ...] = ()) -> Machine:
        """From the ``#define NAME VALUE`` lines a ``-dM -E`` compile prints (and the
        host's ``caches``, where the machine is this host)."""
        out = []
        for line in text.splitlines():
            parts = line.split(None, 2)
            if len(parts) >= 2 and parts[0] == "#define" and "(" not in parts[1]:
                out.append((parts[1], parts[2] if len(parts) > 2 else ""))
        return Machine(tuple(sorted(out)), tuple(sorted(caches)))


# bytes from which a buffer the C targets allocate is fresh memory at every call: glibc
# maps such a block anew each time (its mmap threshold stops growing at 32 MB), so the
# kernel faults in and zeroes every page at first touch, another pass over the buffer's
# bytes at memory bandwidth. The runtime offers these as huge pages
# (``backends/clike/cruntime.py``); the cost model prices the zeroing
# (``autosched/cost.py::first_touch``).
FRESH_BYTES = 32 << 20


def register_tile_fits(sums: int, operands: int, registers: int) -> bool:
    """Whether a register tile's ``sums`` vectors, the ``operands`` vectors it keeps in
    registers across its columns and one broadcast leave a vector register spare. The
    rule of both the search's tile shapes (``autosched/space.py``) and the C printer's
    pinned operands (``backends/cpu/vtile.py``): at exactly all of them gcc spilled a sum
    to the stack (doitgen's 12 x 4 tile on AVX2's 16 registers: 27.7 ms against 13.0 for
    8 x 4, AVX2 Zen 3)."""
    return sums + operands + 1 < registers


@dataclass(frozen=True)
class TargetTraits:
    """What a target honours, for a front-end shaping what it sends, without naming a
    target in its own code (``middleend.target_traits(name)``)."""

    name: str
    tags: frozenset[str]
    operations: frozenset[str]
    host_statements: bool


def traits(target: Target) -> TargetTraits:
    return TargetTraits(target.name, target.tags, target.operations, target.host_statements)
