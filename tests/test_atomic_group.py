"""``comp.atomic(group=...)`` in the Python API: computations whose instances at one point
run as one critical section (passes/critical.py). A per-bin argmax (the largest value of
each bin and its index: two elements that change together) against numpy under serial,
parallel and vector loops; the wire carries the group; what cannot run as one critical
section is refused by name: members that do not run together at each point, a loop over
ranks carrying the group's dependences, a target that prints no lock (fpga, mpi), a bad
name."""

from __future__ import annotations

import numpy as np
import pytest

import middleend as me
from middleend.wire import decode_request, encode_request, pb

N, BINS = 400, 8


def _argmax(schedule: str) -> tuple[me.Function, list[me.Computation]]:
    """``hv[b], hk[b]``: the largest ``w[i]`` of bin ``b = bins[i]`` and its ``i``; at each
    ``i``, ``tv, tk`` compute both new values from the old ones, then ``sv, sk`` store
    them: the four are one group."""
    with me.Function(f"argmax_{schedule}") as f:
        i, b = me.Var("i", 0, N), me.Var("b", 0, BINS)
        w = me.Input("w", [N], me.float32)
        bins = me.Input("bins", [N], me.int32)
        # the sequential program: both initial values, then, at each i in turn, the four
        # (the reads of hv and hk see the previous i's stores)
        hv = me.Computation("hv", [b], -1.0, dtype=me.float32, order="{ hv[b] -> [0, b, 0] }")
        hk = me.Computation("hk", [b], -1, dtype=me.int32, order="{ hk[b] -> [0, b, 1] }")
        k = bins[i]
        better = w[i] > hv.memory[k]
        tv = me.Computation("tv", [i], me.select(better, w[i], hv.memory[k]),
                            dtype=me.float32, order="{ tv[i] -> [1, i, 0] }")
        tk = me.Computation("tk", [i], me.select(better, me.cast(me.int32, i), hk.memory[k]),
                            dtype=me.int32, order="{ tk[i] -> [1, i, 1] }")
        sv = me.Computation("sv", [i], tv[i], dtype=me.float32, order="{ sv[i] -> [1, i, 2] }")
        sk = me.Computation("sk", [i], tk[i], dtype=me.int32, order="{ sk[i] -> [1, i, 3] }")
        sv.store_in(hv, [k])
        sk.store_in(hk, [k])
        group = [tv, tk, sv, sk]
        for c in group:
            c.atomic(group="argmax")
            if schedule == "parallel":
                c.split(i, 16, "io", "ii")
                c.parallelize("io")
            elif schedule == "vector":
                c.vectorize(i, 8)
            elif schedule == "distribute":
                c.distribute(i)
        inner = {"parallel": "ii", "vector": "i_vi"}.get(schedule, "i")
        for a, c in zip(group, group[1:], strict=False):  # at each i, one after the other
            c.after(a, inner)
    return f, [hv, hk]


def _reference(w: np.ndarray, bins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hv, hk = np.full(BINS, -1.0, np.float32), np.full(BINS, -1, np.int32)
    for b in range(BINS):
        idx = np.nonzero(bins == b)[0]
        if idx.size:
            j = idx[np.argmax(w[idx])]
            hv[b], hk[b] = w[j], j
    return hv, hk


@pytest.mark.parametrize("schedule", ["serial", "parallel", "vector"])
def test_per_bin_argmax_matches_numpy(schedule: str, rng: np.random.Generator) -> None:
    f, outs = _argmax(schedule)
    w = rng.permutation(N).astype(np.float32) / N  # distinct: one argmax per bin
    bins = rng.integers(0, BINS, N).astype(np.int32)
    bins[:100] = 3  # a popular bin: many iterations update it at once
    k = f.compile(outputs=outs)
    got = k(w=w, bins=bins)
    hv, hk = _reference(w, bins)
    np.testing.assert_array_equal(got["hv"], hv)
    np.testing.assert_array_equal(got["hk"], hk)
    if schedule != "serial":
        assert k.source.count("me_lock(me_lockp_0);") == 1
        assert k.source.count("me_unlock(me_lockp_0);") == 1


def test_the_wire_carries_the_group() -> None:
    f, outs = _argmax("parallel")
    req = encode_request(f, outputs=["hv", "hk"])
    back, _ = decode_request(pb.Request.FromString(req.SerializeToString()))
    described = [c.describe() for c in back.commands.items]
    assert described == [c.describe() for c in f.commands.items]
    assert "sk.atomic(group='argmax')" in described


def test_what_cannot_be_one_critical_section_is_refused() -> None:
    with me.Function("apart") as f:  # each over all of i in turn: legal, not together
        i = me.Var("i", 0, 8)
        outs = [me.Computation(n, [i], 1, dtype=me.int32) for n in ("a", "b")]
        for c in outs:
            c.atomic(group="g")
    with pytest.raises(me.ScheduleError, match="atomic group 'g' .* do not run one after "
                       "the other at each point, as one critical section needs: a runs "
                       "without b"):
        f.lower(outputs=outs)
    f, outs = _argmax("distribute")
    with pytest.raises(me.ScheduleError, match="tagged distribute and carries the "
                       "dependences of an atomic update"):
        f.lower(outputs=outs)
    with me.Function("bad") as g:
        i = me.Var("i", 0, 4)
        c = me.Computation("c", [i], 1, dtype=me.int32)
        with pytest.raises(me.DefinitionError, match="must be an identifier"):
            c.atomic(group="not a name")
    del g


def test_a_target_without_locks_refuses_the_group() -> None:
    """The fpga and mpi targets print no lock: refused in one line, naming the
    computation (the gpu target's kernels refuse it as the fpga's statements do)."""
    from backends.cpu.cprinter import CPrinter
    from backends.fpga.hls import generate_hls
    from middleend.driver.lowering import lower

    f, outs = _argmax("serial")
    with pytest.raises(me.TargetError, match="'tv' is in an atomic group") as info:
        generate_hls(f.lower(outputs=outs).program)
    assert "\n" not in str(info.value)
    with pytest.raises(me.TargetError, match="'tv' is in an atomic group .* the mpi target "
                       "does not print") as info:
        CPrinter(lower(f, outputs=outs, ranks=2).program)  # a rank's program
    assert "\n" not in str(info.value)
