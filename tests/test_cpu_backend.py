"""Tests of the CPU backend on hand-built loop ASTs (independent of the lowering).

Each test builds a :class:`Program` directly, so a failure points at the printer, the
build cache or the runtime rather than at scheduling.
"""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu import build, compile_kernel, compile_shared, generate_c
from backends.cpu.cprinter import STACK_LIMIT
from middleend.ir.errors import BuildError, KernelArgumentError, KernelRuntimeError, TargetError
from middleend.ir.expr import Binary, Call, Cast, Const, Expr, Select, Unary
from middleend.ir.loopast import (
    Alloc,
    Block,
    BufAccess,
    BufferDecl,
    For,
    IExpr,
    IInt,
    IOp,
    IterRef,
    IVar,
    Node,
    ParamRef,
    Program,
    Stmt,
    StmtInfo,
)
from middleend.ir.types import DType, bool_, float32, float64, int8, int32, int64, uint8


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the tests' builds out of the user's cache (shared by the session for speed)."""
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


# --------------------------------------------------------------------------- builders


def add(a: IExpr, b: IExpr) -> IExpr:
    return IOp("add", (a, b))


def sub(a: IExpr, b: IExpr) -> IExpr:
    return IOp("sub", (a, b))


def loop(var: str, lo: IExpr, hi: IExpr, body: Node, tag: str | None = None,
         name: str = "") -> For:
    """``for (var = lo; var <= hi; var++)`` in the canonical form the lowering produces."""
    return For(var, lo, IOp("le", (IVar(var), hi)), 1, body, tag=tag, name=name or var, hi=hi)


def vec(name: str, dt: DType, role: str, size: IExpr | None = None) -> BufferDecl:
    """A 1-D buffer of size ``size`` (default: the parameter N)."""
    return BufferDecl(name, dt, (size if size is not None else IVar("p_N"),), role)


def at(buf: str, dt: DType, *idx: Expr, **kw: object) -> BufAccess:
    return BufAccess(buf, tuple(idx), dt, **kw)  # type: ignore[arg-type]


def b(op: str, x: Expr, y: Expr, dt: DType) -> Binary:
    return Binary(op, x, y, dt)


I = IterRef("i")  # noqa: E741 - the iterator's name in the statements


def elementwise(name: str, buffers: tuple[BufferDecl, ...],
                stmts: dict[str, tuple[BufAccess, Expr]]) -> Program:
    """``for i in [0, N): <each statement at i>`` over 1-D buffers of size N."""
    infos = {c: StmtInfo(c, ("i",), store, value) for c, (store, value) in stmts.items()}
    body = Block(tuple(Stmt(c, (("v_i", IVar("t1")),)) for c in stmts))
    nest = loop("t1", IInt(0), sub(IVar("p_N"), IInt(1)), body, tag="parallel", name="i")
    return Program(name, ("N",), buffers, nest, infos)


# --------------------------------------------------------------------------- (a)


def scale_program(outer: str | None = "parallel", inner: str | None = "vector") -> Program:
    """out[i, j] = inp[i, j] * 2.5f + (float)i over N x M."""
    sizes = (IVar("p_N"), IVar("p_M"))
    bufs = (BufferDecl("inp", float32, sizes, "input"), BufferDecl("out", float32, sizes, "output"))
    i, j = IterRef("i"), IterRef("j")
    value = b("add", b("mul", at("inp", float32, i, j), Const(2.5, float32), float32),
              Cast(float32, i), float32)
    info = StmtInfo("S", ("i", "j"), at("out", float32, i, j), value)
    stmt = Stmt("S", (("v_i", IVar("t1")), ("v_j", IVar("t2"))))
    inner_loop = loop("t2", IInt(0), sub(IVar("p_M"), IInt(1)), stmt, tag=inner, name="j")
    nest = loop("t1", IInt(0), sub(IVar("p_N"), IInt(1)), inner_loop, tag=outer, name="i")
    return Program("scale", ("N", "M"), bufs, nest, {"S": info})


def test_scale_parallel_vector_matches_numpy() -> None:
    prog = scale_program()
    src = generate_c(prog)
    assert "me_parallel_for(" in src
    assert "#pragma omp simd" in src
    assert "/* loop i: parallel, on the thread pool */" in src and "/* loop j */" in src
    assert "int me_scale(int64_t p_N, int64_t p_M, const float* restrict b_inp, " \
           "float* restrict b_out)" in src
    kernel = compile_kernel(prog)
    rng = np.random.default_rng(0)
    inp = rng.standard_normal((37, 53)).astype(np.float32)
    out = kernel(inp=inp)["out"]  # N and M inferred from the shape
    expected = inp * np.float32(2.5) + np.arange(37, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(out, expected)
    # An explicit output is filled in place; explicit params agreeing with shapes are fine.
    given = np.zeros((37, 53), np.float32)
    res = kernel(inp=inp, out=given, N=37, M=53)
    assert res["out"] is given
    np.testing.assert_array_equal(given, expected)
    # Degenerate sizes run nothing and do not crash.
    assert kernel(inp=np.zeros((0, 5), np.float32))["out"].shape == (0, 5)


# --------------------------------------------------------------------------- (b)


def test_narrow_wraparound_and_floor_division() -> None:
    bufs = (vec("a8", int8, "input"), vec("b8", int8, "input"), vec("ua", uint8, "input"),
            vec("ub", uint8, "input"), vec("x", int32, "input"), vec("y", int32, "input"),
            vec("xl", int64, "input"), vec("yl", int64, "input"),
            vec("s8", int8, "output"), vec("m8", int8, "output"), vec("n8", int8, "output"),
            vec("d8", int8, "output"), vec("su", uint8, "output"), vec("du", uint8, "output"),
            vec("q32", int32, "output"), vec("r32", int32, "output"),
            vec("f32", int32, "output"), vec("ql", int64, "output"), vec("rl", int64, "output"),
            vec("c8", int8, "output"), vec("w8", int32, "output"), vec("wu", uint8, "output"))
    a8, b8 = at("a8", int8, I), at("b8", int8, I)
    ua, ub = at("ua", uint8, I), at("ub", uint8, I)
    x, y = at("x", int32, I), at("y", int32, I)
    xl, yl = at("xl", int64, I), at("yl", int64, I)
    prog = elementwise("ints", bufs, {
        "S8": (at("s8", int8, I), b("add", a8, b8, int8)),
        "M8": (at("m8", int8, I), b("mul", a8, b8, int8)),
        "N8": (at("n8", int8, I), Unary("neg", a8)),
        "D8": (at("d8", int8, I), b("floordiv", a8, b8, int8)),
        "SU": (at("su", uint8, I), b("add", ua, ub, uint8)),
        "DU": (at("du", uint8, I), b("sub", ua, ub, uint8)),
        "Q32": (at("q32", int32, I), b("floordiv", x, y, int32)),
        "R32": (at("r32", int32, I), b("mod", x, y, int32)),
        "F32": (at("f32", int32, I), b("div", x, y, int32)),  # integer '/' is floor too
        "QL": (at("ql", int64, I), b("floordiv", xl, yl, int64)),
        "RL": (at("rl", int64, I), b("mod", xl, yl, int64)),
        "C8": (at("c8", int8, I), b("add", a8, Const(100, int8), int8)),
        # Intermediate sums must wrap before a widening cast or a comparison (C would
        # promote them to int and keep the carry).
        "W8": (at("w8", int32, I), Cast(int32, b("add", a8, b8, int8))),
        "WU": (at("wu", uint8, I), Select(b("lt", b("add", ua, ub, uint8), Const(100, uint8),
                                            bool_), ua, ub)),
    })
    kernel = compile_kernel(prog)
    rng = np.random.default_rng(1)
    n = 1000
    args = {
        "a8": rng.integers(-128, 128, n, dtype=np.int8),
        "b8": rng.integers(-128, 128, n, dtype=np.int8),
        "ua": rng.integers(0, 256, n, dtype=np.uint8),
        "ub": rng.integers(0, 256, n, dtype=np.uint8),
        "x": rng.integers(-50, 50, n, dtype=np.int32),
        "y": rng.integers(-7, 8, n, dtype=np.int32),
        "xl": rng.integers(-(2**40), 2**40, n, dtype=np.int64),
        "yl": rng.integers(-1000, 1000, n, dtype=np.int64),
    }
    args["b8"][args["b8"] == 0] = 3
    res = kernel(**args)
    with np.errstate(all="ignore"):
        a, bb = args["a8"], args["b8"]
        np.testing.assert_array_equal(res["s8"], a + bb)
        np.testing.assert_array_equal(res["m8"], a * bb)
        np.testing.assert_array_equal(res["n8"], -a)
        np.testing.assert_array_equal(res["d8"], a // bb)
        np.testing.assert_array_equal(res["c8"], a + np.int8(100))
        np.testing.assert_array_equal(res["w8"], (a + bb).astype(np.int32))
        np.testing.assert_array_equal(
            res["wu"], np.where(args["ua"] + args["ub"] < 100, args["ua"], args["ub"]))
        np.testing.assert_array_equal(res["su"], args["ua"] + args["ub"])
        np.testing.assert_array_equal(res["du"], args["ua"] - args["ub"])
        # Division by zero gives 0 like numpy (and must not crash).
        np.testing.assert_array_equal(res["q32"], args["x"] // args["y"])
        np.testing.assert_array_equal(res["r32"], args["x"] % args["y"])
        np.testing.assert_array_equal(res["f32"], args["x"] // args["y"])
        np.testing.assert_array_equal(res["ql"], args["xl"] // args["yl"])
        np.testing.assert_array_equal(res["rl"], args["xl"] % args["yl"])
    assert (args["x"] < 0).any() and (args["y"] < 0).any() and (args["y"] == 0).any()


def test_float_intrinsics_and_helpers() -> None:
    bufs = (vec("x", float32, "input"), vec("y", float32, "input"), vec("k", int8, "input"),
            vec("rnd", float32, "output"), vec("fm", float32, "output"),
            vec("mn", float32, "output"), vec("ab", int8, "output"), vec("sq", float64, "output"),
            vec("c", float32, "output"))
    x, y, k = at("x", float32, I), at("y", float32, I), at("k", int8, I)
    prog = elementwise("floats", bufs, {
        "R": (at("rnd", float32, I), Call("round", (x,), float32)),
        "F": (at("fm", float32, I), b("mod", x, y, float32)),
        "M": (at("mn", float32, I), b("min", x, y, float32)),
        "A": (at("ab", int8, I), Call("abs", (k,), int8)),
        "Q": (at("sq", float64, I), Call("sqrt", (Cast(float64, x),), float64)),
        "C": (at("c", float32, I), b("add", x, Const(0.1, float32), float32)),
    })
    src = generate_c(prog)
    assert "nearbyintf(" in src and "0.100000001f" in src  # 0.1 as float32, round-trippable
    kernel = compile_kernel(prog)
    x_in = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 3.7, -7.25, 9.0], np.float32)
    y_in = np.array([3.0, -2.0, 0.75, 2.0, -1.5, 1.0, 2.0, 4.0], np.float32)
    k_in = np.array([-128, -1, 0, 5, 127, -100, 3, -3], np.int8)
    res = kernel(x=x_in, y=y_in, k=k_in)
    np.testing.assert_array_equal(res["rnd"], np.round(x_in))
    np.testing.assert_array_equal(res["fm"], x_in - np.floor(x_in / y_in) * y_in)
    np.testing.assert_array_equal(res["mn"], np.minimum(x_in, y_in))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(res["ab"], np.abs(k_in))
        np.testing.assert_array_equal(res["sq"], np.sqrt(x_in.astype(np.float64)))
    np.testing.assert_array_equal(res["c"], x_in + np.float32(0.1))


# --------------------------------------------------------------------------- (c)


def gather_program() -> Program:
    """out[i] = lut[idx[i]] with a checked data-dependent index."""
    bufs = (vec("idx", int32, "input"), vec("lut", float32, "input", IVar("p_L")),
            vec("out", float32, "output"))
    value = at("lut", float32, at("idx", int32, I), checked=True)
    info = StmtInfo("G", ("i",), at("out", float32, I), value)
    nest = loop("t1", IInt(0), sub(IVar("p_N"), IInt(1)),
                Stmt("G", (("v_i", IVar("t1")),)), tag="parallel", name="i")
    return Program("gather", ("N", "L"), bufs, nest, {"G": info})


def test_checked_gather() -> None:
    kernel = compile_kernel(gather_program())
    assert "me_chk(" in kernel.source
    lut = np.arange(10, dtype=np.float32) * 3
    idx = np.array([9, 0, 4, 4, 7], np.int32)
    np.testing.assert_array_equal(kernel(idx=idx, lut=lut)["out"], lut[idx])
    for bad in (10, -1, 2**30):
        with pytest.raises(KernelRuntimeError, match="out of bounds in kernel gather"):
            kernel(idx=np.array([1, bad, 2], np.int32), lut=lut)
    # An empty table makes every index out of bounds, without touching memory.
    with pytest.raises(KernelRuntimeError):
        kernel(idx=idx, lut=np.zeros(0, np.float32))


# --------------------------------------------------------------------------- (d)


@pytest.mark.parametrize("tile", [8, STACK_LIMIT + 1])
def test_local_tile_buffer(tile: int) -> None:
    """tile[i - o] = inp[i] * inp[i] per tile of 8, then out[i] = tile[i - o] + 1."""
    n_tile = IVar("o_tile_0")
    bufs = (vec("inp", float32, "input"), vec("out", float32, "output"),
            BufferDecl("tile", float32, (IInt(tile),), "temporary", local=True))
    sq = b("mul", at("inp", float32, I), at("inp", float32, I), float32)
    infos = {
        "T": StmtInfo("T", ("i",), at("tile", float32, I, offset_names=(n_tile.name,)), sq),
        "U": StmtInfo("U", ("i",), at("out", float32, I),
                      b("add", at("tile", float32, I, offset_names=("o_tile_0",)),
                        Const(1.0, float32), float32)),
    }
    base = IOp("mul", (IInt(8), IVar("t1")))
    last = IOp("min", (IInt(7), sub(sub(IVar("p_N"), IInt(1)), base)))

    def inner(var: str, comp: str) -> For:
        binds = (("v_i", add(base, IVar(var))), ("o_tile_0", base))
        return loop(var, IInt(0), last, Stmt(comp, binds), name=f"{comp}_i")

    body = Alloc("tile", Block((inner("t2", "T"), inner("t3", "U"))))
    hi = IOp("fdiv_q", (sub(IVar("p_N"), IInt(1)), IInt(8)))
    nest = loop("t1", IInt(0), hi, body, tag="parallel", name="tiles")
    prog = Program("tiled", ("N",), bufs, nest, infos)
    kernel = compile_kernel(prog)
    if tile <= STACK_LIMIT:
        assert f"float m_tile[{tile}]" in kernel.source  # on the stack
    else:
        assert "(float*)me_alloc(" in kernel.source and "free(b_tile);" in kernel.source
    inp = np.linspace(-3, 3, 45, dtype=np.float32)
    np.testing.assert_array_equal(kernel(inp=inp)["out"], inp * inp + np.float32(1))


def test_entry_temporary_buffer() -> None:
    """tmp[i] = 2 * inp[i] (allocated at entry), then out[i] = tmp[N - 1 - i]."""
    bufs = (vec("inp", float64, "input"), vec("out", float64, "output"),
            vec("tmp", float64, "temporary"))
    rev = b("sub", b("sub", ParamRef("N"), Const(1, int32), int32), I, int32)
    infos = {
        "T": StmtInfo("T", ("i",), at("tmp", float64, I),
                      b("mul", Const(2.0, float64), at("inp", float64, I), float64)),
        "O": StmtInfo("O", ("i",), at("out", float64, I), at("tmp", float64, rev)),
    }
    hi = sub(IVar("p_N"), IInt(1))
    body = Block((loop("t1", IInt(0), hi, Stmt("T", (("v_i", IVar("t1")),)), "parallel"),
                  loop("t2", IInt(0), hi, Stmt("O", (("v_i", IVar("t2")),)), "parallel")))
    kernel = compile_kernel(Program("rev", ("N",), bufs, body, infos))
    assert "free(b_tmp);" in kernel.source
    inp = np.arange(11, dtype=np.float64)
    np.testing.assert_array_equal(kernel(inp=inp)["out"], 2 * inp[::-1])


def test_allocation_failure_is_reported() -> None:
    """A temporary too large to allocate makes the kernel return 2, not crash."""
    bufs = (vec("inp", float32, "input"), vec("out", float32, "output"),
            vec("tmp", float32, "temporary", IVar("p_S")))
    infos = {"T": StmtInfo("T", ("i",), at("tmp", float32, I), at("inp", float32, I)),
             "O": StmtInfo("O", ("i",), at("out", float32, I), at("tmp", float32, I))}
    body = Block((Stmt("T", (("v_i", IVar("t1")),)), Stmt("O", (("v_i", IVar("t1")),))))
    nest = loop("t1", IInt(0), sub(IVar("p_N"), IInt(1)), body)
    kernel = compile_kernel(Program("big", ("N", "S"), bufs, nest, infos))
    inp = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(kernel(inp=inp, S=4)["out"], inp)
    with pytest.raises(KernelRuntimeError, match="allocation failed in kernel big"):
        kernel(inp=inp, S=2**62)


# --------------------------------------------------------------------------- (e)


@pytest.mark.parametrize("tag", ["gpu_block", "gpu_thread", "distribute", "pipeline"])
def test_foreign_tags_raise_target_error(tag: str) -> None:
    with pytest.raises(TargetError, match=f"cannot honour tag {tag} on loop i"):
        generate_c(scale_program(outer=tag))


def test_parallel_without_canonical_bound_raises() -> None:
    prog = scale_program()
    nest = prog.body
    assert isinstance(nest, For)
    odd = For(nest.var, nest.init, nest.cond, 1, nest.body, tag="parallel", name="i", hi=None)
    with pytest.raises(TargetError, match="loop i"):
        generate_c(Program("scale", prog.params, prog.buffers, odd, prog.stmts))


def test_invalid_identifier_raises() -> None:
    prog = scale_program()
    assert isinstance(prog.body, For)
    bad = For("t1; system(x)", IInt(0), IInt(1), 1, prog.body.body)
    with pytest.raises(TargetError, match="invalid C"):
        generate_c(Program("scale", prog.params, prog.buffers, bad, prog.stmts))


# --------------------------------------------------------------------------- (f)


def test_argument_errors_name_the_buffer() -> None:
    kernel = compile_kernel(scale_program())
    good = np.zeros((4, 5), np.float32)
    with pytest.raises(KernelArgumentError, match="buffer inp.*dtype float32.*float64"):
        kernel(inp=good.astype(np.float64))
    with pytest.raises(KernelArgumentError, match=r"buffer out.*\(4, 6\)"):
        kernel(inp=good, out=np.zeros((4, 6), np.float32))
    with pytest.raises(KernelArgumentError, match=r"buffer out.*expected shape \(4, 5\)"):
        kernel(inp=good, out=np.zeros((4, 6), np.float32), M=5)
    with pytest.raises(KernelArgumentError, match=r"buffer inp.*expected shape \(3, 5\)"):
        kernel(inp=good, N=3)  # an explicit parameter must agree with the shapes
    with pytest.raises(KernelArgumentError, match="buffer inp.*C-contiguous"):
        kernel(inp=np.zeros((4, 10), np.float32)[:, ::2])
    with pytest.raises(KernelArgumentError, match="buffer out.*read-only"):
        ro = np.zeros((4, 5), np.float32)
        ro.flags.writeable = False
        kernel(inp=good, out=ro)
    with pytest.raises(KernelArgumentError, match="buffers inp and out overlap"):
        kernel(inp=good, out=good)
    with pytest.raises(KernelArgumentError, match="unknown argument.*bogus.*valid names"):
        kernel(inp=good, bogus=1)
    with pytest.raises(KernelArgumentError, match="missing input buffer inp"):
        kernel(out=good)


def test_missing_parameter_is_named() -> None:
    # L sizes nothing that was passed: the lut is missing, so L cannot be inferred.
    kernel = compile_kernel(gather_program())
    with pytest.raises(KernelArgumentError, match="missing parameter.*L"):
        kernel(idx=np.zeros(3, np.int32), lut=np.zeros((2, 2), np.float32))
    prog = elementwise("padd", (vec("x", float32, "input"), vec("y", float32, "output")), {
        "S": (at("y", float32, I), b("add", at("x", float32, I),
                                     Cast(float32, ParamRef("K")), float32))})
    prog = Program(prog.name, ("N", "K"), prog.buffers, prog.body, prog.stmts)
    kernel = compile_kernel(prog)
    with pytest.raises(KernelArgumentError, match="missing parameter.*K"):
        kernel(x=np.zeros(3, np.float32))
    np.testing.assert_array_equal(kernel(x=np.ones(3, np.float32), K=4)["y"], np.full(3, 5.0))


# --------------------------------------------------------------------------- (g)


def test_build_cache(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path))
    prog = scale_program()
    first = build(prog)
    second = build(prog)
    assert not first.cached and second.cached
    assert first.path == second.path and first.key == second.key
    assert first.path.is_file() and tmp_path in first.path.parents
    assert not [p for p in first.path.parent.iterdir() if p.name.startswith(".tmp-")]
    other = build(scale_program(inner=None))
    assert other.key != first.key and not other.cached


def test_build_error_carries_command_and_log(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MIDDLEEND_CACHE_DIR", str(tmp_path))
    with pytest.raises(BuildError) as info:
        compile_shared("int broken( {\n")
    assert "-ffp-contract=off" in info.value.command
    assert "error" in info.value.log
