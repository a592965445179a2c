"""``me.Function``: a Layer I program with its schedule, and the verbs that act on it as a
whole (lower, print the layers, compile for a target).

The records and the scheduling language live in the IR (:mod:`middleend.ir.function`);
this class adds the verbs that need the lowering pipeline and the service, which is why it
sits at the top of the package: nothing below imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..driver.lowering import Lowered, lower
from ..ir.errors import DefinitionError
from ..ir.function import Function as FunctionRecord
from ..service.client import compile_via
from ..wire.decode import Limits, decode_request

if TYPE_CHECKING:  # the pictures load matplotlib: only when one is drawn
    from ..autosched import AutoSchedule
    from .plot import PlotResult


class Function(FunctionRecord):
    """A compilation unit (``with me.Function("blur") as f:``): its params, buffers,
    computations, Layer IV operations and the ordered command log."""

    @classmethod
    def from_request(cls, req: Any, limits: Limits | None = None
                     ) -> tuple[Function, dict[str, Any]]:
        """The Function a wire-format ``Request`` carries (checked as the service checks
        it) and the request's compile options."""
        fn, opts = decode_request(req, limits, function_class=cls)
        return fn, opts  # type: ignore[return-value]

    def lower(self, outputs: Sequence[Any] | None = None, check_legality: bool = True
              ) -> Lowered:
        """Lower through the four layers (target-independent); returns the
        :class:`~middleend.driver.lowering.Lowered` program."""
        return lower(self, outputs=outputs, check_legality=check_legality)

    def layers(self, outputs: Sequence[Any] | None = None) -> str:
        """Layers I-IV in the ISL notation of the papers."""
        return self.lower(outputs=outputs).layers_text()

    def plot(self, path: Any, params: dict[str, int] | None = None,
             computations: Sequence[str] | None = None, dims: Sequence[str] | None = None,
             loops: Sequence[str] | None = None, max_points: int = 4096,
             outputs: Sequence[Any] | None = None, together: bool = False,
             max_isl_ops: int | None = None) -> PlotResult:
        """Draw each computation's Layer I domain and Layer II time-space (tiles, tags,
        flow dependences) to ``path`` (.svg or .png), with every parameter fixed by
        ``params``, and with ``together`` all of them in one time-space with the
        dependences between them; returns a :class:`~middleend.api.plot.PlotResult` with
        what was drawn (see :func:`middleend.api.plot.plot`; ``max_isl_ops`` bounds
        its ISL work)."""
        from .plot import plot

        return plot(self, path, params=params, computations=computations, dims=dims,
                    loops=loops, max_points=max_points, outputs=outputs, together=together,
                    max_isl_ops=max_isl_ops)

    def auto_schedule(self, target: str = "cpu", outputs: Sequence[Any] | None = None,
                      estimates: Mapping[str, int] | None = None,
                      budget: float | None = None, tune: bool = False,
                      inputs: Mapping[str, Any] | None = None, service: Any = None,
                      apply: bool = True, **options: Any) -> AutoSchedule:
        """Choose a legal schedule for ``target`` and (``apply``) make it this Function's;
        returns the :class:`~middleend.autosched.AutoSchedule` (``print`` it for the
        commands and the model's reasons; ``.python()`` gives them as statements to paste).

        Statements that already have loop commands keep them. ``estimates``: parameter
        values for the cost model (default: 1024, or a Param's ``max`` below that).
        ``budget``: seconds the search may take. ``tune=True`` also builds the model's
        best few plans per statement and times them on ``inputs`` (arrays by buffer
        name, as the kernel takes them), through ``service`` with the target ``options``;
        the fastest is kept. The mpi target needs ``ranks=`` (its option) here too."""
        from ..autosched import auto_schedule

        compile_ = None
        if tune:
            if not inputs:
                raise DefinitionError(f"function {self.name!r}: auto_schedule(tune=True) "
                                      "times candidates on inputs=: give the kernel's "
                                      "arrays by buffer name")
            def compile_(f: FunctionRecord) -> Any:
                return compile_via(f, service, target=target, outputs=outputs, **options)
        elif inputs is not None:
            raise DefinitionError(f"function {self.name!r}: auto_schedule's inputs= are for "
                                  "tune=True")
        return auto_schedule(self, target, outputs=outputs, estimates=estimates,
                             budget=budget, apply=apply, tune=compile_, inputs=inputs,
                             ranks=options.get("ranks"))

    def compile(self, target: str = "cpu", outputs: Sequence[Any] | None = None,
                check_legality: bool = True, service: Any = None, **options: Any) -> Any:
        """Lower, check, generate and build for ``target``; returns a callable kernel
        (numpy arrays in by buffer name, a dict of numpy outputs back, on every target).

        ``options`` are the target's own (``middleend targets`` lists them), e.g.
        ``fp_contract=True`` on cpu: fused multiply-add, whose float results may differ
        from numpy's in the last bits. The Function travels as a wire-format request to
        ``service``: None for the embedded in-process middle-end, a client from
        ``me.connect(...)``, or a ``"host:port"``. ``check_legality=False`` is the
        documented expert switch that skips the dependence check (the generated code may
        then be wrong). ``schedule="auto"`` has the middle-end schedule the program
        itself (as :meth:`auto_schedule` does, analytically, with ``estimates=`` and
        ``budget=``) where the compile runs; the kernel's ``auto_schedule`` then holds
        what it chose, as Python statements on ``f``."""
        return compile_via(self, service, target=target, outputs=outputs,
                           check_legality=check_legality, **options)
