"""Cadences: when a scheduled sync or drift check is due.

A cadence is ``off``, ``hourly`` (minute 0), ``daily`` (00:00), ``weekly`` (Monday 00:00) or a
five-field cron expression ``minute hour day-of-month month day-of-week`` in UTC. Fields take
``*``, numbers, ranges ``a-b``, steps ``*/n`` and ``a-b/n``, and lists ``a,b``; months and days
may be named (``jan``, ``mon``); day-of-week 0 and 7 are Sunday. As in cron, when both
day-of-month and day-of-week are restricted, a day matching either is due.

Times are whole minutes: ``next_after(t)`` is the first due minute strictly after ``t``, so a
scheduler that ran at a due minute never runs it twice. No dependency: the grammar is small and
an own parser keeps its errors one line long and in evidex's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["Cadence", "check_cadence", "parse_cadence"]

_NAMED = {"hourly": "0 * * * *", "daily": "0 0 * * *", "weekly": "0 0 * * 1"}
_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
#: (name, lowest, highest, names) of the five fields.
_FIELDS = (("minute", 0, 59, {}), ("hour", 0, 23, {}), ("day-of-month", 1, 31, {}),
           ("month", 1, 12, _MONTHS), ("day-of-week", 0, 7, _DAYS))
_SEARCH_DAYS = 366 * 5  # Feb 29 on a Monday recurs within 28 years; nothing sane is rarer than 5


@dataclass(frozen=True)
class Cadence:
    """A parsed cadence; ``text`` is as configured."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Monday, as datetime.weekday()
    any_day: bool
    any_weekday: bool

    def due(self, t: datetime) -> bool:
        return (t.minute in self.minutes and t.hour in self.hours and t.month in self.months
                and self._day(t))

    def _day(self, t: datetime) -> bool:
        dom, dow = t.day in self.days, t.weekday() in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next_after(self, t: datetime) -> datetime:
        """The first due minute strictly after ``t`` (an aware datetime; returned in UTC)."""
        t = t.astimezone(UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        end = t + timedelta(days=_SEARCH_DAYS)
        while t < end:
            if t.month not in self.months or not self._day(t):
                t = (t + timedelta(days=1)).replace(hour=0, minute=0)
            elif t.hour not in self.hours:
                t = (t + timedelta(hours=1)).replace(minute=0)
            elif t.minute not in self.minutes:
                t += timedelta(minutes=1)
            else:
                return t
        raise ValueError(f"cadence {self.text!r} is never due")


def _values(spec: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        body, _, step_text = part.partition("/")
        step = _number(step_text, name, names={}) if step_text else 1
        if step < 1:
            raise ValueError(f"{name} step must be at least 1, got {step_text!r}")
        if body == "*":
            a, b = low, high
        elif "-" in body:
            first, _, last = body.partition("-")
            a, b = _number(first, name, names), _number(last, name, names)
        else:
            a = _number(body, name, names)
            b = high if step_text else a
        if not low <= a <= b <= high:
            raise ValueError(f"{name} {part!r} is outside {low}-{high} or reversed")
        out.update(range(a, b + 1, step))
    return out


def _number(text: str, name: str, names: dict[str, int]) -> int:
    t = text.strip().lower()
    if t in names:
        return names[t]
    if not t.isdigit():
        raise ValueError(f"{name} {text!r} is not a number")
    return int(t)


def parse_cadence(text: str) -> Cadence | None:
    """The cadence of ``text``; None for ``off``. Raises ``ValueError`` saying what is wrong."""
    if not isinstance(text, str):
        raise ValueError(f"must be off, hourly, daily, weekly or a cron expression, got {text!r}")
    key = text.strip().lower()
    if key == "off":
        return None
    fields = _NAMED.get(key, key).split()
    if len(fields) != 5:
        raise ValueError(f"must be off, hourly, daily, weekly or a cron expression of five fields "
                         f"(minute hour day-of-month month day-of-week), got {text!r}")
    sets = [_values(f, *spec) for f, spec in zip(fields, _FIELDS, strict=True)]
    weekdays = frozenset((d - 1) % 7 for d in sets[4])  # cron 0/7 = Sunday -> 6, 1 = Monday -> 0
    return Cadence(text, frozenset(sets[0]), frozenset(sets[1]), frozenset(sets[2]),
                   frozenset(sets[3]), weekdays, fields[2] == "*", fields[4] == "*")


def check_cadence(text: str) -> str:
    """``text`` when it is a valid cadence (for configuration validators)."""
    cad = parse_cadence(text)
    if cad is not None:
        cad.next_after(datetime(2000, 1, 1, tzinfo=UTC))  # "0 0 31 2 *" is never due
    return text
