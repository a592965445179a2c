"""Directive arguments that ask about the machine (frontends/julia/machine_ints.py):
``vector_lanes(T)``, ``vector_registers()`` and Int arithmetic of them, answered for the
target's machine, so that one ``kernels.jl`` schedule fits AVX2 and AVX-512 hosts."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.build import compiler, native_macros
from frontends.julia import UnsupportedJulia, compile_source, machine_ints
from frontends.julia import jast as J
from frontends.julia.parse import parse_function
from middleend import Machine

SRC = """
@acc function sc!(y::Vector{Float64}, x::Vector{Float64})
    @schedule begin
        vectorize(S, i, ARG)
    end
    for i in 1:length(x)
        @name S y[i] = 2.0 * x[i] + 1.0
    end
end
"""


def _simdlen(arg: str, n: int = 100) -> int:
    k = compile_source(SRC.replace("ARG", arg), "sc!")
    x = np.random.default_rng(1).random(n)
    y = np.zeros(n)
    k(y, x)
    np.testing.assert_array_equal(y, 2.0 * x + 1.0)
    src = k.compiled(k.spec_of((y, x))).kernel.source
    lens = {int(line.split("simdlen(")[1].split(")")[0]) for line in src.splitlines()
            if "simdlen(" in line}
    assert len(lens) == 1, lens
    return lens.pop()


def _host() -> tuple[int, int]:
    """(Float64 lanes, vector registers) of this host, read here from the compiler's
    -march=native macros (x86-64 or AArch64), apart from the middle-end's own rule."""
    macros = native_macros(compiler())
    has = {line.split()[1] for line in macros.splitlines() if line.startswith("#define ")}
    if "__AVX512F__" in has:
        return 8, 32
    if "__AVX__" in has:
        return 4, 16
    return 2, 32 if "__aarch64__" in has else 16


def test_vector_lanes_are_the_hosts() -> None:
    lanes64 = _host()[0]
    assert _simdlen("vector_lanes(Float64)") == lanes64
    assert _simdlen("2 * vector_lanes(Float64)") == 2 * lanes64
    assert _simdlen("vector_lanes(Float32) ÷ 2") == lanes64
    assert _simdlen("vector_lanes(Float64) + 1 - 1") == lanes64


def test_register_tile_width_from_the_registers() -> None:
    """The register tiles' shapes in kernels.jl: 3 * vector_lanes(Float64) rows and
    vector_registers() ÷ 4 columns, 12 x 4 with 16 registers of 4 doubles, 24 x 8 with 32
    of 8; whatever the host, each expression is an Int its vectorize takes."""
    lanes64, regs = _host()
    assert _simdlen("3 * vector_lanes(Float64)", n=96) == 3 * lanes64
    assert _simdlen("vector_registers() ÷ 4", n=96) == regs // 4
    assert _simdlen("3 * vector_registers() * vector_lanes(Float64) ÷ 32", n=96) == \
        3 * regs * lanes64 // 32


MM = """
@acc function mm!(C::Matrix{Float64}, A::Matrix{Float64}, B::Matrix{Float64})
    @schedule begin
        pack(A, Ap, 1 % BLOCK, 2, 1)
    end
    for j in 1:size(B, 2), i in 1:size(A, 1)
        C[i, j] = 0.0
    end
    for i in 1:size(A, 1), j in 1:size(B, 2), k in 1:size(A, 2)
        C[i, j] += A[i, k] * B[k, j]
    end
end
"""


def test_a_block_size_may_ask_the_machine() -> None:
    """``pack(A, Ap, 1 % (2 * vector_lanes(Float64)), 2, 1)``: panels two vectors tall,
    answered for the host before the directive is applied (machine_ints.resolve_blocks)."""
    k = compile_source(MM.replace("BLOCK", "(2 * vector_lanes(Float64))"), "mm!")
    rng = np.random.default_rng(5)
    A, B = np.asfortranarray(rng.random((37, 11))), np.asfortranarray(rng.random((11, 5)))
    C = np.zeros((37, 5), order="F")
    k(C, A, B)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12)
    src = k.compiled(k.spec_of((C, A, B))).kernel.source
    assert f"d_Ap_2 = me_dim({2 * _host()[0]}LL)" in src


@pytest.mark.parametrize(("block", "says"), [
    ("(vector_lanes(Foo))", "vector_lanes takes an element type"),
    ("(2 * n)", "schedule argument 1 % (2 * n)"),
])
def test_a_wrong_block_size_is_one_line_when_the_source_is_compiled(block: str,
                                                                    says: str) -> None:
    with pytest.raises(UnsupportedJulia, match="line 4") as e:
        compile_source(MM.replace("BLOCK", block), "mm!")
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(("arg", "says"), [
    ("vector_lanes(Foo)", "vector_lanes takes an element type"),
    ("vector_lanes()", "vector_lanes takes 1 argument(s), got 0"),
    ("vector_registers(2)", "vector_registers takes 0 argument(s), got 1"),
    ("2 * n", "schedule argument 2 * n"),
    ("vector_lane(Float64)", "schedule argument vector_lane(Float64)"),
    ("cache_bytes(4)", "cache_bytes takes a cache level: 1, 2 or 3"),
    ("cache_bytes(Float64)", "cache_bytes takes a cache level: 1, 2 or 3"),
    ("cache_bytes()", "cache_bytes takes 1 argument(s), got 0"),
])
def test_mistakes_are_refused_when_the_source_is_compiled(arg: str, says: str) -> None:
    with pytest.raises(UnsupportedJulia, match="line 4") as e:
        compile_source(SRC.replace("ARG", arg), "sc!")
    assert says in str(e.value) and "\n" not in str(e.value)


