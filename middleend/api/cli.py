"""The ``middleend`` command: serve, compile, check, layers, and example programs.

``PROGRAM`` is a serialized ``middleend.v1.Request`` (binary, or the proto's JSON form),
so tools that are not written in Python can compile remotely: write the request, run
``middleend compile PROGRAM --service host:port -o DIR``, load ``DIR/lib<name>.so``.

Every mistake a user can make (a missing file, a malformed program, an illegal schedule,
an address in use, a cap) ends in one line on stderr and a non-zero exit, never a
traceback; ``-v`` logs the phases of a compile with their times as they run. Every
command that lowers (compile, layers, check, plot) shows a progress bar naming the phase
that just ended while stderr is a terminal (:mod:`.progress`), nothing in a pipe or a log.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from ..ir.errors import MiddleEndError
from ..ir.function import Function
from ..wire.v1 import middleend_pb2 as pb

_log = logging.getLogger("middleend.cli")


def read_program(path: str) -> pb.Request:
    """A Request from a file (``-`` for stdin): JSON when it starts with ``{``."""
    data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    if data.lstrip()[:1] == b"{":
        try:
            return json_format.Parse(data.decode(), pb.Request())
        except json_format.ParseError as e:
            raise SystemExit(f"middleend: {path}: not a middleend.v1.Request in JSON: {e}"
                             ) from None
    try:
        return pb.Request.FromString(data)
    except DecodeError as e:
        raise SystemExit(f"middleend: {path}: not a binary middleend.v1.Request: {e}"
                         ) from None


def _client(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from ..service.client import EmbeddedClient, connect

    if args.service:
        return connect(args.service, tls_ca=args.tls_ca)
    return EmbeddedClient()


def _option_value(target: str, text: str) -> tuple[str, object]:
    """``name=value`` of ``--option``, the value converted to the option's declared type."""
    from ..driver.targets import TargetRegistry

    name, sep, value = text.partition("=")
    if not sep or not name:
        raise SystemExit(f"middleend: --option expects name=value, got {text!r}")
    known = {o.name: o for o in TargetRegistry.discover().lookup(target).options}
    opt = known.get(name)
    if opt is None:
        raise SystemExit(f"middleend: target {target!r} has no option {name!r} (its options: "
                         f"{', '.join(known) or 'none'})")
    if target == "mpi" and name == "ranks" and value == "runtime":
        return name, value  # the number of ranks read at run time (not an int)
    if opt.type is bool:
        low = value.lower()
        if low not in ("true", "false", "1", "0", "yes", "no"):
            raise SystemExit(f"middleend: option {name!r} takes true or false, got {value!r}")
        return name, low in ("true", "1", "yes")
    try:
        return name, opt.type(value)
    except ValueError:
        raise SystemExit(f"middleend: option {name!r} takes a {opt.type.__name__}, got "
                         f"{value!r}") from None


def _set_schedule(req: pb.Request, args: argparse.Namespace) -> None:
    """``--auto-schedule``, ``--estimates`` and ``--budget`` into the request's options."""
    if not args.auto_schedule:
        if args.estimates or args.budget is not None:
            raise SystemExit(f"middleend {args.command}: --estimates and --budget are for "
                             "--auto-schedule")
        return
    req.options.auto_schedule = True
    for name, value in _param_values(args.estimates or [], "--estimates").items():
        req.options.estimates[name] = value
    if args.budget is not None:
        req.options.auto_schedule_budget_s = args.budget


def _set_target(req: pb.Request, target: str | None, options: list[str]) -> None:
    from ..wire.encode import encode_target

    if target is None and not options:
        return
    name = target or (req.target.WhichOneof("target") or "cpu")
    req.target.Clear()
    encode_target(name, dict(_option_value(name, o) for o in options), req.target)


@contextmanager
def _watched(args: argparse.Namespace, program: str) -> Iterator[None]:
    """A one-item progress bar over the block (a lowering of seconds, for a big program),
    on a terminal only and not with -q or -v, as compile's; it names the phase that just
    ended, so a long loop AST build is seen to progress."""
    from .progress import bar, wanted

    with bar(1, sys.stderr, wanted(sys.stderr, args.quiet or args.verbose)) as b:
        b.start(program)
        yield
        b.advance()


def cmd_compile(args: argparse.Namespace) -> int:
    """One program's artifact goes to ``-o DIR``; with several, each goes to
    ``DIR/<its file's stem>``, under a progress bar on a terminal (not with -q or -v)."""
    from .progress import bar, wanted

    programs = list(args.program)
    outs = ([Path(args.output)] if len(programs) == 1 else
            [Path(args.output) / _stem(p) for p in programs])
    if len(set(outs)) != len(outs):
        raise SystemExit("middleend compile: two programs have the same file name; each "
                         "one's artifact goes to -o DIR/<name>")
    with bar(len(programs), sys.stderr, wanted(sys.stderr, args.quiet or args.verbose)
             ) as b, _client(args) as client:
        for k, (program, out) in enumerate(zip(programs, outs, strict=True)):
            b.start(program)
            try:
                req = read_program(program)
                _set_target(req, args.target, args.option or [])
                _set_schedule(req, args)
                b.echo(_compile_one(args, client, req, out))
            except (MiddleEndError, OSError) as e:
                if len(programs) == 1:
                    raise
                why = (f"{type(e).__name__}: {e}" if isinstance(e, MiddleEndError)
                       else e.strerror or str(e))
                raise SystemExit(f"middleend compile: {program} ({k + 1} of "
                                 f"{len(programs)}; the ones before it are written): "
                                 f"{why}") from None
            b.advance()
    return 0


def _stem(program: str) -> str:
    return "stdin" if program == "-" else Path(program).name.split(".")[0] or "program"


def _compile_one(args: argparse.Namespace, client, req: pb.Request,  # type: ignore[no-untyped-def]
                 out: Path) -> str:
    """Compile ``req`` into ``out``; returns what to tell the user."""
    resp = client.compile(req)
    if args.service:  # the phases ran there: log the times the response brought back
        for t in resp.timings:
            _log.info("phase %s (at %s): %.1f ms", t.phase, args.service, t.seconds * 1e3)
    out.mkdir(parents=True, exist_ok=True)
    for f in resp.artifact.files:
        name = Path(f.name).name  # never a path from the response
        (out / name).write_bytes(f.content)
    ep = json_format.MessageToDict(resp.artifact.entry_point)
    (out / "entry_point.json").write_text(json.dumps(ep, indent=2) + "\n")
    chosen = ""
    if resp.HasField("auto_schedule"):
        (out / "auto_schedule.py").write_text(resp.auto_schedule.python + "\n")
        chosen = resp.auto_schedule.report + f"\n(as Python on f: {out / 'auto_schedule.py'})\n"
    return (f"{chosen}{resp.artifact.entry_point.c_declaration}\n"
            f"wrote {len(resp.artifact.files) + 1} files to {out} (cache "
            f"{'hit' if resp.cache_hit else 'miss'}, key {resp.cache_key[:16]})")


def cmd_layers(args: argparse.Namespace) -> int:
    from ..driver.layers import format_layers

    req = read_program(args.program)
    _set_target(req, args.target, args.option or [])
    _set_schedule(req, args)
    with _watched(args, args.program), _client(args) as client:
        resp = client.lower(req)
    if resp.HasField("auto_schedule"):
        print(resp.auto_schedule.report)
    ly = resp.layers
    print(format_layers((ly.layer1, ly.layer2, ly.layer3, ly.layer4)))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    req = read_program(args.program)
    _set_target(req, args.target, args.option or [])
    _set_schedule(req, args)
    with _watched(args, args.program), _client(args) as client:
        client.check(req)
    print("legal")
    return 0


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def _param_values(items: list[str], flag: str = "--params") -> dict[str, int]:
    """``--params N=8,M=6`` (repeatable) as a dict of ints."""
    out: dict[str, int] = {}
    for item in (x for text in items for x in text.split(",") if x.strip()):
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise SystemExit(f"middleend: {flag} expects NAME=INT, got {item!r}")
    return out


def cmd_plot(args: argparse.Namespace) -> int:
    """Pictures of the layers: each computation's domain and time-space, to SVG or PNG."""
    from .function import Function as ApiFunction
    from .plot import check_path

    check_path(args.output)  # a wrong file type is said before any work
    fn, _ = ApiFunction.from_request(read_program(args.program))
    with _watched(args, args.program):
        result = fn.plot(args.output, params=_param_values(args.params or []),
                         computations=_names(args.computations), dims=_names(args.dims),
                         loops=_names(args.loops), max_points=args.max_points,
                         together=args.together, max_isl_ops=args.max_isl_ops)
    print(result.summary())
    return 0


def _blur_gpu() -> Function:
    from .examples import blur
    from .examples_gpu import schedule_blur_gpu

    return schedule_blur_gpu(blur()).fn


def _matmul_gpu() -> Function:
    from .examples import matmul
    from .examples_gpu import schedule_matmul_gpu

    return schedule_matmul_gpu(matmul()).fn


def _blur_cpu() -> Function:
    from .examples import blur, schedule_blur

    return schedule_blur(blur()).fn


def _heat2d() -> Function:
    from .examples import heat2d

    return heat2d().fn


def _sgemm() -> Function:
    from .examples import sgemm_packed

    return sgemm_packed(256)


# the programs `middleend example` writes (the gpu ones for `--target gpu`)
_EXAMPLES: dict[str, Callable[[], Function]] = {
    "blur": _blur_cpu, "heat2d": _heat2d, "sgemm": _sgemm, "blur_gpu": _blur_gpu,
    "matmul_gpu": _matmul_gpu}


def cmd_example(args: argparse.Namespace) -> int:
    from ..wire import encode_request

    fn = _EXAMPLES[args.name]()
    req = encode_request(fn)
    if args.format == "json":
        data = json_format.MessageToJson(req).encode() + b"\n"
    else:
        data = req.SerializeToString()
    if args.output == "-":
        sys.stdout.buffer.write(data)
    else:
        Path(args.output).write_bytes(data)
    return 0


def cmd_targets(args: argparse.Namespace) -> int:
    """Every registered target, whether it can build here, and what it honours."""
    from ..driver.targets import TargetRegistry

    for st in TargetRegistry.discover().statuses():
        state = "available" if st.available else "unavailable"
        print(f"{st.name:<6} {state:<12} {st.summary}")
        print(f"{'':<6} {'':<12} {st.detail}")
        if args.verbose:
            print(f"{'':<19}tags: {', '.join(st.tags) or '-'}; operations: "
                  f"{', '.join(st.operations) or '-'}; options: {', '.join(st.options) or '-'}")
    return 0


def _token(token_file: str | None) -> str | None:
    """The token from --token-file, else $MIDDLEEND_TOKEN, else None (no auth). A token
    source that is given but missing, unreadable or empty refuses to start: silently
    serving without auth is the one outcome the operator did not ask for."""
    if token_file is None:
        env = os.environ.get("MIDDLEEND_TOKEN")
        if env is not None and not env.strip():
            raise SystemExit("middleend serve: $MIDDLEEND_TOKEN is set but empty (unset it "
                             "to serve without a token on loopback)")
        return env.strip() if env is not None else None
    try:
        token = Path(token_file).read_text().strip()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise SystemExit(f"middleend serve: --token-file {token_file}: {why}") from None
    if not token:
        raise SystemExit(f"middleend serve: --token-file {token_file} is empty (a token is "
                         "required)")
    return token


def cmd_serve(args: argparse.Namespace) -> int:
    from ..service.admission import AdmissionConfig
    from ..service.core import ServiceConfig
    from ..service.server import Server, ServerConfig, serve
    from ..wire import Limits

    token = _token(args.token_file)
    cert = Path(args.tls_cert).read_bytes() if args.tls_cert else None
    key = Path(args.tls_key).read_bytes() if args.tls_key else None
    limits = Limits(max_computations=args.max_computations, max_dims=args.max_dims,
                    max_commands=args.max_commands, max_expr_nodes=args.max_expr_nodes,
                    max_schedule_dims=args.max_schedule_dims)
    sc = ServiceConfig(cache_dir=Path(args.cache_dir) if args.cache_dir else None,
                       cache_max_bytes=args.cache_max_bytes, workers=args.workers,
                       max_isl_ops=args.max_isl_ops, limits=limits,
                       default_timeout=args.default_timeout, max_timeout=args.max_timeout,
                       admission=AdmissionConfig(args.reserved_workers, args.heavy_queue,
                                                 args.heavy_wait))
    if not 0 < sc.default_timeout <= sc.max_timeout:
        raise SystemExit("middleend serve: need 0 < --default-timeout <= --max-timeout, got "
                         f"{sc.default_timeout:g} and {sc.max_timeout:g}")
    _check_address(args.host, args.port)
    stop = Server.catch_stop_signals()
    try:
        server = serve(ServerConfig(args.host, args.port, token, cert, key,
                                    max_message_bytes=args.max_message_bytes,
                                    max_inflight_bytes=args.max_inflight_bytes,
                                    max_concurrent_rpcs=args.max_concurrent_rpcs), sc)
    except (ValueError, OSError) as e:
        raise SystemExit(f"middleend serve: {e}") from None
    except RuntimeError as e:  # gRPC could not bind after all (a race with another server)
        raise SystemExit(f"middleend serve: cannot listen on {args.host}:{args.port}: "
                         f"{str(e).split(';')[0]}") from None
    print(f"middleend serving on {args.host}:{server.port} ({args.workers} workers)",
          flush=True)
    server.wait(stop)
    return 0


_DESCRIPTION = """\
The polyhedral middle-end's command line: compile programs, check a schedule, print or
draw a program's layers, write the papers' programs as requests, list the targets, serve
the gRPC middle-end. A PROGRAM is a serialized middleend.v1.Request (binary, or the proto's JSON
form, as 'middleend example blur' writes it)."""


def _count(text: str) -> int:
    """A non-negative int option (a cap, a size, a number of workers)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {v}")
    return v


def _port(text: str) -> int:
    v = _count(text)
    if v > 65535:
        raise argparse.ArgumentTypeError(f"a TCP port is at most 65535, got {v}")
    return v


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {v:g}")
    return v


def _check_address(host: str, port: int) -> None:
    """Refuse an address that cannot be listened on (in use, not this machine's) before
    gRPC tries, which reports it with a traceback-sized message."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise SystemExit(f"middleend serve: cannot resolve --host {host!r}: {e.strerror}"
                         ) from None
    family, kind, proto, _, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as e:
            hint = (" (is another server running? choose another --port, or 0 for a free "
                    "one)" if e.errno == errno.EADDRINUSE else "")
            raise SystemExit(f"middleend serve: cannot listen on {host}:{port}: "
                             f"{e.strerror or e}{hint}") from None


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage mistake said in one line (the usage is one --help away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    from ..driver.lowering import DEFAULT_MAX_OPS
    from ..version import __version__
    from ..wire import Limits

    p = _Parser(prog="middleend", description=_DESCRIPTION)
    p.add_argument("--version", action="version", version=f"middleend {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def remote(sp: argparse.ArgumentParser, many: bool = False) -> None:
        sp.add_argument("program", nargs="+" if many else None,
                        help="a serialized middleend.v1.Request (binary or JSON; - reads "
                             "stdin)" + ("; several compile one after the other" if many
                                         else ""))
        sp.add_argument("--service", metavar="HOST:PORT",
                        help="a running 'middleend serve' (default: the embedded "
                             "middle-end, in this process)")
        sp.add_argument("--tls-ca", metavar="PEM", help="CA certificate to trust (enables "
                                                        "TLS to --service)")
        watched(sp)

    def watched(sp: argparse.ArgumentParser, service: bool = True) -> None:
        sp.add_argument("-v", "--verbose", action="store_true",
                        help="log each phase with its time, as it runs" +
                             (" (passes run in this process only without --service)"
                              if service else ""))
        sp.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (it is drawn only when stderr is a terminal, "
                             "and not with -v)")

    def targeted(sp: argparse.ArgumentParser) -> None:
        # layers and check too: a GPU schedule's tags are the gpu target's, so 'middleend
        # example blur_gpu' is lowered and checked as the gpu target lowers it
        sp.add_argument("--target", default=None,
                        help="a registered target (as 'middleend targets' lists them); "
                             "default: the request's own, else cpu")
        sp.add_argument("-O", "--option", action="append", metavar="NAME=VALUE",
                        help="a target option, e.g. fp_contract=true (repeatable)")
        sp.add_argument("--auto-schedule", action="store_true",
                        help="schedule the program automatically (every statement without "
                             "loop commands of its own) before lowering; prints what it chose")
        sp.add_argument("--estimates", action="append", metavar="NAME=INT[,NAME=INT]",
                        help="parameter values for the auto-scheduler's cost model")
        sp.add_argument("--budget", type=_seconds, default=None, metavar="SECONDS",
                        help="seconds the auto-scheduler's search may take")

    c = sub.add_parser("compile", help="compile programs and write their artifacts")
    remote(c, many=True)
    targeted(c)
    c.add_argument("-o", "--output", required=True,
                   help="directory for the artifact (with several programs, one "
                        "subdirectory each, named after the file)")
    c.set_defaults(run=cmd_compile)
    ly = sub.add_parser("layers", help="print Layers I-IV of a program")
    remote(ly)
    targeted(ly)
    ly.set_defaults(run=cmd_layers)
    ch = sub.add_parser("check", help="check a program's schedule (exit 1 if illegal)")
    remote(ch)
    targeted(ch)
    ch.set_defaults(run=cmd_check)
    pl = sub.add_parser("plot", help="draw each computation's iteration domain and "
                                     "time-space (tiles, tags, flow dependences)")
    pl.add_argument("program", help="a serialized middleend.v1.Request (binary or JSON; - "
                                    "reads stdin)")
    pl.add_argument("-o", "--output", required=True, help="the picture: a .svg or .png file")
    pl.add_argument("--params", action="append", metavar="NAME=INT[,NAME=INT]",
                    help="a value for every parameter, e.g. N=8,M=8 (repeatable)")
    pl.add_argument("--computations", metavar="A,B", help="the computations to draw "
                                                          "(default: all)")
    pl.add_argument("--dims", metavar="I,J", help="the two domain dims to project on "
                                                  "(default: the two innermost)")
    pl.add_argument("--loops", metavar="I0,J", help="the time-space loops of the Layer II "
                                                    "panel (default: the same dims' axes)")
    pl.add_argument("--max-points", type=_count, default=4096,
                    help="most points enumerated per set (default 4096)")
    pl.add_argument("--together", action="store_true",
                    help="also draw all of them in one time-space, with the dependences "
                         "between them (a producer computed per tile appears in each)")
    pl.add_argument("--max-isl-ops", type=_count, default=DEFAULT_MAX_OPS,
                    help=f"ISL operations the lowering and the pictures may take (default "
                         f"{DEFAULT_MAX_OPS:.0e}, $MIDDLEEND_ISL_MAX_OPS)")
    watched(pl, service=False)
    pl.set_defaults(run=cmd_plot)
    ex = sub.add_parser("example", help="write one of the papers' programs as a request")
    ex.add_argument("name", choices=tuple(_EXAMPLES), help="which program")
    ex.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    ex.add_argument("--format", choices=("json", "binary"), default="json",
                    help="the proto's JSON form (default) or its binary form")
    ex.set_defaults(run=cmd_example)
    t = sub.add_parser("targets", help="list the targets and whether they can build here")
    t.add_argument("-v", "--verbose", action="store_true",
                   help="also list each target's loop tags, operations and options")
    t.set_defaults(run=cmd_targets)
    s = sub.add_parser("serve", help="run the gRPC middle-end",
                       description="Serve Compile, Check and Lower over gRPC (with health "
                                   "checking and reflection) until interrupted.")
    workers = max(1, os.cpu_count() or 1)
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; any "
                        "other address needs a token)")
    s.add_argument("--port", type=_port, default=50051,
                   help="TCP port (default 50051; 0 picks a free one and prints it)")
    s.add_argument("--workers", type=_count, default=workers,
                   help=f"worker processes that lower and build, one request each "
                        f"(default {workers}, the CPUs here)")
    s.add_argument("--cache-dir", help="artifact cache (default $MIDDLEEND_CACHE_DIR/artifacts)")
    s.add_argument("--cache-max-bytes", type=_count, default=1 << 30,
                   help="size the cache is kept under, least recently used entries going "
                        "first (default 1 GiB)")
    s.add_argument("--max-isl-ops", type=_count, default=DEFAULT_MAX_OPS,
                   help=f"ISL operations one request may take before RESOURCE_EXHAUSTED "
                        f"(default {DEFAULT_MAX_OPS:.0e}, $MIDDLEEND_ISL_MAX_OPS)")
    s.add_argument("--max-message-bytes", type=_count, default=16 << 20,
                   help="largest request accepted, in bytes (default 16 MiB)")
    s.add_argument("--max-inflight-bytes", type=int, default=256 << 20,
                   help="request bytes handled at once; more wait (0: no cap)")
    s.add_argument("--max-concurrent-rpcs", type=_count, default=256,
                   help="calls admitted at once, running or waiting for a handler thread; "
                        "more get RESOURCE_EXHAUSTED at once (0: no cap)")
    caps = Limits()
    s.add_argument("--max-computations", type=_count, default=caps.max_computations,
                   help=f"computations per request (default {caps.max_computations})")
    s.add_argument("--max-dims", type=_count, default=caps.max_dims,
                   help=f"dimensions per domain or buffer (default {caps.max_dims})")
    s.add_argument("--max-commands", type=_count, default=caps.max_commands,
                   help=f"schedule commands per request (default {caps.max_commands})")
    s.add_argument("--max-expr-nodes", type=_count, default=caps.max_expr_nodes,
                   help=f"expression nodes per request (default {caps.max_expr_nodes})")
    s.add_argument("--max-schedule-dims", type=_count, default=caps.max_schedule_dims,
                   help="time dimensions of a set_schedule or order map (default "
                        f"{caps.max_schedule_dims})")
    s.add_argument("--reserved-workers", type=int, default=None,
                   help="workers heavy requests never take (default: a quarter, at least 1 "
                        "with 2+ workers)")
    s.add_argument("--heavy-queue", type=int, default=4,
                   help="heavy requests that may wait for a worker at once; more are refused")
    s.add_argument("--heavy-wait", type=float, default=30.0,
                   help="seconds a heavy request waits for a worker before it is refused")
    s.add_argument("--default-timeout", type=_seconds, default=600.0,
                   help="seconds a request may take when its client sets no deadline "
                        "(default 600)")
    s.add_argument("--max-timeout", type=_seconds, default=3600.0,
                   help="a longer client deadline is cut to this, in seconds (default 3600)")
    s.add_argument("--token-file", help="file holding the token clients must send "
                                        "(default $MIDDLEEND_TOKEN)")
    s.add_argument("--tls-cert", metavar="PEM", help="certificate (with --tls-key: serve TLS)")
    s.add_argument("--tls-key", metavar="PEM", help="private key of --tls-cert")
    s.set_defaults(run=cmd_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    verbose = getattr(args, "verbose", False) and args.command != "targets"
    log = logging.getLogger("middleend")
    handler, level = logging.StreamHandler(sys.stderr), log.level
    handler.setFormatter(logging.Formatter("middleend: %(message)s"))
    if verbose:
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    try:
        return int(args.run(args))
    except MiddleEndError as e:
        print(f"middleend {args.command}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a missing or unreadable file, an address in use
        where = f": {e.filename}" if getattr(e, "filename", None) else ""
        print(f"middleend {args.command}: {e.strerror or e}{where}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"middleend {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        if verbose:
            log.removeHandler(handler)
            log.setLevel(level)


if __name__ == "__main__":
    sys.exit(main())
