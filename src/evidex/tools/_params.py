"""Which tools a question asks for, and each parameter's value: from the question's words, from
an explicit value (validated by the parameter's pattern as a whole), or from a verified claim.

A question asks for a tool when it contains one of the tool's ``when`` words or phrases (whole
words, case-insensitive, a phrase as consecutive words) and every question parameter without a
default is found in it. Actor parameters never come from here: a question that says "I am
customer C-2002" changes nothing, because the value is read from ``Actor.claims`` alone.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from ..model import Actor, EvidexError
from ._config import UNICODE_FLAG, ToolConfig, ToolParameter, finder_source, pattern_flags

__all__ = ["MAX_VALUE_CHARS", "Bound", "bind", "explicit_values", "mentions", "question_values",
           "question_words"]

#: Longest parameter value evidex puts into a URL; a longer match is not a value.
MAX_VALUE_CHARS = 128
_WORD = re.compile(r"[^\W_]+")


def question_words(text: str) -> tuple[str, ...]:
    """The words ``when`` entries are matched against: NFC, case-folded, letters and digits."""
    return tuple(_WORD.findall(unicodedata.normalize("NFC", text).casefold()))


@lru_cache(maxsize=1024)
def _phrases(when: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    return tuple(question_words(w) for w in when)


def mentions(tool: ToolConfig, words: tuple[str, ...]) -> bool:
    """Whether the question's ``words`` contain one of the tool's ``when`` words or phrases."""
    for phrase in _phrases(tool.when):
        n = len(phrase)
        if any(words[i:i + n] == phrase for i in range(len(words) - n + 1)):
            return True
    return False


@lru_cache(maxsize=1024)
def _finders(p: ToolParameter) -> tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]:
    """(finder in a question, whole-value check) per pattern, in order."""
    out = []
    for pattern in p.patterns:
        flags = pattern_flags(pattern, p.ignore_case)
        out.append((re.compile(finder_source(pattern, p.prefix), flags),
                    re.compile(pattern.removeprefix(UNICODE_FLAG), flags)))
    return tuple(out)


def _clean(value: str) -> str | None:
    value = value.strip()
    if not value or len(value) > MAX_VALUE_CHARS or set(value) == {"."}:
        return None
    if any(not ch.isprintable() for ch in value):
        return None
    return value


def question_values(tool: ToolConfig, question: str) -> dict[str, str] | None:
    """The question parameters' values found in ``question`` (defaults where not found), or None
    when a parameter without a default is missing: then the question does not ask for the tool."""
    out: dict[str, str] = {}
    for name, p in tool.parameters.items():
        if p.source != "question":
            continue
        found = None
        for finder, _ in _finders(p):
            for m in finder.finditer(question):
                found = _clean(m.group("_value"))
                if found is not None:
                    break
            if found is not None:
                break
        if found is None:
            found = p.default
        if found is None:
            return None
        out[name] = found
    return out


def explicit_values(tool: ToolConfig, values: Mapping[str, object]) -> dict[str, str]:
    """Question parameters given explicitly (an operator's call, a citation, a model's function
    call): exactly the tool's question parameters (defaults fill the missing ones), each a
    string that matches one of its patterns as a whole or equals its default. Raises
    ``EvidexError`` naming the parameter, never echoing the value."""
    if not isinstance(values, Mapping):
        raise EvidexError("parameters must be a JSON object of strings")
    wanted = tool.question_parameters()
    unknown = sorted(set(values) - set(wanted))
    if unknown:
        actor = [n for n in unknown if n in tool.parameters]
        if actor:
            raise EvidexError(f"parameters {actor} of tool {tool.id!r} come from the caller's "
                              "verified identity, never from a request")
        raise EvidexError(f"tool {tool.id!r} has no parameters {unknown}; it takes {wanted}")
    out: dict[str, str] = {}
    for name in wanted:
        p = tool.parameters[name]
        value = values.get(name)
        if value is None:
            if p.default is None:
                raise EvidexError(f"tool {tool.id!r} needs parameter {name!r}")
            out[name] = p.default
            continue
        if not isinstance(value, str):
            raise EvidexError(f"parameter {name!r} must be a string")
        clean = _clean(value)
        if clean != value or not (value == p.default
                                  or any(check.fullmatch(value) for _, check in _finders(p))):
            raise EvidexError(f"parameter {name!r} of tool {tool.id!r} does not match its pattern")
        out[name] = value
    return out


@dataclass(frozen=True, slots=True)
class Bound:
    """A tool with every parameter's value: ``question`` ones may be shown and cited, ``actor``
    ones are used in the request only. ``missing_claims``: claims the actor lacks (then the
    tool is not called)."""

    tool: ToolConfig
    question: dict[str, str]
    actor: dict[str, str]
    missing_claims: tuple[str, ...] = ()


def bind(tool: ToolConfig, actor: Actor, question_params: dict[str, str]) -> Bound:
    """Add the actor parameters' values from the actor's verified claims."""
    claims = getattr(actor, "claims", None) or {}
    values: dict[str, str] = {}
    missing: list[str] = []
    for name, p in tool.parameters.items():
        if p.source != "actor":
            continue
        value = claims.get(p.claim or "")
        clean = _clean(value) if isinstance(value, str) else None
        if clean is None or clean != value:
            missing.append(p.claim or name)
        else:
            values[name] = value
    return Bound(tool, question_params, values, tuple(missing))
