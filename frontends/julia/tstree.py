"""Julia source text to a tree-sitter tree (the grammar, tree-sitter-julia 0.23.1): loading
it once, refusing a source with a syntax error (naming the line and, for a missing ``end``
or bracket, the opener never closed), and repairing the two shapes of valid Julia the
grammar misreads, so that :mod:`.parse` maps a tree that means what Julia means. Node
helpers both modules use live here too."""

from __future__ import annotations

import functools

import tree_sitter
import tree_sitter_julia

from frontends.julia.errors import JuliaSyntaxError

Node = tree_sitter.Node

COMMENTS = frozenset({"line_comment", "block_comment"})
BINOPS = frozenset({"+", "-", "*", "/", "÷", "%", "^", "\\", "&", "|", "<<", ">>", ">>>", "⊻"})
_OPENERS = frozenset({"(", "[", "{", "function", "for", "if", "while", "begin", "let", "try",
                      "quote", "do", "struct", "module", "macro"})


@functools.lru_cache(maxsize=1)
def language() -> tree_sitter.Language:
    """The grammar, loaded once: building it is the only costly part of a parser."""
    return tree_sitter.Language(tree_sitter_julia.language())


def line(node: Node) -> int:
    return node.start_point.row + 1


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def snippet(node: Node, limit: int = 40) -> str:
    """The node's first source line, shortened: enough for a user to find it."""
    whole = text(node).strip()
    first = whole.split("\n", 1)[0].rstrip()
    return first if len(first) <= limit and first == whole else first[:limit] + "..."


def kids(node: Node) -> list[Node]:
    """Named children without comments: comments may sit anywhere, even in argument lists."""
    return [c for c in node.named_children if c.type not in COMMENTS]


def _first_error(root: Node) -> Node | None:
    """The first ERROR or MISSING node in source order; ``has_error`` prunes clean subtrees."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return None


def _unclosed(err: Node) -> Node | None:
    """The last opener among an ERROR node's tokens with no closer after it: when a bracket
    or an ``end`` is missing, tree-sitter makes the whole enclosing block one ERROR, and its
    first line says less than the opener that was never closed."""
    stack = []
    for c in err.children:
        if c.type in _OPENERS:
            stack.append(c)
        elif c.type in (")", "]", "}", "end") and stack:
            stack.pop()
    return stack[-1] if stack else None


def check_syntax(root: Node, text: str) -> None:
    """Refuse a source with any parse error: tree-sitter recovers, and a recovered tree may
    mean something other than what the user wrote."""
    if not root.has_error:
        return
    bad = _first_error(root) or root
    row = bad.start_point.row
    if bad.is_missing:
        near = text.split("\n")[row].strip()[:60]
        raise JuliaSyntaxError(row + 1, f"missing {bad.type!r} in {near!r}")
    opener = _unclosed(bad)
    if opener is not None:
        what = "bracket" if opener.type in "([{" else "block (missing `end`?)"
        raise JuliaSyntaxError(line(opener), f"{opener.type!r} {what} is never closed")
    source_line = text.split("\n")[row].strip()
    detail = f"cannot parse {snippet(bad)!r} in {source_line[:60]!r}"
    if bad.end_point.row > row:
        detail += f" (lines {row + 1}-{bad.end_point.row + 1})"
    raise JuliaSyntaxError(row + 1, detail)


_REPAIR_ROUNDS = 16


def _misparses(root: Node) -> list[tuple[int, bytes, int]]:
    """Insertions into the source (byte offset, text, line) that make tree-sitter-julia
    0.23.1 read two shapes of valid Julia as Julia does; neither changes a line number.

    - ``if a + b == 3`` comes out as the condition ``a`` and a statement ``+b == 3`` (a
      unary operator starting a statement on the condition's line): the condition is
      wrapped in parentheses, up to the end of that statement.
    - ``2.0^(x) + 1`` comes out as ``2.0 * ^(x) + 1`` (a number juxtaposed with a call of
      the operator, whatever the spacing): a space after the operator makes it binary.
    """
    edits: list[tuple[int, bytes, int]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type in ("if_statement", "elseif_clause", "while_statement"):
            cond = node.child_by_field_name("condition")
            named = kids(node)
            after = named[named.index(cond) + 1] if cond in named[:-1] else None
            if cond is not None and after is not None and \
                    after.start_point.row == cond.end_point.row and \
                    _leftmost(after).type == "operator":
                edits += [(cond.start_byte, b"(", line(cond)),
                          (after.end_byte, b")", line(cond))]
        elif node.type == "juxtaposition_expression":
            num, call = (node.named_children + [node])[:2]
            if num.type in ("integer_literal", "float_literal") and \
                    call.type == "call_expression" and kids(call) and \
                    kids(call)[0].type == "operator" and text(kids(call)[0]) in BINOPS:
                edits.append((kids(call)[0].end_byte, b" ", line(node)))
    return edits


def _leftmost(node: Node) -> Node:
    while node.children:
        node = node.children[0]
    return node


def parse_repaired(source: str) -> tuple[Node, str]:
    """The tree of ``source`` and the text it is the tree of, after repairing the grammar's
    known misreadings (:func:`_misparses`); a shape that a repair does not remove is
    refused, naming its line and what to write instead."""
    parser = tree_sitter.Parser(language())
    data = source.encode("utf-8")
    root = parser.parse(data).root_node
    for _ in range(_REPAIR_ROUNDS):
        edits = _misparses(root)
        if not edits:
            return root, data.decode("utf-8", errors="replace")
        for at, ins, _line in sorted(edits, reverse=True):
            data = data[:at] + ins + data[at:]
        root = parser.parse(data).root_node
    raise JuliaSyntaxError(edits[0][2], "tree-sitter-julia misreads this line (an `if` "
                           "condition read as ending early, or a number before `^(`); put "
                           "the condition, or the operand after the operator, in parentheses")
