"""A scanner for instruction-like text inside passages (English and German).

This is a filter, not a guarantee. It flags passages that look like attempts to steer a model
(override its rules, claim a role or a system prompt, ask to reveal or publish data, call a tool
or a URL, or hide text) so that answers can keep them out of model context and show them as
untrusted. Nothing depends on it for security: a passage, flagged or not, never grants a
permission or changes a rule, because access is decided by the actor alone and the model is
given no tools.
"""

from __future__ import annotations

import re

__all__ = ["FLAGS", "scan"]

_I = re.IGNORECASE | re.UNICODE

_PATTERNS: dict[str, list[re.Pattern[str]]] = {
    "override": [
        re.compile(r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(rules?|instructions?|"
                   r"guidelines?|polic(y|ies)|prompts?|above|previous|prior)\b", _I),
        re.compile(r"\b(ignorier\w*|missacht\w*|vergiss|vergessen\s+sie|übergeh\w*)\b.{0,40}"
                   r"\b(regeln?|anweisungen?|vorgaben?|richtlinien?|alles)\b", _I),
        re.compile(r"\bnew\s+instructions?\b|\bneue\s+anweisungen?\b", _I),
    ],
    "role_claim": [
        re.compile(r"\b(you\s+are\s+now|act\s+as|pretend\s+to\s+be|from\s+now\s+on\s+you)\b", _I),
        re.compile(r"\b(system\s*prompt|system\s+message|developer\s+mode|jailbreak)\b", _I),
        re.compile(r"\b(du\s+bist\s+(jetzt|nun|ab\s+sofort)|sie\s+sind\s+(jetzt|nun)|"
                   r"systemprompt|systemnachricht)\b", _I),
    ],
    "exfiltration": [
        re.compile(r"\b(reveal|disclose|publish|leak|exfiltrate|dump|print|post|send|upload)\b.{0,60}"
                   r"\b(salar(y|ies)|passwords?|credentials?|secrets?|keys?|personal\s+data|"
                   r"system\s*prompt|confidential|data)\b", _I),
        re.compile(r"\b(veröffentliche\w*|verrate\w*|gib\w*|sende\w*|schick\w*)\b.{0,60}"
                   r"\b(gehält\w*|gehalt\w*|passw\w*|zugangsdaten|geheim\w*|daten|vertraulich\w*)\b",
                   _I),
    ],
    "tool_or_url_call": [
        # Addressed to a model: tools and functions. "Run the command ..." in an IT manual is not
        # flagged; German informal imperatives ("führe", "rufe") address a model, the formal
        # "Führen Sie ... aus" of a manual does not match.
        re.compile(r"\b(call|invoke|run|execute|use)\s+(the\s+|this\s+|a\s+)?(tool|function)s?\b|"
                   r"\b(tool|function)\s+call", _I),
        re.compile(r"\b(führe|rufe|starte)\b(?!\s+sie\b).{0,40}\b(befehl|funktion|tool|werkzeug|skript)\w*",
                   _I),
        # Moving data to or fetching from a URL; a plain link ("visit https://...") is not flagged.
        re.compile(r"\b(fetch|post|send|upload|curl|wget|submit|sende\w*|schick\w*|lade\w*|"
                   r"übermittl\w*)\b[^.\n]{0,60}https?://", _I),
    ],
    "hidden_text": [
        re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e]"),
        re.compile(r"<!--|display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0", _I),
    ],
}

FLAGS: tuple[str, ...] = tuple(_PATTERNS)


def scan(text: str) -> tuple[str, ...]:
    """Names of the patterns that occur in ``text``, in a fixed order (empty when none)."""
    return tuple(name for name, pats in _PATTERNS.items() if any(p.search(text) for p in pats))
