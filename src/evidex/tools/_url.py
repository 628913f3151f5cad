"""The request URL of a lookup, and the URL a citation shows.

Every value is percent-encoded as one opaque piece (``/``, ``?``, ``&``, ``#``, ``%`` and
spaces included), so a value can never add a path segment, a query parameter or a fragment;
a value of dots only is refused (``..`` is a path segment even when encoded, for many
servers). The built URL must still have the template's origin: the allowlist checked at
load time is the one that holds at call time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

from ..model import EvidexError
from ._config import origin

__all__ = ["build_url", "display_url"]

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def _fill(template: str, values: Mapping[str, str], keep: frozenset[str] = frozenset()) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in keep:
            return m.group(0)
        value = values[name]
        if not value or set(value) == {"."}:
            raise EvidexError(f"parameter {name!r} has no usable value")
        return quote(value, safe="")

    return _PLACEHOLDER.sub(one, template)


def build_url(template: str, values: Mapping[str, str]) -> str:
    """The URL to request, with every parameter encoded; its origin is the template's."""
    url = _fill(template, values)
    if origin(url) != origin(template):
        raise EvidexError("the built URL left the configured host")
    return url


def display_url(template: str, question: Mapping[str, str], actor_names: frozenset[str]) -> str:
    """The URL a citation shows: question values filled in, actor values left as their
    ``{name}`` (named, never shown)."""
    return _fill(template, question, keep=actor_names)
