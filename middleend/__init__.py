"""middleend: a polyhedral compiler middle-end after the Tiramisu papers.

Public API (Layer I and the scheduling language)::

    import middleend as me
    with me.Function("blur") as f:
        N, M = me.Param("N"), me.Param("M")
        i, j = me.Var("i", 0, N - 2), me.Var("j", 0, M)
        inp = me.Input("inp", [N, M], me.float32)
        bx = me.Computation("bx", [i, j], (inp[i, j] + inp[i + 1, j] + inp[i + 2, j]) / 3)
    kernel = f.compile(target="cpu")
"""

from .api.function import Function
from .ir.commands import ROOT
from .ir.errors import (
    BuildError,
    DefinitionError,
    KernelArgumentError,
    KernelRuntimeError,
    MiddleEndError,
    ResourceLimitError,
    ScheduleError,
    TargetError,
    TargetUnavailable,
    UnproducedReadError,
)
from .ir.expr import Expr, call, cast, clamp, reinterpret, select
from .ir.expr import maximum as max
from .ir.expr import minimum as min
from .ir.function import (
    INOUT,
    INPUT,
    OUTPUT,
    TEMPORARY,
    Buffer,
    Computation,
    Input,
    Param,
    Var,
)
from .ir.operations import (
    Operation,
    barrier_at,
    copy_at,
    exchange,
    expand,
    gather,
    receive,
    scatter,
    send,
)
from .ir.types import (
    DType,
    bool_,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .target.base import Machine, TargetTraits
from .version import __version__


def connect(target: str, token: str | None = None, tls_ca: object = None,
            timeout: float | None = 600.0) -> object:
    """A client of ``middleend serve`` at ``host:port``, for ``f.compile(service=...)``
    (the token defaults to ``$MIDDLEEND_TOKEN``; ``tls_ca``: PEM bytes or path)."""
    from .service.client import connect as _connect

    return _connect(target, token, tls_ca, timeout)  # type: ignore[arg-type]


def targets() -> list[tuple[str, bool, str]]:
    """Every registered target as ``(name, available here, detail)``: the toolchain found,
    or what is missing and how to install it."""
    from .driver.targets import TargetRegistry

    return [(s.name, s.available, s.detail) for s in TargetRegistry.discover().statuses()]


def target_traits(name: str) -> TargetTraits:
    """What the registered target ``name`` honours (its loop tags, Layer IV operations,
    whether it runs statements on the host), whether or not it can build here; an unknown
    name is a TargetError listing the registered ones."""
    from .driver.targets import TargetRegistry
    from .target.base import traits

    return traits(TargetRegistry.discover().lookup(name))


def target_machine(name: str) -> Machine | None:
    """The machine the registered target ``name`` builds for (its compiler's predefined
    macros), or None where the target does not say; a front-end answers its language's
    target queries from it. Asks the target's toolchain (a TargetUnavailable if it is
    missing), so call it only for a pipeline that queries its target."""
    from .driver.targets import TargetRegistry

    return TargetRegistry.discover().lookup(name).machine()


def _intrinsic(name: str):  # type: ignore[no-untyped-def]
    def f(*args: object) -> Expr:
        return call(name, *args)

    f.__name__ = name
    f.__doc__ = f"The {name} intrinsic (float intrinsics of ints compute in float32)."
    return f


sin, cos, tan = _intrinsic("sin"), _intrinsic("cos"), _intrinsic("tan")
asin, acos, atan, atan2 = (_intrinsic("asin"), _intrinsic("acos"), _intrinsic("atan"),
                           _intrinsic("atan2"))
sinh, cosh, tanh = _intrinsic("sinh"), _intrinsic("cosh"), _intrinsic("tanh")
exp, log, sqrt, pow = _intrinsic("exp"), _intrinsic("log"), _intrinsic("sqrt"), _intrinsic("pow")
floor, ceil, round, trunc = (_intrinsic("floor"), _intrinsic("ceil"), _intrinsic("round"),
                             _intrinsic("trunc"))
abs, erf = _intrinsic("abs"), _intrinsic("erf")
fma = _intrinsic("fma")  # a * b + c rounded once
# integer bit operations (``&``, ``|``, ``~`` of expressions are the logical ones)
shl, shr = _intrinsic("shl"), _intrinsic("shr")
bitand, bitor, bitxor, bitnot = (_intrinsic("bitand"), _intrinsic("bitor"),
                                 _intrinsic("bitxor"), _intrinsic("bitnot"))
popcount, clz, ctz = _intrinsic("popcount"), _intrinsic("clz"), _intrinsic("ctz")
asinh, acosh, atanh = _intrinsic("asinh"), _intrinsic("acosh"), _intrinsic("atanh")

__all__ = [
    "__version__", "connect", "targets", "target_traits", "TargetTraits", "target_machine",
    "Machine", "ROOT", "INPUT",
    "OUTPUT", "TEMPORARY", "INOUT",
    "Buffer", "Computation", "Function", "Input", "Operation", "copy_at", "barrier_at", "send",
    "receive", "exchange", "scatter", "gather", "expand",
    "Param", "Var", "Expr", "DType", "select", "cast", "clamp", "min", "max",
    "bool_", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh",
    "tanh", "exp", "log", "sqrt", "pow", "floor", "ceil", "round", "trunc", "abs", "erf", "fma",
    "shl", "shr", "bitand", "bitor", "bitxor", "bitnot", "popcount", "clz", "ctz", "asinh",
    "acosh", "atanh", "reinterpret",
    "MiddleEndError", "DefinitionError", "UnproducedReadError", "ScheduleError",
    "TargetError", "TargetUnavailable", "ResourceLimitError", "BuildError",
    "KernelArgumentError",
    "KernelRuntimeError",
]
