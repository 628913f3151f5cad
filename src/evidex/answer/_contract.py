"""The output contract, checked on the way out. A violation is never released or repaired.

* exactly the fields {answer, citations}; answer a non-empty string; citations a non-empty list
  of ids of provided sources (ints, no unknown ids);
* every sentence that states something carries a [n] marker of a provided source, and the
  sources it cites contain most of its content words (a grounding check, not proof);
* no HTML, links only from the allowlist: an http(s) URL that starts with an allowlisted prefix
  (ending at a path, query or fragment boundary, so ``https://help.example.com.evil/`` is not
  ``https://help.example.com``). Any other link is a violation whatever its syntax or scheme: a
  bare URL of any ``scheme://``, a ``javascript:``, ``data:``, ``vbscript:``, ``file:``,
  ``mailto:`` ... reference, a Markdown link or image (``[click](target)``), a reference
  definition (``[1]: target``) or an autolink.
Each cited passage must also still resolve; that check needs the store and is done by the
caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from ..ingest import sentence_spans

__all__ = ["check_output", "markers", "sentences"]

_MARKER = re.compile(r"\[(\d{1,3})\]")
_URL = re.compile(r"(?<![\w+.-])[a-z][a-z0-9+.-]{0,30}://[^\s<>\"')\]]*|(?<![\w.-])www\.[^\s<>\"')\]]+",
                  re.IGNORECASE)
#: Schemes that act or fetch without ``//`` (``javascript:alert(1)``, ``data:text/html,...``),
#: followed by something other than a space (so "Required data: name" is prose). Spaces and
#: control characters a browser drops inside a scheme are allowed between its letters.
_BARE_SCHEMES = ("javascript", "vbscript", "livescript", "data", "file", "blob", "filesystem", "mailto",
                 "view-source", "jar")
_BARE = re.compile(r"(?<![\w+.-])(?:" + "|".join(r"[\s\x00-\x1f]*".join(name) for name in _BARE_SCHEMES)
                   + r")[\s\x00-\x1f]*:(?=\S)", re.IGNORECASE)
#: A Markdown link or image target (``](target``) and a reference definition (``[x]: target``).
_TARGET = re.compile(r"\]\(\s*<?([^\s)>]*)|^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*<?(\S*?)>?(?:\s|$)", re.MULTILINE)
_HTML = re.compile(r"<\s*/?\s*[a-zA-Z][^>]*>|&[a-zA-Z]+;|&#\d+;")


def markers(text: str) -> list[int]:
    return [int(m) for m in _MARKER.findall(text)]


def sentences(text: str) -> list[str]:
    """Sentences with their trailing markers attached ("It is so. [1] Next." -> 2 sentences)."""
    return [text[s:e] for s, e in sentence_spans(text)]


def _states_something(sentence: str) -> bool:
    """Headings-free prose: a sentence with at least three words states something. Short
    fragments ("Yes.", "In short:") carry no claim of their own."""
    words = re.findall(r"[^\W_]+", _MARKER.sub(" ", sentence))
    return len(words) >= 3


def check_output(
    data: Any,
    provided: Iterable[int],
    allowlist: Iterable[str],
    support: Callable[[str, list[int]], bool] | None = None,
) -> list[str]:
    """Every violation found (empty when the output may be released). Messages name sentences
    by number, never by their text, so no passage text leaks into traces or logs.

    ``support(sentence, markers)`` says whether the cited sources back the sentence; without it
    only the form is checked.
    """
    ids = set(provided)
    if not isinstance(data, dict):
        return ["the output is not a JSON object"]
    problems = []
    keys = set(data)
    if keys != {"answer", "citations"}:
        problems.append(f"the output must have exactly the fields answer and citations, got {sorted(keys)}")
    answer, cited = data.get("answer"), data.get("citations")
    if not isinstance(answer, str) or not answer.strip():
        problems.append("answer must be a non-empty string")
        answer = ""
    if not isinstance(cited, list) or not cited:
        problems.append("citations must be a non-empty list")
        cited = []
    for c in cited:
        if not isinstance(c, int) or isinstance(c, bool):
            problems.append(f"citation {c!r} is not a source id")
        elif c not in ids:
            problems.append(f"citation {c} is not a provided source")
    for n in markers(answer):
        if n not in ids:
            problems.append(f"marker [{n}] refers to no provided source")
        elif n not in cited:
            problems.append(f"marker [{n}] is missing from citations")
    for i, s in enumerate(sentences(answer), start=1):
        if not _states_something(s):
            continue
        refs = [n for n in markers(s) if n in ids]
        if not markers(s):
            problems.append(f"unsupported sentence {i}: it states something without a [n] marker")
        elif support is not None and refs and not support(s, refs):
            problems.append(f"sentence {i} is not supported by the sources it cites")
    if _HTML.search(answer):
        problems.append("the answer contains HTML")
    allowed = tuple(allowlist)
    for url in _URL.findall(answer):
        if not _allowed(url, allowed):
            problems.append(f"a link is not on the allowlist ({_host(url)})")
    for m in _BARE.finditer(answer):
        problems.append(f"a link is not on the allowlist ({re.sub(r'[^a-z-]', '', m.group().lower())}: link)")
    for m in _TARGET.finditer(answer):
        target = m.group(1) if m.group(1) is not None else m.group(2)
        if target and not (_URL.fullmatch(target) or _BARE.match(target) or _allowed(target, allowed)):
            problems.append("a link is not on the allowlist (a link target that is not an allowed URL)")
    return problems


def _allowed(url: str, allowed: tuple[str, ...]) -> bool:
    """An http(s) URL that starts with an allowlisted prefix at a boundary."""
    low = url.lower()
    if not low.startswith(("http://", "https://")):
        return False
    for prefix in allowed:
        p = prefix.lower()
        if low.startswith(p) and (p.endswith(("/", "?", "#")) or len(low) == len(p) or low[len(p)] in "/?#:"):
            return True
    return False


def _host(url: str) -> str:
    """The link's host (or ``www``) for the violation: never the rest of the URL."""
    return url.split("/")[2] if "//" in url else "www"
