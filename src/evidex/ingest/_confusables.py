"""Character tables for the injection scanner's normalisation (see `_scan`).

Two tables, both applied with one ``str.translate`` after NFKC:

- characters that render as nothing (zero-width spaces and joiners, soft hyphen, bidi controls,
  variation selectors, Unicode tag characters once decoded) are dropped, so "ig\u200bnore" and
  "Ig\u00adnore" read "ignore";
- letters from other scripts that look like Latin letters (Greek, Cyrillic, Armenian, small
  capitals, dotless i, script g ...) and accented Latin letters are folded to plain Latin, so
  "\u0399gnore" (Greek capital iota) and "Ign\u043ere" (Cyrillic o) read "Ignore". German umlauts
  and sharp s are kept, because the German patterns spell them. Dashes, typographic quotes and
  middle dots become their ASCII forms.

NFKC itself already maps fullwidth forms, mathematical alphanumerics, circled and superscript
letters to ASCII. The folded text is only ever matched against patterns, never shown or stored.
"""

from __future__ import annotations

import unicodedata

__all__ = ["FOLD", "INVISIBLE", "decode_tags"]

# Rendered as nothing (or as a glyph-less control) in ordinary text.
INVISIBLE: frozenset[int] = frozenset((
    0x00AD, 0x034F, 0x061C, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFEFF, 0xFFA0,
    *range(0x180B, 0x1810),    # Mongolian variation selectors and vowel separator
    *range(0x200B, 0x2010),    # zero-width space, ZWNJ, ZWJ, LRM, RLM
    *range(0x202A, 0x202F),    # bidi embeddings and overrides
    *range(0x2060, 0x2070),    # word joiner, invisible operators, bidi isolates
    *range(0xFE00, 0xFE10),    # variation selectors
    *range(0x1D173, 0x1D17B),  # musical formatting controls
    *range(0xE0000, 0xE0080),  # tag characters (left after decode_tags: cancel tag etc.)
    *range(0xE0100, 0xE01F0),  # supplementary variation selectors
))

# Look-alikes of Latin letters (after NFKC), from Unicode's confusables for the scripts most used
# to dodge Latin keyword filters.
_LOOKALIKES = {
    # Greek
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϳ": "J",
    "α": "a", "β": "b", "γ": "y", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ϳ": "j",
    # NFKC turns the lunate sigmas into these: only the final sigma looks Latin ("c").
    "ς": "c",
    # Cyrillic
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "Х": "X", "У": "Y", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q", "Ԝ": "W", "Ү": "Y",
    "Ӏ": "I", "Һ": "H", "Ԁ": "D",
    "а": "a", "в": "b", "е": "e", "г": "r", "к": "k", "м": "m", "н": "h", "о": "o", "п": "n",
    "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "һ": "h",
    "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ү": "y", "ѵ": "v", "ё": "e",
    # Armenian
    "օ": "o", "ս": "u", "հ": "h", "ո": "n", "ց": "g", "ք": "p", "զ": "q", "ա": "w",
    # Latin small capitals and other Latin-script look-alikes
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h", "ɪ": "i",
    "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s",
    "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z", "ı": "i", "ȷ": "j", "ɡ": "g",
    "ɑ": "a", "ɩ": "i", "ꞵ": "b",
    # Dashes and minus signs read as a hyphen (spaced-out letters are often joined by them)
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
    "\u2212": "-", "\ufe58": "-", "\ufe63": "-", "\uff0d": "-",
    # Typographic quotes and dots read as their ASCII forms, so that words next to them are
    # words ("„Ignoriere" reads '"Ignoriere'); middle dots and bullets separate spaced-out letters.
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2039": "'", "\u203a": "'",
    "\u00b7": ".", "\u2022": ".", "\u2027": ".", "\u2219": ".", "\u22c5": ".",
}

_KEEP = set("äöüÄÖÜß")


def _accent_folds() -> dict[int, str]:
    """Accented Latin letters to their base letter ("ïgnöre" reads "ignore"), umlauts kept."""
    out: dict[int, str] = {}
    for cp in (*range(0x00C0, 0x0250), *range(0x1E00, 0x1F00)):
        ch = chr(cp)
        if ch in _KEEP:
            continue
        base = unicodedata.normalize("NFD", ch)[0]
        if base != ch and base.isascii() and base.isalpha():
            out[cp] = base
    return out


FOLD: dict[int, str | None] = {
    **_accent_folds(),
    **{ord(k): v for k, v in _LOOKALIKES.items()},
    **dict.fromkeys(INVISIBLE),
}


def decode_tags(text: str) -> str:
    """Unicode tag characters (U+E0020-U+E007E) spell ASCII invisibly: decode them to it."""
    return "".join(chr(ord(c) - 0xE0000) if 0xE0020 <= ord(c) <= 0xE007E else c for c in text)
