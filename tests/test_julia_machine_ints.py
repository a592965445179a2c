"""Directive arguments that ask about the machine (frontends/julia/machine_ints.py):
``vector_lanes(T)``, ``vector_registers()`` and Int arithmetic of them, answered for the
target's machine, so that one ``kernels.jl`` schedule fits AVX2 and AVX-512 hosts."""

from __future__ import annotations

import numpy as np
import pytest

from backends.cpu.build import compiler, float_lanes, vector_registers
from frontends.julia import UnsupportedJulia, compile_source

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


def test_vector_lanes_are_the_hosts() -> None:
    """Float64 lanes are half the float32 lanes the cpu target's builds use (an
    independent probe of the compiler's -march=native)."""
    lanes64 = float_lanes(compiler()) // 2
    assert _simdlen("vector_lanes(Float64)") == lanes64
    assert _simdlen("2 * vector_lanes(Float64)") == 2 * lanes64
    assert _simdlen("vector_lanes(Float32) ÷ 2") == lanes64
    assert _simdlen("vector_lanes(Float64) + 1 - 1") == lanes64


def test_register_tile_width_from_the_registers() -> None:
    """mm2's column count in kernels.jl: 6 with 16 registers of 4 doubles, 24 with 32 of
    8; whatever the host, the expression is an Int its vectorize takes."""
    regs, lanes64 = vector_registers(compiler()), float_lanes(compiler()) // 2
    want = 3 * regs * lanes64 // 32
    assert want in (6, 24) or lanes64 == 2
    assert _simdlen("3 * vector_registers() * vector_lanes(Float64) ÷ 32", n=96) == want


@pytest.mark.parametrize(("arg", "says"), [
    ("vector_lanes(Foo)", "vector_lanes takes an element type"),
    ("vector_lanes()", "vector_lanes takes 1 argument(s), got 0"),
    ("vector_registers(2)", "vector_registers takes 0 argument(s), got 1"),
    ("2 * n", "schedule argument 2 * n"),
    ("vector_lane(Float64)", "schedule argument vector_lane(Float64)"),
])
def test_mistakes_are_refused_when_the_source_is_compiled(arg: str, says: str) -> None:
    with pytest.raises(UnsupportedJulia, match="line 4") as e:
        compile_source(SRC.replace("ARG", arg), "sc!")
    assert says in str(e.value) and "\n" not in str(e.value)


def test_zero_divisor_is_one_line_at_the_call() -> None:
    k = compile_source(SRC.replace("ARG", "vector_lanes(Float64) ÷ 0"), "sc!")
    with pytest.raises(UnsupportedJulia, match="÷ by zero in a directive argument"):
        k(np.zeros(8), np.zeros(8))
