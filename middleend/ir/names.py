"""Names that reach generated code: validated once, here, for every front-end and target."""

from __future__ import annotations

import keyword
import re

from .errors import DefinitionError, quoted

# fullmatch (never ``$``, which accepts a trailing newline): a name is exactly this
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_C_RESERVED = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while bool main errno NULL
    min max floord abs""".split()
)


def check_name(name: str, what: str) -> str:
    """Names reach generated C: they must be plain identifiers, not C keywords, and must
    not start with '_' (reserved for compiler-made names)."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise DefinitionError(
            f"invalid {what} name {quoted(name)}: use a letter followed by letters, digits or '_' "
            "(at most 64 characters)"
        )
    if name in _C_RESERVED or keyword.iskeyword(name) or name.startswith("me_"):
        raise DefinitionError(f"{what} name {quoted(name)} is reserved")
    return name
