"""Candidate quotes: the spans of a passage an answer may quote, and the text an answer shows.

A reader must be able to understand a quote on its own and find it in the source:

* a sentence that opens with a pronoun or a connective ("This works once per customer", "Them",
  "Dies gilt", "Außerdem"), or that names an exception ("There is one exception: ..."), is
  quoted with the sentence before it, which it refers to or qualifies (``ANAPHOR``,
  ``QUALIFIES``);
* a "how do I" question is answered by the steps: a run of list items, numbered lines or
  instructions is one span (``steps_block``);
* a line that only names an identifier ("SKU JK-1310.") answers nothing unless the question
  asks for an identifier (``identifier_only``);
* a record line "Label: value" ("Price: 329.00 €.", "Sizes: S, M, L.") states the value of its
  label (``record_label``), so a question naming the label is answered by that line;
* a sentence that ends in a colon is quoted with the list it introduces (``LIST_ITEM``);
* a table row is shown with its column headers ("Zone 3: Standard 9.95 €, Express not
  available", ``table_header``), never as bare cells.

``shown(text)`` is what the answer says for a quoted span: Markdown emphasis, heading marks,
list bullets and table pipes removed, whitespace collapsed. The citation's offsets still point
at the span in the source, so the page highlights exactly what was quoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ANAPHOR", "LIST_ITEM", "QUALIFIES", "Span", "identifier_only", "record_label", "shown", "spans",
           "steps_block", "table_header"]

#: Openings that refer back to the sentence before (English and German).
ANAPHOR = re.compile(
    r"^\W*(?:this|that|these|those|it|its|they|them|their|he|she|his|her|such|also|however|but|"
    r"therefore|then|otherwise|instead|in\s+(?:that|this|such\s+a)\s+case|in\s+addition|additionally|"
    r"furthermore|moreover|so|thus|both|either|neither|the\s+latter|the\s+former|"
    r"das|dies|diese[rsnm]?|es|sie|er|ihr|ihre[nmrs]?|sein|seine[nmrs]?|dort|hier|dann|damit|dafür|"
    r"dabei|dazu|deshalb|daher|außerdem|allerdings|jedoch|aber|auch|sonst|stattdessen|beides|beide)\b",
    re.IGNORECASE)
#: A sentence that qualifies the rule before it: it names an exception.
QUALIFIES = re.compile(r"\b(?:exceptions?|ausnahmen?)\b", re.IGNORECASE)
_IDENT_ONLY = re.compile(
    r"^\W*(?:sku|art(?:icle|ikel)?\.?-?\s*(?:no|nr|number|nummer)?\.?|item\s+(?:no|number)|"
    r"product\s+(?:no|number|code)|model|modell|id|ref(?:erence)?)\.?:?\s*[A-Z0-9][\w./-]*+\W*+$",
    re.IGNORECASE)
_LABEL = re.compile(r"^\W*([A-Za-zÄÖÜäöüß][\w ./-]{0,30}?):\s+\S")
_STEP = re.compile(
    r"^\s*(?:\d+[.)]\s|[-*•]\s|(?:first|then|next|finally|zuerst|dann|danach|anschließend)\b|"
    r"(?:open|click|choose|select|sign\s+in|log\s+in|go\s+to|enter|send|bring|call|contact|register|"
    r"fill\s+in|print|pack|attach|drop|tap|use|write|ask|take|put|visit|add|remove|follow|check|"
    r"öffnen\s+sie|klicken\s+sie|wählen\s+sie|geben\s+sie|melden\s+sie|senden\s+sie|schicken\s+sie|"
    r"bringen\s+sie|rufen\s+sie|füllen\s+sie|gehen\s+sie|nutzen\s+sie|tippen\s+sie)\b)",
    re.IGNORECASE)
#: A steps block quotes at most this many lines.
MAX_STEPS = 5
#: A list item: what a sentence ending in a colon introduces.
LIST_ITEM = re.compile(r"[ \t]*(?:\d+[.)]|[-*•+])\s")


@dataclass(frozen=True, slots=True)
class Span:
    """A candidate quote of one passage: ``start``..``end`` in its text, built around the
    sentence ``focus`` (start, end) that is scored."""

    start: int
    end: int
    focus: tuple[int, int]
    kind: str  # "sentence", "antecedent" (with the sentence it refers to) or "steps"


def identifier_only(sentence: str) -> bool:
    return bool(_IDENT_ONLY.match(sentence))


def record_label(sentence: str) -> str | None:
    """The label of a record line ("Price: 329.00 €." -> "Price"), else None."""
    m = _LABEL.match(sentence)
    return m.group(1).strip() if m else None


#: What may lie between two steps of one run: one line break, and the next item's number.
_BETWEEN_STEPS = re.compile(r"[ \t]*\n?[ \t]*(?:\d+[.)][ \t]*)?")
_NUMBER_ONLY = re.compile(r"^\s*\d+[.)]\s*$")


def is_step(sentence: str) -> bool:
    """A list item, a numbered line, or an instruction (a sentence that opens with a verb of
    doing, or with "first", "then", ...); a list number alone ("1.", which the sentence
    boundaries cut from its item) belongs to the step after it."""
    return bool(_STEP.match(sentence) or _NUMBER_ONLY.match(sentence))


def steps_block(text: str, sentences: Sequence[tuple[int, int]], i: int) -> tuple[int, int]:
    """Indices (first, last) of the run of step lines around sentence ``i``, at most
    ``MAX_STEPS`` steps (list numbers do not count), or (i, i) when it is not a step. Only
    sentences separated by whitespace within one paragraph belong to one run."""
    def step(j: int) -> bool:
        return is_step(text[sentences[j][0]:sentences[j][1]])

    def joined(a: int, b: int) -> bool:  # one line break at most, and a list number at most
        return bool(_BETWEEN_STEPS.fullmatch(text, sentences[a][1], sentences[b][0]))

    def number(j: int) -> bool:
        return bool(_NUMBER_ONLY.match(text[sentences[j][0]:sentences[j][1]]))

    if not step(i) or number(i):
        return i, i
    first = last = i
    while first > 0 and step(first - 1) and joined(first - 1, first):
        first -= 1
    while last + 1 < len(sentences) and step(last + 1) and joined(last, last + 1):
        last += 1
    while last > i and number(last):
        last -= 1
    items = [j for j in range(first, last + 1) if not number(j)]
    if len(items) > MAX_STEPS:  # keep the window of steps that holds sentence i
        k = items.index(i)
        lo = max(0, min(k - MAX_STEPS // 2, len(items) - MAX_STEPS))
        first, last = items[lo], items[lo + MAX_STEPS - 1]
        if first > 0 and number(first - 1):
            first -= 1
    return first, last


#: An object pronoun among a sentence's first words refers back too ("We ship them delivered
#: duty paid" after "Gas cartridges ..."). Capitalised "Sie" is the polite "you", not "them".
#: The leading marks are taken whole (``*+``): a run of them is not retried as words.
_EARLY_PRONOUN = re.compile(r"^\W*+(?:[\w'’-]+\s+){0,3}(?:them|these|those|dies|diese[nmrs]?|(?-i:sie))\b",
                            re.IGNORECASE)


def _refers_back(sentence: str) -> bool:
    return bool(ANAPHOR.match(sentence) or _EARLY_PRONOUN.match(sentence) or QUALIFIES.search(sentence))


def spans(text: str, sentences: Sequence[tuple[int, int]], quotable: Sequence[bool],
          procedure: bool, max_sentences: int = 3) -> list[Span]:
    """Every candidate quote of a passage: one per quotable sentence, with its antecedent
    when it opens with one, or its steps block for a "how do I" question."""
    out = []
    for i, (s, e) in enumerate(sentences):
        if not quotable[i]:
            continue
        if procedure:
            a, b = steps_block(text, sentences, i)
            if b > a:
                out.append(Span(sentences[a][0], sentences[b][1], (s, e), "steps"))
                continue
        start, j = s, i
        # A record line ("Price: 329.00 €.") is one attribute of a record, not what the next
        # line refers to.
        while (j > 0 and i - j + 1 < max_sentences and _refers_back(text[sentences[j][0]:sentences[j][1]])
               and quotable[j - 1] and not text[sentences[j - 1][1]:sentences[j][0]].count("\n\n")
               and record_label(text[sentences[j - 1][0]:sentences[j - 1][1]]) is None):
            j -= 1
            start = sentences[j][0]
        end = e
        if text[s:e].rstrip().endswith(":"):
            end = _list_end(text, sentences, i)
        out.append(Span(start, end, (s, e), "antecedent" if j < i else "list" if end > e else "sentence"))
    return out


def _list_end(text: str, sentences: Sequence[tuple[int, int]], i: int) -> int:
    """The end of the list sentence ``i`` (ending in a colon) introduces: the list items right
    after it, one line each, at most ``MAX_STEPS``; its own end when none follows."""
    end, k = sentences[i][1], i + 1
    while (k < len(sentences) and k - i <= MAX_STEPS and LIST_ITEM.match(text, sentences[k][0])
           and text.count("\n", sentences[k - 1][1], sentences[k][0]) == 1
           and not text[sentences[k - 1][1]:sentences[k][0]].strip()):
        end, k = sentences[k][1], k + 1
    return end


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_header(text: str, at: int) -> list[str] | None:
    """The column headers of the Markdown table whose row holds offset ``at`` of ``text`` (the
    first line of the run of table lines, when a delimiter row follows it), else None."""
    line_start = text.rfind("\n", 0, at) + 1
    if not text[line_start:].lstrip().startswith("|"):
        return None
    first = line_start
    while first > 0:
        prev = text.rfind("\n", 0, first - 1) + 1
        if not text[prev:first].lstrip().startswith("|"):
            break
        first = prev
    lines = text[first:].split("\n", 2)
    if len(lines) < 2 or not all(_DELIMITER_CELL.fullmatch(c) for c in _cells(lines[1]) if c):
        return None
    return _cells(lines[0])


#: Strong emphasis holds no other ``**``/``__`` (``(?!\1)``): each opening scans to the next mark
#: at most, so a line of ``**- `` is one pass.
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)((?:(?!\1).)+?)(?<=\S)\1|"
                       r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])|"
                       r"`([^`\n]+)`|(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_DELIMITER_CELL = re.compile(r":?-{3,}:?")
_LINE_MARK = re.compile(r"^[ \t]*(?:#{1,6}[ \t]+|[-*•+][ \t]+|\d+[.)][ \t]+|>[ \t]?)", re.MULTILINE)
_PIPES = re.compile(r"[ \t]*\|[ \t]*")


def shown(text: str, header: Sequence[str] | None = None) -> str:
    """``text`` as an answer shows it: no Markdown emphasis, heading marks, list bullets or
    table pipes; one line per source line, spaces collapsed. A table row under ``header`` (its
    table's column headers, ``table_header``) reads "first cell: header cell, header cell"."""
    out = _LINE_MARK.sub("", text)
    out = _EMPHASIS.sub(lambda m: m.group(2) or m.group(3) or m.group(4) or m.group(5), out)
    lines = []
    for line in out.splitlines():
        if "|" in line:
            cells = [c.strip() for c in line.strip().strip("|").split("|") if c.strip()]
            if all(_DELIMITER_CELL.fullmatch(c) for c in cells):  # a table's |---|:--:| row
                continue
            whole = _cells(line)
            if header and len(whole) == len(header) > 1 and whole != list(header) and whole[0]:
                line = whole[0] + ": " + ", ".join(f"{h} {c}".strip() for h, c in zip(header[1:], whole[1:],
                                                                                     strict=True) if c)
            else:
                line = "; ".join(cells)
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return "\n".join(lines)
