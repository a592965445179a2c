"""The Python end of the juliacall/PythonCall path: ``Acc.jl``'s ``@acc`` sends the
function's ``Expr`` (as JSON, :mod:`.fromjson`) and its argument types and shapes; this
compiles it through the wire format like every other front-end and answers with what
Julia's ``ccall`` needs: the shared object, the symbol, and how each C argument comes from
the Julia arguments. Nothing here runs Julia; the contract is tested from Python, the
Julia side where a Julia runtime exists."""

from __future__ import annotations

import json
from typing import Any

from frontends.julia.api import JuliaKernel
from frontends.julia.errors import JuliaFrontendError
from frontends.julia.fromjson import function_from_json
from frontends.julia.jast import Return
from frontends.julia.jtypes import JULIA_NAME, arg_type, parse_type_text
from frontends.julia.translate import Spec
from middleend.target.kernel import RC_MESSAGES


def spec_of(fn_args: int, arg_types: list[str], arg_values: list[Any]) -> Spec:
    """``arg_values[k]``: the sizes of an array argument (Julia order), the value of an Int
    argument, or None (a float/Bool scalar)."""
    if len(arg_types) != fn_args or len(arg_values) != fn_args:
        raise JuliaFrontendError(f"{len(arg_types)} argument types and {len(arg_values)} "
                                 f"values for a function of {fn_args} arguments")
    types, sizes, ints = [], [], []
    for k, (t, v) in enumerate(zip(arg_types, arg_values, strict=True)):
        at = arg_type(parse_type_text(t), 0, f"argument {k + 1}")
        types.append(at)
        if at.ndim:
            if not isinstance(v, list) or len(v) != at.ndim or \
                    not all(isinstance(s, int) and s >= 0 for s in v):
                raise JuliaFrontendError(f"argument {k + 1} ({t}): expected its {at.ndim} "
                                         f"sizes, got {v!r}")
            sizes.append(tuple(v))
            ints.append(None)
        else:
            sizes.append(None)
            ints.append(int(v) if at.elem.is_int and v is not None else None)
    return Spec(tuple(types), tuple(sizes), tuple(ints))


def compile_for_julia(expr_json: str, arg_types: list[str], target: str = "cpu",
                      use_schedule: bool = True, arg_values: str = "null") -> str:
    """Compile the serialized ``@acc`` function for these arguments; returns JSON::

        {"library": "/abs/kernel.so", "symbol": "me_bicg", "params": [],
         "buffers": [{"arg": 1, "eltype": "Float64", "scalar": false}, ...],
         "messages": {"1": "...", "2": "..."}}

    ``buffers`` lists the C pointer arguments in order, each the Julia argument ``arg``
    (1-based): an array passed as is (column-major, in place), or with ``scalar`` a
    one-element array holding a Float/Bool argument. Int arguments are compiled in as
    constants (the kernel is specialized on them and on the array sizes, which
    ``arg_values``, a JSON list, gives), so ``params`` is empty."""
    fn = function_from_json(expr_json)
    last = fn.body[-1] if fn.body else None
    if isinstance(last, Return) and last.value is not None:
        raise JuliaFrontendError(f"{fn.name}, line {last.line}: `return` of a value is "
                                 "translated by compile_source only: Acc.jl's kernels return "
                                 "nothing (write the result into an array argument)")
    values = json.loads(arg_values)
    if values is None:
        raise JuliaFrontendError("arg_values: the array sizes and Int values are required")
    spec = spec_of(len(fn.args), list(arg_types), values)
    k = JuliaKernel(fn, target=target, use_schedule=use_schedule)
    c = k.compiled(spec)
    sig = c.kernel.signature
    by_name = {b: a for a, b in c.built.buffer_of_arg.items()}
    bufs = []
    for b in sig.arguments:
        a = by_name.get(b.name)
        if a is None:
            raise JuliaFrontendError(f"kernel argument {b.name!r} is not a Julia argument")
        t = spec.types[a]
        bufs.append({"arg": a + 1, "eltype": JULIA_NAME[t.elem.name], "scalar": t.ndim == 0})
    name = sig.name
    return json.dumps({
        "library": str(c.kernel.library_path), "symbol": sig.symbol,
        "params": [{"name": p, "from": None} for p in sig.params],
        "buffers": bufs,
        "messages": {str(rc): m.format(name=name) for rc, m in RC_MESSAGES.items()},
    })
