"""The Julia front-end: functions annotated ``@acc`` compiled by the middle-end.

Two ways in, both through the wire format (section 5.2 of the paper):

- without Julia: ``k = compile_source(text, "bicg!")`` parses the source with
  tree-sitter-julia; ``k(s, q, A, p, r)`` runs it on numpy arrays in Fortran order, updating
  the written ones in place, as the Julia function would;
- with Julia: the ``Acc.jl`` package next to this module (``@acc``, ``@name``,
  ``@schedule``) sends the function's ``Expr`` through juliacall/PythonCall
  (:mod:`.bridge`) and calls the built kernel with ``ccall`` on the Julia arrays.
"""

from frontends.julia.api import JuliaKernel, compile_source, translate
from frontends.julia.errors import JuliaFrontendError, JuliaSyntaxError, UnsupportedJulia

__all__ = ["compile_source", "translate", "JuliaKernel", "JuliaFrontendError",
           "JuliaSyntaxError", "UnsupportedJulia"]