def test_zero_divisor_is_one_line_at_the_call() -> None:
    k = compile_source(SRC.replace("ARG", "vector_lanes(Float64) ÷ 0"), "sc!")
    with pytest.raises(UnsupportedJulia, match="÷ by zero in a directive argument"):
        k(np.zeros(8), np.zeros(8))


def _machine(*names: str) -> Machine:
    return Machine.from_defines("".join(f"#define {n} 1\n" for n in names))


@pytest.mark.parametrize(("names", "lanes64", "lanes8", "regs"), [
    (("__x86_64__", "__SSE2__", "__AVX__", "__AVX2__"), 4, 32, 16),
    (("__x86_64__", "__SSE2__", "__AVX__"), 4, 16, 16),  # AVX: no integer ymm
    (("__x86_64__", "__SSE2__", "__AVX__", "__AVX2__", "__AVX512F__"), 8, 32, 32),
    (("__x86_64__", "__AVX2__", "__AVX512F__", "__AVX512BW__"), 8, 64, 32),
    (("__aarch64__", "__ARM_NEON"), 2, 16, 32),
])
def test_other_machines(names: tuple[str, ...], lanes64: int, lanes8: int,
                        regs: int) -> None:
    """Machines this host is not: the queries' answers from their compiler macros, and
    the register tiles' columns on them (vector_registers() ÷ 4: 4 on AVX2, 8 on
    AVX-512)."""
    m = _machine(*names)
    src = SRC.replace("ARG", "vector_lanes(Float64)")
    fn = parse_function(src, "sc!")
    (arg,) = fn.schedule[0].args[2:]
    assert machine_ints.value(arg, lambda: m) == lanes64
    eight = J.Call("vector_lanes", (J.Name("Int8"),))
    assert machine_ints.value(eight, lambda: m) == lanes8
    assert machine_ints.value(J.Call("vector_registers", ()), lambda: m) == regs
    mm2 = parse_function(SRC.replace("ARG", "vector_registers() ÷ 4"), "sc!")
    (cols,) = mm2.schedule[0].args[2:]
    assert machine_ints.value(cols, lambda: m) == regs // 4


def test_a_machine_without_vectors_or_description_is_one_line() -> None:
    q = J.Call("vector_lanes", (J.Name("Float64"),))
    with pytest.raises(ValueError, match="no vector unit"):
        machine_ints.value(q, lambda: _machine("__riscv"))
    with pytest.raises(ValueError, match="does not say which machine"):
        machine_ints.value(q, lambda: None)


def _sysfs_l(level: int) -> int | None:
    """This host's level-``level`` data cache, read here from sysfs apart from the
    middle-end's reader (None where Linux does not say)."""
    from pathlib import Path

    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        if int((d / "level").read_text()) == level and \
                (d / "type").read_text().strip() in ("Data", "Unified"):
            size = (d / "size").read_text().strip()
            return int(size[:-1]) * {"K": 1024, "M": 1 << 20}[size[-1]]
    return None


def test_cache_bytes_are_the_hosts() -> None:
    """``cache_bytes(level)`` in a directive is the host's data cache of that level:
    a split by ``cache_bytes(1) ÷ 1024`` vectorizes by that many lanes here."""
    l1 = _sysfs_l(1)
    if l1 is None:
        pytest.skip("this host's /sys reports no level-1 data cache")
    assert _simdlen("cache_bytes(1) ÷ 1024", n=200) == l1 // 1024
    assert machine_ints.value(
        J.Call("cache_bytes", (J.Num(2, "Int64", 1),), 1),
        lambda: Machine.from_defines("", ((2, "Unified", 3 << 20),))) == 3 << 20


def test_a_machine_without_that_cache_says_so() -> None:
    """A machine that reports no level-3 cache (none, or an instruction cache only):
    the query is refused with the reason, not guessed."""
    m = Machine.from_defines("", ((1, "Data", 48 << 10), (1, "Instruction", 32 << 10),
                                  (2, "Unified", 2 << 20)))
    assert (m.cache_bytes(1), m.cache_bytes(2), m.cache_bytes(3)) == (48 << 10, 2 << 20,
                                                                       None)
    with pytest.raises(ValueError, match="reports no level-3 data cache"):
        machine_ints.value(J.Call("cache_bytes", (J.Num(3, "Int64", 1),), 1), lambda: m)


def test_the_cpu_targets_caches_come_from_sysfs(tmp_path: object) -> None:
    """backends.cpu.caches reads level, type and size per index (K and M suffixes), skips
    what it cannot read, and gives nothing where the directory does not exist."""
    from pathlib import Path

    from backends.cpu.caches import host_caches

    root = Path(str(tmp_path))
    for i, (level, kind, size) in enumerate([(1, "Data", "48K"), (1, "Instruction", "32K"),
                                             (2, "Unified", "2048K"), (3, "Unified", "105M"),
                                             (3, "Unified", "garbage")]):
        d = root / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    assert host_caches(root) == ((1, "Data", 48 << 10), (1, "Instruction", 32 << 10),
                                 (2, "Unified", 2 << 20), (3, "Unified", 105 << 20))
    assert host_caches(root / "missing") == ()
