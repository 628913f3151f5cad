"""From a JSON response to the one line a lookup is cited by: the body parsed within bounds,
fields picked by JSON pointer (RFC 6901), each a string, number or boolean, put into the
tool's ``render`` template.

The template is filled by plain ``{name}`` substitution (never ``str.format``, whose
``{x.attr}`` and ``{x[0]}`` would reach into objects). Values are untrusted text: control
characters and line breaks become spaces, so a value cannot forge lines of an answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..model import EvidexError

__all__ = ["MAX_FIELD_CHARS", "MAX_JSON_DEPTH", "fields_of", "parse_json", "pointer", "render", "scalar_text"]

#: Longest field value taken from a response (a status or a date, not a document).
MAX_FIELD_CHARS = 500
#: Deepest nesting of arrays and objects read from a response (a lookup's answer is a record
#: or two levels of them; Python's parser recurses per level and fails past about a thousand).
MAX_JSON_DEPTH = 64
#: A string (escapes included) or one bracket: what the nesting check walks over.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MISSING = object()


def parse_json(body: bytes) -> Any:
    """The response as JSON; ``EvidexError`` when it is not JSON or nests deeper than
    ``MAX_JSON_DEPTH`` (checked on the bytes first, so nothing recurses past it)."""
    if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH:
        depth = 0
        for m in _TOKEN.finditer(body):
            c = m.group()
            if c in (b"[", b"{"):
                depth += 1
                if depth > MAX_JSON_DEPTH:
                    raise EvidexError(f"the response nests JSON deeper than {MAX_JSON_DEPTH} levels")
            elif c in (b"]", b"}"):
                depth -= 1
    try:
        return json.loads(body)
    except ValueError:
        raise EvidexError("the response is not valid JSON") from None


def pointer(doc: Any, ptr: str) -> Any:
    """The value at JSON pointer ``ptr`` in ``doc``, or ``_MISSING``."""
    node = doc
    for raw in ptr.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping):
            if token not in node:
                return _MISSING
            node = node[token]
        elif isinstance(node, list):
            if not token.isdigit() or (len(token) > 1 and token[0] == "0") or int(token) >= len(node):
                return _MISSING
            node = node[int(token)]
        else:
            return _MISSING
    return node


def scalar_text(value: Any) -> str | None:
    """A field value as one line of text; None for anything but a string, number or bool."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        text = "".join(ch if ch.isprintable() else " " for ch in value).strip()
        return text[:MAX_FIELD_CHARS]
    return None


def fields_of(doc: Any, fields: Mapping[str, str]) -> dict[str, str]:
    """Each configured field's text; ``EvidexError`` naming the first missing or unusable one."""
    out = {}
    for name, ptr in fields.items():
        value = pointer(doc, ptr)
        if value is _MISSING or value is None:
            raise EvidexError(f"the response has no field {name} ({ptr})")
        text = scalar_text(value)
        if text is None:
            raise EvidexError(f"the field {name} ({ptr}) is not a string, number or boolean")
        if not text:
            raise EvidexError(f"the field {name} ({ptr}) is empty")
        out[name] = text
    return out


def render(template: str, values: Mapping[str, str]) -> str:
    """The template with every ``{name}`` replaced (``{{``/``}}`` are literal braces)."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        return values[m.group(1)]

    return _PLACEHOLDER.sub(one, template).strip()
