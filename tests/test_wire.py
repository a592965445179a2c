"""The wire format: stubs up to date, lossless round trips, malformed programs refused with
their field path, and the CLI reading binary and JSON requests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from google.protobuf import json_format

import middleend as me
from backends.cpu import generate_c
from middleend.api import examples as ex
from middleend.driver.lowering import lower
from middleend.ir.errors import InvalidProgramError
from middleend.wire import Limits, decode_request, encode_request, pb

ROOT = Path(__file__).resolve().parents[1]


def test_checked_in_stubs_match_the_proto(tmp_path: Path) -> None:
    """The stubs are checked in; regenerating them must give the same files."""
    pytest.importorskip("grpc_tools", reason="grpcio-tools is in the [test] extra")
    subprocess.run(["bash", str(ROOT / "scripts" / "gen_proto.sh"), str(tmp_path)],
                   check=True, env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"})
    gen = tmp_path / "middleend" / "wire" / "v1"
    names = ["middleend_pb2.py", "middleend_pb2.pyi", "middleend_pb2_grpc.py"]
    for n in names:
        fresh = (gen / n).read_text()
        kept = (ROOT / "middleend" / "wire" / "v1" / n).read_text()
        assert fresh == kept, f"{n} is stale: run scripts/gen_proto.sh"


def _every_command_program() -> me.Function:
    """A program whose log holds one of each command the wire carries."""
    with me.Function("every") as f:
        N = me.Param("N", min=4, max=1 << 20)
        i, j = me.Var("i", 0, N), me.Var("j", 0, N)
        a = me.Input("a", [N, N], me.float32)
        tmp = me.Buffer("tmp", [N, N], me.float32)
        b = me.Computation("b", [i, j], me.select(a[i, j] > 0.5, me.sqrt(a[i, j]),
                                                   -a[i, j] % 3.0))
        c = me.Computation("c", [i, j], b[i, j] * 2 + me.cast(me.float32, (i // 3) % 7),
                           predicate=(i + j) % 2 == 0)
        d = me.Computation("d", [i, j], c[i, j] + 1.0, dtype=me.float64)
        b.store_in(tmp, [i, j])
        b.split(i, 8, "i0", "i1")
        b.interchange("i1", j)
        b.shift(j, 1)
        b.reverse(j)
        c.tile(i, j, 4, 8, "i0", "j0", "i1", "j1")
        c.skew("i0", "j0", 1, "si", "sj")
        c.unroll("j1", 2, "j1o", "j1i")
        c.fuse("j1o", "j1i", "j1f")
        c.vectorize("i1", 4)
        c.parallelize("si")
        c.after(b, me.ROOT)
        d.before(c, me.ROOT)
        c.then(d, me.ROOT)
        d.set_schedule("[N] -> { d[i, j] -> [j, i] }")
        d.gpu("i", "j")  # tags: the cpu target would refuse them
        b.tile_gpu("i0", j, 2, 2, "x0", "y0", "x1", "y1")
        b.distribute("x0")
        b.pipeline("y0", ii=2)
        b.unroll("x1")
        b.storage_fold(0, 2)
        b.allocate_at(c, "si")
        b.compute_at(c, "si")
        b.inline()
        d.atomic()
        d.commute()
        # Layer IV operations, scheduled like computations
        cp = me.copy_at(c, "si", a, "a_tile")
        me.copy_at(d, me.ROOT, a, "a_t", order=(1, 0))  # a transposed copy, once
        me.copy_at(d, me.ROOT, a, "a_p", order=(1, 0), panel=4, along="i")  # in panels
        cp.vectorize("a_tile_1", 4)
        me.barrier_at(c, "si").after(cp, "si")
        tmp.host_to_device().before(b, me.ROOT)
        d.device_to_host(name="d_back")
        r = me.Var("r", 1, 4)
        s = me.send([r], a[r, 0], [1, N], r - 1, ["async", "nonblocking"])
        me.receive([r], tmp[r - 1, 0], [1, N], r, "sync", matching=s, name="recv")
        a.cache_shared_at(c, "si").after(b, me.ROOT)
        b.cache_local_at(d, "j", name="bl")
        tmp.tag_gpu_shared()
        d.tag_gpu_constant()
        d.gpu_threads("i")
        f.operation("a_shared_end").after(c, "si")
        a.distribute(0)  # distribution across ranks (the mpi target)
        me.exchange(c, a, "si")
        a.scatter(root=1).before(b, me.ROOT)
        me.gather(d, name="d_home")
        tmp.partition(1, 4, "cyclic")  # on-chip layout and FIFOs (the fpga target)
        c.stream(depth=4)
        d.line_buffer(c)
        tmp.expand(("i", 2), "j", name="tmp_x")  # array expansion (Layer III)
    return f


def test_every_command_round_trips() -> None:
    f = _every_command_program()
    req = encode_request(f, outputs=["d"])
    kinds = [c.WhichOneof("command") for c in req.function.commands]
    assert set(kinds) == {f.name for f in pb.Command.DESCRIPTOR.oneofs_by_name["command"].fields}
    back, opts = decode_request(pb.Request.FromString(req.SerializeToString()))
    assert [c.describe() for c in back.commands.items] == [c.describe()
                                                           for c in f.commands.items]
    assert opts["outputs"] == ["d"]
    again = encode_request(back, outputs=["d"])
    assert again.SerializeToString(deterministic=True) == \
        req.SerializeToString(deterministic=True)


def test_json_form_round_trips_and_compiles_the_same_c() -> None:
    b = ex.schedule_blur(ex.blur())
    req = encode_request(b.fn)
    text = json_format.MessageToJson(req)
    back = json_format.Parse(text, pb.Request())
    fn, _ = decode_request(back)
    assert generate_c(lower(fn).program) == generate_c(lower(b.fn).program)


def test_wire_program_compiles_and_matches_numpy(rng: np.random.Generator) -> None:
    """A program that only ever existed as a message (edited on the wire) compiles."""
    with me.Function("scale") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        x = me.Input("x", [N], me.float32)
        me.Computation("y", [i], x[i] * 3.0)
    req = encode_request(f)
    # on the wire, multiply by 5 instead of 3
    req.function.computations[0].expression.binary.b.constant.float_value = 5.0
    fn, _ = me.Function.from_request(req)
    k = fn.compile()
    xs = rng.random(37, dtype=np.float32)
    np.testing.assert_allclose(k(x=xs)["y"], xs * 5.0, rtol=1e-6)


def _bad(edit, path_part: str, err: type[Exception] = InvalidProgramError) -> Exception:
    req = encode_request(ex.schedule_blur(ex.blur()).fn)
    edit(req)
    with pytest.raises(err) as ei:
        decode_request(req)
    if isinstance(ei.value, InvalidProgramError):
        assert path_part in ei.value.field_path, ei.value.field_path
    else:
        assert path_part in str(ei.value)
    return ei.value


def test_malformed_programs_name_the_field() -> None:
    c0 = "function.computations[0]"
    _bad(lambda r: setattr(r.function.computations[0], "name", 'a;system("x")'),
         f"{c0}.name")
    _bad(lambda r: setattr(r.function.computations[0], "domain", "{ bx[i, j, c] : "),
         f"{c0}.domain")
    _bad(lambda r: setattr(r.function.computations[0], "domain",
                           "[K] -> { bx[i, j, c] : 0 <= i < K }"), f"{c0}.domain")
    _bad(lambda r: setattr(r.function.commands[0], "computation", "nope"),
         "function.commands[0].computation")
    _bad(lambda r: r.function.computations[1].expression.binary.a.binary.a.binary.a.access
         .__setattr__("target", "ghost"), "computations[1].expression.binary.a.binary.a")
    _bad(lambda r: r.function.computations[0].expression.binary.b.constant
         .__setattr__("type", 77), "expression.binary.b.constant.type")
    _bad(lambda r: r.function.params[0].__setattr__("name", "for"), "function.params[0]")
    _bad(lambda r: r.function.commands[0].ClearField("command"), "function.commands[0]")

    def bad_types(r: pb.Request) -> None:  # an add of float32 and int32 operands
        r.function.computations[0].expression.binary.b.constant.type = pb.INT32
        r.function.computations[0].expression.binary.b.constant.int_value = 3

    e = _bad(bad_types, "computations[0].expression")
    assert "int32" in str(e) and "float32" in str(e)

    def big(r: pb.Request) -> None:
        names = ", ".join(f"x{k}" for k in range(40))
        r.function.computations[0].domain = f"{{ bx[{names}] }}"

    _bad(big, "computations[0].domain", me.ResourceLimitError)


def test_loop_names_are_checked_like_other_names() -> None:
    with me.Function("n") as f:
        N = me.Param("N")
        i = me.Var("i", 0, N)
        c = me.Computation("c", [i], i * 2)
        with pytest.raises(me.DefinitionError, match="invalid loop name"):
            c.split(i, 4, "i0*/", "i1")
    assert f.commands.items == []


def test_limits_cap_the_expression_size() -> None:
    req = encode_request(ex.blur().fn)
    with pytest.raises(me.ResourceLimitError, match="nodes"):
        decode_request(req, Limits(max_expr_nodes=5))


def test_cli_compiles_json_and_binary_programs(tmp_path: Path) -> None:
    env_py = [sys.executable, "-m", "middleend"]
    prog = tmp_path / "blur.json"
    subprocess.run([*env_py, "example", "blur", "-o", str(prog)], check=True)
    binary = tmp_path / "blur.bin"
    binary.write_bytes(json_format.Parse(prog.read_text(), pb.Request()).SerializeToString())
    for p, out in ((prog, tmp_path / "a"), (binary, tmp_path / "b")):
        r = subprocess.run([*env_py, "compile", str(p), "--target", "cpu", "-o", str(out)],
                           capture_output=True, text=True, check=True)
        assert "int me_blur(" in r.stdout
        assert {q.name for q in out.iterdir()} == {"libblur.so", "blur.h", "blur.c",
                                                   "blur.log", "entry_point.json"}
    assert (tmp_path / "a" / "libblur.so").read_bytes() == \
        (tmp_path / "b" / "libblur.so").read_bytes()
    r = subprocess.run([*env_py, "layers", str(prog)], capture_output=True, text=True,
                       check=True)
    assert "== Layer IV" in r.stdout and "bx[" in r.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(prog.read_text().replace('"bx"', '"b;x"', 1))
    r = subprocess.run([*env_py, "check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "InvalidProgramError" in r.stderr


def test_skipping_the_check_is_reported_as_a_warning() -> None:
    b = ex.blur()
    b.by.after(b.bx, "i")  # illegal: by reads rows of bx not yet computed
    k = b.fn.compile(check_legality=False)
    assert [d.kind for d in k.diagnostics] == [pb.UNCHECKED_SCHEDULE]
    assert k.diagnostics[0].severity == pb.WARNING
    # Check always checks, whatever the request says
    from middleend.service.client import EmbeddedClient

    req = encode_request(b.fn, check_legality=False)
    with EmbeddedClient() as client, pytest.raises(me.ScheduleError):
        client.check(req)


def test_round_trip_harness_catches_a_lossy_wire(monkeypatch: pytest.MonkeyPatch) -> None:
    """conftest.py checks every compile of the suite for a lossless wire trip; a decoder
    that drops a command must trip it."""
    from middleend.wire import decode

    command = decode._Decoder.command

    def lossy(self: decode._Decoder, m: pb.Command, path: str) -> None:
        if m.WhichOneof("command") != "parallelize":
            command(self, m, path)

    monkeypatch.setattr(decode._Decoder, "command", lossy)
    b = ex.schedule_blur(ex.blur(), ti=24, tj=72)  # a program no other test compiles
    with pytest.raises(AssertionError, match="wire changed the C"):
        b.fn.compile()
