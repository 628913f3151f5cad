"""Values a sentence states, and whether two sentences state different values of one kind.

Pure functions over text, so conflict detection at ingestion can reuse them. A value has a
kind and a normalised amount:

* ``duration``: a number (digits or a number word) and a unit of time ("30 days", "12 months",
  "zwei Wochen"), in days;
* ``period``: how often something recurs ("every 6 months", "once a year", "jährlich",
  "alle 6 Monate"), in days between occurrences;
* ``time``: a time of day or a range ("13:00-18:00", "12 bis 17 Uhr"), in minutes after midnight;
* ``price``: an amount with a currency ("€6.95", "6,95 EUR", "12 euros"), in that currency's
  units (the currency is part of the kind, so euros never meet francs);
* ``percent``: "10 %", "10 percent", "zehn Prozent";
* ``date``: a day and a month ("15 January", "15. Januar", "January 15"), as (month, day);
* ``quantity:<dimension>``: a measured quantity in digits with its unit ("2.1 kg", "30 cm",
  "65 L", "2 persons"), in grams, millimetres, millilitres or persons (the dimension is part
  of the kind, so a weight never meets a length). A one-letter unit ("g", "m", "l") must stand
  apart from its number: "3L" in a product name is three layers, not three litres.

Bare numbers and years are not values here: two sentences that answer one question often
mention different years of different events, and a conflict must be about one thing.
``disagree`` is deliberately narrow: both sentences must state values of one kind, and no value
of that kind may be shared (a sentence that says "12 months" and one that says "once a year"
agree).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Value", "close", "disagree", "disagreement", "values"]

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14, "thirty": 30,
    "ein": 1, "eine": 1, "einen": 1, "einem": 1, "einer": 1, "zwei": 2, "drei": 3, "vier": 4,
    "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11,
    "zwölf": 12, "vierzehn": 14, "dreißig": 30,
}
_UNIT_DAYS = [
    (r"minutes?|mins?|minuten?", 1 / 1440), (r"hours?|hrs?|stunden?", 1 / 24),
    (r"days?|tagen?|tage|tag", 1.0), (r"weeks?|wochen?", 7.0),
    (r"months?|monaten?|monate|monat", 365 / 12), (r"years?|jahren?|jahre|jahr", 365.0),
]
_NUM = r"(\d+(?:[.,]\d+)?|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
_UNIT = "|".join(f"(?:{u})" for u, _ in _UNIT_DAYS)
# Hours 20-23 first: "10:00-20:00" must not end at "10:00-2" (an alternation takes the first
# branch that lets the whole pattern match, and "2" does).
_CLOCK = r"(2[0-3]|[01]?\d)(?:[:.]([0-5]\d))?"
_ADVERB = {"annually": 365.0, "yearly": 365.0, "jährlich": 365.0, "monthly": 365 / 12,
           "monatlich": 365 / 12, "weekly": 7.0, "wöchentlich": 7.0, "daily": 1.0, "täglich": 1.0}
_CURRENCY = {"€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR", "$": "USD", "usd": "USD",
             "£": "GBP", "gbp": "GBP", "chf": "CHF", "fr.": "CHF"}
# An amount: digits with thousands separators ("1,000", "5.000") or without, and cents.
_AMOUNT = r"(?<![\d.,])(\d{1,3}(?:[.,]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)"
_MONTHS = {m: i for i, names in enumerate([
    ("january", "januar", "jan"), ("february", "februar", "feb"), ("march", "märz", "mar"),
    ("april", "apr"), ("may", "mai"), ("june", "juni", "jun"), ("july", "juli", "jul"),
    ("august", "aug"), ("september", "sep", "sept"), ("october", "oktober", "oct", "okt"),
    ("november", "nov"), ("december", "dezember", "dec", "dez")], start=1) for m in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
#: Units of measured quantities: (dimension, size in the dimension's base unit).
_QUANTITY = {
    "mg": ("mass", 0.001), "g": ("mass", 1.0), "gram": ("mass", 1.0), "grams": ("mass", 1.0),
    "gramm": ("mass", 1.0), "kg": ("mass", 1000.0), "kilogram": ("mass", 1000.0),
    "kilograms": ("mass", 1000.0), "kilogramm": ("mass", 1000.0),
    "mm": ("length", 1.0), "cm": ("length", 10.0), "m": ("length", 1000.0), "km": ("length", 1e6),
    "metre": ("length", 1000.0), "metres": ("length", 1000.0), "meter": ("length", 1000.0),
    "meters": ("length", 1000.0), "ml": ("volume", 1.0), "l": ("volume", 1000.0),
    "litre": ("volume", 1000.0), "litres": ("volume", 1000.0), "liter": ("volume", 1000.0),
    "liters": ("volume", 1000.0), "person": ("people", 1.0), "persons": ("people", 1.0),
    "people": ("people", 1.0), "personen": ("people", 1.0),
}
_ONE_LETTER = "|".join(u for u in _QUANTITY if len(u) == 1)
_UNITS = "|".join(sorted((u for u in _QUANTITY if len(u) > 1), key=len, reverse=True))
_PATTERNS = {
    "every": rf"\b(?:every|alle|jede[nmrs]?)\s+(?:{_NUM}\s+)?({_UNIT})\b",
    "once": rf"\b(?:once|twice|einmal|zweimal)\s+(?:a|an|per|im|pro|in\s+the)\s+({_UNIT})\b",
    "adverb": r"\b(" + "|".join(_ADVERB) + r")\b",
    "price": rf"(€|\$|£|\b(?:eur|usd|gbp|chf)\b)\s?{_AMOUNT}"
             rf"|{_AMOUNT}\s?(€|\$|£|\b(?:eur|euros?|usd|gbp|chf)\b)",
    "percent": rf"\b{_NUM}\s?(?:%|percent\b|per cent\b|prozent\b)",
    "duration": rf"\b{_NUM}[\s-]+({_UNIT})\b",
    "time": rf"\b{_CLOCK}\s*(?:[-–—]|to|until|till|bis)\s*{_CLOCK}\s*(?:uhr|h\b)?"
            rf"|\b([01]?\d|2[0-3]):([0-5]\d)\b|\b([01]?\d|2[0-3])\s*uhr\b",
    "date": rf"\b(\d{{1,2}})\.?\s+({_MONTH})\b|\b({_MONTH})\s+(\d{{1,2}})\b",
    "quantity": rf"{_AMOUNT}(?:[\s-]?({_UNITS})|\s({_ONE_LETTER}))\b(?![.,]?\d)",
}
# The characters a match can start with (lower case). Python's engine tries a pattern at every
# position; a leading look-ahead over these lets it give up at once at all the others, and on
# lower-cased text the patterns need no case folding: together most of the scanner's cost.
_FIRST = {
    "every": "aej", "once": "otez", "adverb": "".join({a[0] for a in _ADVERB}),
    "price": r"€$£eugc\d", "percent": r"\d" + "".join({w[0] for w in _NUMBER_WORDS}),
    "duration": r"\d" + "".join({w[0] for w in _NUMBER_WORDS}), "time": r"\d",
    "date": r"\d" + "".join({m[0] for m in _MONTHS}),
    "quantity": r"\d",
}


# What a match of each pattern cannot do without (lower case): a text holding none of these is
# not searched with that pattern at all. Most passages state few kinds of value, so most of the
# patterns are skipped by a substring test.
_NEEDS = {
    "every": ("every", "alle", "jede"), "once": ("once", "twice", "einmal", "zweimal"),
    "adverb": tuple(_ADVERB), "price": ("€", "$", "£", "eur", "usd", "gbp", "chf"),
    "percent": ("%", "percent", "per cent", "prozent"),
    "duration": ("min", "hour", "hr", "stunde", "day", "tag", "week", "woche", "month", "monat",
                 "year", "jahr"),
    "time": (":", ".", "h"), "date": tuple(_MONTHS), "quantity": ("g", "m", "l", "person", "people"),
}


def _compile(flags: int) -> dict[str, re.Pattern[str]]:
    return {k: re.compile(f"(?=[{_FIRST[k]}])(?:{p})", flags) for k, p in _PATTERNS.items()}


#: For lower-cased text, and for text whose lower case has another length (offsets would move).
_LOWER, _ANY_CASE = _compile(0), _compile(re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Value:
    kind: str
    amount: float | tuple[float, ...]
    start: int
    end: int


def _money(text: str) -> float:
    """An amount as written: the last separator followed by one or two digits marks cents, the
    other separators group thousands ("1,000.50", "1.000,50", "6,95")."""
    cents = re.search(r"[.,](\d{1,2})$", text)
    whole = text[: cents.start()] if cents else text
    return float(re.sub(r"[.,]", "", whole) + ("." + cents.group(1) if cents else ""))


def _number(text: str) -> float:
    low = text.lower()
    if low in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[low])
    return float(low.replace(",", "."))


@functools.lru_cache(maxsize=256)
def _days(unit: str) -> float:
    for pattern, days in _UNIT_DAYS:
        if re.fullmatch(pattern, unit, re.IGNORECASE):
            return days
    raise ValueError(unit)


def _clock(h: str, m: str | None) -> float:
    return int(h) * 60 + (int(m) if m else 0)


def values(text: str) -> list[Value]:
    """The values ``text`` states, in order of appearance (a span is read as one value)."""
    out: list[Value] = []
    taken = bytearray(len(text))  # 1 where an earlier match lies: a span is one value

    def add(kind: str, amount: float | tuple[float, ...], m: re.Match[str]) -> None:
        a, b = m.span()
        if taken.find(1, a, b) >= 0:
            return
        taken[a:b] = b"\x01" * (b - a)
        out.append(Value(kind, amount, a, b))

    low = text.lower()
    folded = len(low) == len(text)
    if not folded:
        low = text

    def found(kind: str) -> Iterator[re.Match[str]]:
        if folded:
            if any(n in low for n in _NEEDS[kind]):
                yield from _LOWER[kind].finditer(low)
        else:
            yield from _ANY_CASE[kind].finditer(low)

    for m in found("every"):
        add("period", (_number(m.group(1)) if m.group(1) else 1.0) * _days(m.group(2)), m)
    for m in found("once"):
        times = 2.0 if m.group(0).lower().startswith(("twice", "zweimal")) else 1.0
        add("period", _days(m.group(1)) / times, m)
    for m in found("adverb"):
        add("period", _ADVERB[m.group(1).lower()], m)
    for m in found("price"):
        cur = _CURRENCY[(m.group(1) or m.group(4)).lower()]
        add(f"price:{cur}", _money(m.group(2) or m.group(3)), m)
    for m in found("percent"):
        add("percent", _number(m.group(1)), m)
    for m in found("duration"):
        add("duration", _number(m.group(1)) * _days(m.group(2)), m)
    for m in found("time"):
        g = m.groups()
        if g[0] is not None:
            if g[1] is None and g[3] is None and not m.group(0).rstrip().lower().endswith(("uhr", "h")):
                continue  # "2 to 4 business days": two bare numbers are not times of day
            add("time", (_clock(g[0], g[1]), _clock(g[2], g[3])), m)
        elif g[4] is not None:
            add("time", (_clock(g[4], g[5]),), m)
        else:
            add("time", (_clock(g[6], None),), m)
    for m in found("date"):
        day, month = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        if 1 <= int(day) <= 31:
            add("date", (float(_MONTHS[month.lower()]), float(day)), m)
    for m in found("quantity"):
        dimension, size = _QUANTITY[(m.group(2) or m.group(3)).lower()]
        # "0.125 kg" is a decimal, never 125 grouped in thousands.
        number = m.group(1)
        amount = float(number.replace(",", ".")) if re.fullmatch(r"0[.,]\d+", number) else _money(number)
        add(f"quantity:{dimension}", amount * size, m)
    out.sort(key=lambda v: v.start)
    return out


def close(a: float | tuple[float, ...], b: float | tuple[float, ...]) -> bool:
    """Two amounts are one value: equal tuples, or numbers within 2 %."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return abs(a - b) <= 0.02 * max(abs(a), abs(b), 1e-9)


def disagree(a: str, b: str) -> list[tuple[Value, Value]]:
    """Pairs of values of one kind that ``a`` and ``b`` state differently, when for that kind
    no value of ``a`` equals one of ``b`` (empty when they agree or share no kind)."""
    return disagreement(values(a), values(b))


def disagreement(va: list[Value], vb: list[Value]) -> list[tuple[Value, Value]]:
    """``disagree`` over values already read (a caller comparing one sentence with many)."""
    out = []
    for kind in sorted({v.kind for v in va} & {v.kind for v in vb}):
        xs = [v for v in va if v.kind == kind]
        ys = [v for v in vb if v.kind == kind]
        if not any(close(x.amount, y.amount) for x in xs for y in ys):
            out.append((xs[0], ys[0]))
    return out
