"""Where Halide's loops over an RDom start, and the shifts that start the middle-end's
loops there.

Halide splits a loop from its min: ``split(r.x, ro, ri, 8)`` over ``RDom(3, 100)`` runs
``r.x = 3 + 8 * ro + ri``, tiles [3, 10], [11, 18], ... The middle-end's ``split`` cuts
at multiples of the factor (``o = floor(d / 8)``): tiles [3, 7], [8, 15], ... The same
instances, in the same order while the two loops stay nested as split; reordered apart
(``reorder(ro, ri)``: ``ro`` innermost), in another order, and an update whose result
depends on its order sees it: the tie an argmax keeps, the rounding of a float sum.
Halide's fused loop also runs from 0 (``fused = (o - o_min) * E + (i - i_min)``, ``E``
Halide's extent of the inner loop), where the middle-end's runs from ``E * o_min`` over
the extent it finds in the domain.

So before a loop made from RVars is split or fused, the front-end shifts it to start at 0
(``shift(loop, -min)``), and the middle-end's loops are then Halide's, value for value.
Halide refuses the tail strategies that would visit an update's instance twice
(ShiftInwards, RoundUp: "may change the meaning of the algorithm"), so each instance runs
once in both. :class:`LoopModel` replays a stage's splits as the middle-end applies them,
with those shifts: the loops' values in terms of the stage's iterators (the order keys
of :func:`.rvars.scheduled_order`), and whether each is Halide's (``off == 0``). A pure
Var is not shifted (which of its tiles an instance falls in changes no value: its
instances write distinct elements).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Loop:
    """One loop of a stage as the middle-end runs it: ``val`` its value, quasi-affine in
    the stage's iterators (``{i}``: iterator ``i``), None where the middle-end's fuse
    needs an extent not known here; ``off`` the middle-end's value less Halide's
    (counted from Halide's loop min), None where not the same tiles; ``lo``/``hi`` the
    middle-end's range (None: not known, a ``where`` clause bounds it); ``ext`` Halide's
    extent (None: not known)."""

    val: str | None
    off: int | None
    lo: int | None
    hi: int | None
    ext: int | None


class LoopModel:
    """The loops of one stage through its splits, renames and fuses (Halide names)."""

    def __init__(self, names: list[str], ranges: list[tuple[int, int]], rdom: set[str],
                 bounded: bool) -> None:
        """``names``: the stage's iterators, outermost first, over ``ranges``; those in
        ``rdom`` are RVars; ``bounded``: the domain is the box of ``ranges`` (no ``where``
        clause, no predicate), so that the middle-end's loop ranges are computed here."""
        self.loops: dict[str, Loop] = {}
        for i, (n, (lo, hi)) in enumerate(zip(names, ranges, strict=True)):
            self.loops[n] = Loop(f"{{{i}}}", lo if n in rdom else None,
                                 lo if bounded else None, hi if bounded else None,
                                 hi - lo + 1)

    def shift(self, name: str) -> int:
        """The shift that starts loop ``name`` at Halide's min (0 if none is needed),
        recorded; the caller applies it to the middle-end's loop before a split or fuse."""
        lp = self.loops[name]
        if not lp.off:
            return 0
        amount, lp.off = -lp.off, 0
        if lp.val is not None:
            lp.val = f"({lp.val}) + ({amount})"
        if lp.lo is not None and lp.hi is not None:
            lp.lo, lp.hi = lp.lo + amount, lp.hi + amount
        return amount

    def rename(self, old: str, new: str) -> None:
        self.loops[new] = self.loops.pop(old)

    def split(self, old: str, outer: str, inner: str, factor: int) -> None:
        """The middle-end's ``split`` (``o = floor(d / f)``, ``i = d - f * o``)."""
        lp = self.loops.pop(old)
        v, f = lp.val, factor
        vo = None if v is None else f"floor(({v})/{f})"
        vi = None if v is None else f"({v}) - {f}*floor(({v})/{f})"
        off = 0 if lp.off == 0 else None
        olo = ohi = ilo = ihi = None
        if lp.lo is not None and lp.hi is not None:
            olo, ohi = lp.lo // f, lp.hi // f
            ilo, ihi = (lp.lo % f, lp.hi % f) if olo == ohi else (0, f - 1)
        ext = None if lp.ext is None else -(-lp.ext // f)
        self.loops[outer] = Loop(vo, off, olo, ohi, ext)
        self.loops[inner] = Loop(vi, off, ilo, ihi, f)

    def fuse(self, outer: str, inner: str, fused: str) -> None:
        """The middle-end's ``fuse`` (``E * o + i - lo``, ``E`` and ``lo`` the inner
        loop's range over the domain): Halide's fused loop where both start at Halide's
        min and ``E`` is Halide's extent."""
        o, i = self.loops.pop(outer), self.loops.pop(inner)
        if i.lo is None or i.hi is None:
            self.loops[fused] = Loop(None, None, None, None, None)
            return
        e = i.hi - i.lo + 1
        val = None if o.val is None or i.val is None else \
            f"{e}*({o.val}) + ({i.val}) - ({i.lo})"
        same = o.off == 0 and i.off == 0 and i.lo == 0 and e == i.ext
        lo = None if o.lo is None else e * o.lo
        hi = None if o.hi is None else e * o.hi + e - 1
        ext = None if o.ext is None or i.ext is None else o.ext * i.ext
        self.loops[fused] = Loop(val, 0 if same else None, lo, hi, ext)
