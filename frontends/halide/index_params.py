"""Which scalar Params of a Halide pipeline are constants of a build: those that decide
bounds (an index, an RDom bound, a ``bound()``, a split factor, an integer predicate). The
build is specialized on their values, so bounds inference sees constants, as Halide's runs
with the values at hand; every other Param is a value argument of the kernel (one build for
all its values). Kept apart from :mod:`.translate`, which is long enough without it."""

from __future__ import annotations

from frontends.halide.graph import definitions, exprs_of, walk
from frontends.halide.hir import HDefinition, HExpr, HPipeline
from frontends.halide.specialize import schedules


def index_params(hp: HPipeline, order: list[str]) -> set[str]:
    """Scalar Params whose value decides bounds: used in an index (the arguments of a Func or
    image call, a left-hand side), an RDom bound, a ``bound()`` or a split factor, or (integer
    Params) a predicate. The build is specialized on their values, so bounds inference sees
    constants, as Halide's runs with the values at hand. Every other Param is a value: a
    scalar argument of the kernel, one build for all its values."""
    types = {p.name: p.type for p in hp.external_parameters if not p.is_buffer}
    out: set[str] = set()

    def add(roots: list[HExpr], lets: dict[str, set[str]], ints_only: bool = False) -> None:
        for root in roots:
            for n in walk(root):
                if n.kind != "Variable":
                    continue
                if n.param_name and n.name == n.param_name:
                    t = types.get(n.name)
                    if not ints_only or (t is not None and t.code in ("int", "uint")):
                        out.add(n.param_name)
                out.update(lets.get(n.name, ()))

    for name in order:
        f = hp.func(name)
        for b in f.schedule.bounds:
            add([e for e in (b.min, b.extent) if e is not None], {})
        for d in definitions(f):
            lets = _let_params(d)
            roots: list[HExpr] = list(d.args)
            roots.extend(e for rv in d.schedule.rvars for e in (rv.min, rv.extent))
            roots.extend(sp.factor for sch in schedules(d) for sp in sch.splits
                         if sp.factor is not None)
            for v in (*d.values, *d.args):
                roots.extend(a for n in walk(v) if n.kind == "Call"
                             and n.call_type in ("Halide", "Image") for a in n.args)
            add(roots, lets)
            if d.predicate is not None:
                add([d.predicate], lets, ints_only=True)
    return out


def _let_params(d: HDefinition) -> dict[str, set[str]]:
    """The scalar Params each Let-bound name of a definition stands for (an index that reads
    a Let reads the Params of its value)."""
    direct: dict[str, set[str]] = {}
    for root in exprs_of(d):
        for n in walk(root):
            if n.kind == "Let":
                direct.setdefault(n.name, set()).update(
                    m.param_name if m.param_name and m.name == m.param_name else "let:" + m.name
                    for m in walk(n.args[0]) if m.kind == "Variable")
    out: dict[str, set[str]] = {}

    def close(name: str, seen: set[str]) -> set[str]:
        got: set[str] = set()
        for v in direct.get(name, ()):
            if not v.startswith("let:"):
                got.add(v)
            elif v[4:] not in seen:
                got |= close(v[4:], seen | {v[4:]})
        return got

    for name in direct:
        out[name] = close(name, {name})
    return out
