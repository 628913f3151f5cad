"""Evaluation case files (``examples/eval/README.md`` documents the format): read through the
one YAML loader (``evidex.yamlfile``) and validated as pydantic models, whole, before anything
runs.

Every problem is ``file:line: where: what``, as in the configuration, all of them at once so
a case file is fixed in one pass: the models check keys, types and each type's expectations;
the references between parts of the file (actors by name, unique ids, the defaults a case
leaves to ``defaults:``) and the files the collection names are checked after them, against the
same line map. Checks that need the documents (does the expected document exist for this
actor, is the quoted fact in it) run once the collection is built (``_collection.lint``).

A case file reads only below its own folder, or below the ``root`` its runner names: a path
is relative, and resolved (symbolic links followed) before it is checked, so an absolute path,
a ``..`` or a link leading out of that folder is an error at its line, never a file read. A case
file is something one downloads and runs; it must not be able to put ``/etc/passwd`` into a
store whose answers quote it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from ..config import Visibility
from ..model import Actor, ConfigError, EvidexError, is_language_tag
from ..yamlfile import Problems, StrictModel, YamlFile, read_yaml

__all__ = ["ANSWERED_TYPES", "TYPES", "Case", "CaseFile", "Gate", "IngestEntry", "load_cases"]

#: Types whose pass means "answered, citing what was expected": the gate's answerable share.
ANSWERED_TYPES = frozenset({"answerable", "language", "changed_source"})
_MAX_TOP_K = 50
#: Largest case file read (the shipped set of 218 cases is 52 KB) and most values in it.
MAX_CASE_FILE_BYTES = 4 * 1024 * 1024
MAX_CASE_FILE_NODES = 250_000


def _text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def _language(value: str) -> str:
    if not is_language_tag(value):
        raise ValueError(f"must be a language tag such as en or de, got {value!r}")
    return value


Text = Annotated[str, AfterValidator(_text)]
Texts = Annotated[list[Text], Field(min_length=1)]
Language = Annotated[str, AfterValidator(_language)]
TopK = Annotated[int, Field(ge=1, le=_MAX_TOP_K)]


class _Model(StrictModel):
    # Strict: YAML gives typed values, and a case file's ``decline: "no"`` or ``top_k: "3"``
    # is a mistake to show, not a value to convert.
    model_config = ConfigDict(strict=True)


class Gate(_Model):
    """What a run must achieve (the issue's targets unless the file's ``gate:`` says otherwise)."""

    access_violations_max: Annotated[int, Field(ge=0)] = 0
    invalid_citations_max: Annotated[int, Field(ge=0)] = 0
    injection_citations_max: Annotated[int, Field(ge=0)] = 0
    answerable_cited_min: Annotated[float, Field(ge=0, le=1)] = 0.85
    #: Unanswerable cases about something the collection does not cover at all.
    out_of_scope_declined_min: Annotated[float, Field(ge=0, le=1)] = 1.0
    #: Unanswerable cases marked ``near_miss``: on topic, but no source states the answer.
    near_misses_declined_min: Annotated[float, Field(ge=0, le=1)] = 0.70
    category_answerable_min: Annotated[float, Field(ge=0, le=1)] = 0.60


class _Ingested(_Model):
    """``evidex ingest --tenant --groups --visibility --language``: what a file does not state."""

    tenant: Text | None = None
    groups: Texts | None = None
    visibility: Visibility | None = None
    language: Language | None = None


class _IngestSpec(_Ingested):
    path: Text


class _StepSpec(_Ingested):
    ingest: Text


class _CollectionSpec(_Model):
    tenant: Text | None = None
    ingest: Annotated[list[_IngestSpec], Field(min_length=1)]


class _ActorSpec(_Model):
    tenant: Text
    groups: list[Text] = Field(default_factory=list)
    visibilities: list[Visibility] = Field(default_factory=lambda: ["public"])
    #: Verified attributes (for live tools: whose orders the actor may look up).
    claims: dict[Text, Text] | None = None

    def actor(self) -> Actor:
        return Actor(self.tenant, frozenset(self.groups), visibilities=frozenset(self.visibilities),
                     claims=dict(self.claims or {}))

    @model_validator(mode="after")
    def _buildable(self) -> _ActorSpec:
        try:
            self.actor()
        except EvidexError as exc:
            raise ValueError(str(exc)) from None
        return self


class _Defaults(_Model):
    as_: Text | None = Field(default=None, alias="as")
    language: Language | None = None
    top_k: TopK | None = None


# -- each type's expectations (README "Types and their expect keys") ---------------------------

class _AnswerableExpect(_Model):
    documents: Texts
    anchors: Texts | None = None
    must_include: Texts | None = None


class _LanguageExpect(_AnswerableExpect):
    passage_language: Language


class _UnanswerableExpect(_Model):
    reason_any: Texts | None = None


class _AccessExpect(_Model):
    forbidden: Texts
    decline: bool | None = None


class _ChangedExpect(_Model):
    documents: Texts
    version: Text
    must_include: Texts | None = None


class _InjectionExpect(_Model):
    hostile: Texts
    forbidden_phrases: Texts | None = None


class _LiveExpect(_Model):
    tool: Text
    must_include: Texts | None = None


class _KeywordExpect(_Model):
    documents: Texts
    top_k: TopK | None = None


class _OldCitation(_Model):
    document_id: Text
    version: Text
    quote: Text
    passage: Annotated[int, Field(ge=1)] | None = None
    anchor: Text | None = None

    @model_validator(mode="after")
    def _one_of(self) -> _OldCitation:
        if (self.passage is None) == (self.anchor is None):
            raise ValueError("give exactly one of passage (a number) or anchor")
        return self


class _Case(_Model):
    type: str  # each type's model narrows it to its name (the discriminator)
    expect: _Model
    id: Text
    category: Text
    question: Text
    language: Language | None = None
    as_: Text | None = Field(default=None, alias="as")
    note: str | None = None


class _Answerable(_Case):
    type: Literal["answerable"]
    expect: _AnswerableExpect


class _Language(_Case):
    type: Literal["language"]
    expect: _LanguageExpect


class _Unanswerable(_Case):
    type: Literal["unanswerable"]
    expect: _UnanswerableExpect = _UnanswerableExpect()
    #: On topic (the collection is about the question's subject) but no source states the
    #: answer; reported and gated apart from questions the collection does not cover at all.
    near_miss: bool = False


class _Access(_Case):
    type: Literal["access"]
    expect: _AccessExpect


class _ChangedSource(_Case):
    type: Literal["changed_source"]
    expect: _ChangedExpect
    #: Ingested on a copy of the store before the question is asked.
    steps: Annotated[list[_StepSpec], Field(min_length=1)]
    old_citation: _OldCitation
    expect_matched_version: Text


class _Injection(_Case):
    type: Literal["injection"]
    expect: _InjectionExpect


class _Live(_Case):
    type: Literal["live"]
    expect: _LiveExpect


class _KeywordExact(_Case):
    type: Literal["keyword_exact"]
    expect: _KeywordExpect


_CASE_TYPES = (_Answerable, _Language, _Unanswerable, _Access, _ChangedSource, _Injection, _Live,
               _KeywordExact)
#: The case types, in the README's order.
TYPES: tuple[str, ...] = tuple(c.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
                               for c in _CASE_TYPES)
_CaseSpec = Annotated[_Answerable | _Language | _Unanswerable | _Access | _ChangedSource | _Injection
                      | _Live | _KeywordExact, Field(discriminator="type")]


class _CaseFileSpec(_Model):
    version: Literal[1]
    collection: _CollectionSpec
    actors: Annotated[dict[Text, _ActorSpec], Field(min_length=1)]
    defaults: _Defaults = _Defaults()
    gate: Gate | None = None
    cases: Annotated[list[_CaseSpec], Field(min_length=1)]


# -- what the runner works with ------------------------------------------------------------------

@dataclass(frozen=True)
class IngestEntry:
    """``evidex ingest PATH --tenant T --groups G --visibility V --language L --split heading``;
    ``path`` is resolved and inside the case file's root."""

    path: Path
    tenant: str
    groups: tuple[str, ...] | None
    visibility: str | None
    language: str | None
    line: int
    where: str

    def defaults(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "groups": list(self.groups) if self.groups else None,
                "visibility": self.visibility, "language": self.language, "version": None}


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    type: str
    question: str
    language: str
    actor_name: str
    actor: Actor
    top_k: int
    expect: dict[str, Any]
    line: int
    where: str
    #: Line of each key of the case, ``expect.<key>`` for expectations.
    lines: dict[str, int] = field(default_factory=dict)
    note: str | None = None
    steps: tuple[IngestEntry, ...] = ()
    old_citation: dict[str, Any] | None = None
    expect_matched_version: str | None = None
    near_miss: bool = False

    def line_of(self, key: str) -> int:
        return self.lines.get(key, self.line)


@dataclass(frozen=True)
class CaseFile:
    path: Path
    #: The folder every file the case file names must be inside (resolved).
    root: Path
    collection: tuple[IngestEntry, ...]
    actors: dict[str, Actor]
    #: Verified attributes of each actor (for live tools), as the file gives them.
    claims: dict[str, dict[str, str]]
    gate: Gate
    cases: tuple[Case, ...]

    def select(self, *, categories: tuple[str, ...] = (), types: tuple[str, ...] = (),
               ids: tuple[str, ...] = ()) -> CaseFile:
        """The cases matching every given filter (each filter: any of its values). A value that
        matches no case of the file is an error, so a typo never selects nothing silently."""
        for what, wanted, have in (("category", categories, {c.category for c in self.cases}),
                                   ("type", types, {c.type for c in self.cases}),
                                   ("id", ids, {c.id for c in self.cases})):
            unknown = sorted(set(wanted) - have)
            if unknown:
                raise ConfigError(f"{self.path}: no case has {what} {unknown[0]!r}; the file has: "
                                  f"{', '.join(sorted(have))}")
        keep = tuple(c for c in self.cases
                     if (not categories or c.category in categories)
                     and (not types or c.type in types) and (not ids or c.id in ids))
        if not keep:
            raise ConfigError(f"{self.path}: no case matches all of the filters")
        return dataclasses.replace(self, cases=keep)


# -- confinement -----------------------------------------------------------------------------------

def confine(written: str, base: Path, root: Path) -> Path:
    """The file or folder ``written`` names (relative to ``base``), resolved with every symbolic
    link followed; ``ValueError`` when it is absolute, leads outside ``root`` or does not exist."""
    shown = written if len(written) <= 100 else written[:97] + "..."
    if Path(written).is_absolute():
        raise ValueError(f"{shown} is an absolute path; a case file names files relative to its "
                         "own folder")
    try:
        target = (base / written).resolve()
        exists = target.exists()
    except (OSError, RuntimeError) as exc:  # a name too long, a loop of links (RuntimeError)
        raise ValueError(f"cannot read {shown}: {getattr(exc, 'strerror', None) or exc}") from None
    if not target.is_relative_to(root):
        raise ValueError(f"{shown} resolves to {target}, outside {root}: a case file reads only "
                         "below its own folder or the root given (--root)")
    if not exists:
        raise ValueError(f"no such file or folder: {base / written}")
    return target


def _root(path: Path, root: str | Path | None) -> Path:
    if root is None:
        return path.parent.resolve()
    resolved = Path(root).resolve()
    if not resolved.is_dir():
        raise ConfigError(f"{root}: the root of the case file is not a folder")
    return resolved


# -- from the models to the runner's cases ----------------------------------------------------------

@dataclass
class _Resolver:
    """The checks that relate parts of the file: actors named, defaults filled, ids unique,
    every path inside the root."""

    doc: YamlFile
    spec: _CaseFileSpec
    base: Path
    root: Path
    p: Problems
    actors: dict[str, Actor]
    ids: dict[str, int] = field(default_factory=dict)

    def at(self, loc: tuple[str | int, ...], missing: bool = False) -> tuple[int, str]:
        """(line, where) of ``loc``, each case named by its id."""
        return self.doc.locate(loc, missing=missing, label="id")

    def entry(self, loc: tuple[str | int, ...], spec: _Ingested, written: str,
              key: str) -> IngestEntry | None:
        """An ingest entry or step (``key``: the key its path is written under)."""
        path = tenant = None
        try:
            path = confine(written, self.base, self.root)
        except ValueError as exc:
            self.p.add(*self.at((*loc, key)), str(exc))
        tenant = spec.tenant or self.spec.collection.tenant
        if tenant is None:
            self.p.add(*self.at((*loc, "tenant"), missing=True),
                       "required here or in collection.tenant: the tenant of its documents")
        if path is None or tenant is None:
            return None
        return IngestEntry(path, tenant, tuple(spec.groups) if spec.groups else None, spec.visibility,
                           spec.language, *self.at(loc))

    def case(self, i: int, c: _Case) -> Case | None:
        loc: tuple[str | int, ...] = ("cases", i)
        line, where = self.at(loc)
        ok = True
        id_line = self.doc.line((*loc, "id"))
        if c.id in self.ids:
            self.p.add(id_line, f"{where}.id", f"duplicate id (first on line {self.ids[c.id]})")
            ok = False
        self.ids.setdefault(c.id, id_line)
        defaults = self.spec.defaults
        actor = c.as_ or defaults.as_
        known = ", ".join(self.actors)
        if actor is None:
            self.p.add(line, f"{where}.as", f"required here or in defaults.as: one of {known}")
        elif actor not in self.actors and c.as_ is not None:  # a wrong defaults.as: said once
            self.p.add(self.doc.line((*loc, "as")), f"{where}.as",
                       f"unknown actor {actor!r}; the file defines: {known}")
        language = c.language or defaults.language
        if language is None:
            self.p.add(line, f"{where}.language", "required here or in defaults.language: a language "
                       "tag such as en or de")
        written = getattr(c, "steps", [])
        steps = tuple(e for j, s in enumerate(written)
                      if (e := self.entry((*loc, "steps", j), s, s.ingest, "ingest")) is not None)
        if not ok or len(steps) < len(written) or language is None or actor not in self.actors:
            return None
        assert actor is not None
        expect = c.expect.model_dump(exclude_none=True, exclude_unset=True)
        old = getattr(c, "old_citation", None)
        lines = {**self.doc.key_lines((*loc, "expect"), "expect."), **self.doc.key_lines(loc)}
        return Case(c.id, c.category, c.type, c.question, language, actor, self.actors[actor],
                    expect.get("top_k", defaults.top_k or 6), expect, line, where, lines, c.note,
                    steps, old.model_dump(exclude_none=True) if old else None,
                    getattr(c, "expect_matched_version", None), getattr(c, "near_miss", False))


def load_cases(path: str | Path, *, root: str | Path | None = None) -> CaseFile:
    """Read and check a case file; raises ``ConfigError`` naming file, line and key of every
    problem (the first on the first line, the others below it). Every file it names must be
    inside ``root`` (default: the case file's folder), symbolic links resolved."""
    path = Path(path)
    doc = read_yaml(path, what="case file", max_bytes=MAX_CASE_FILE_BYTES,
                    max_nodes=MAX_CASE_FILE_NODES, hint=" (cases share settings through defaults:)")
    if not isinstance(doc.data, dict):
        raise doc.fail((), "a case file is a mapping with version, collection, actors and cases")
    spec = doc.validate(_CaseFileSpec, label="id")
    actors = {name: a.actor() for name, a in spec.actors.items()}
    r = _Resolver(doc, spec, path.parent, _root(path, root), Problems(path), actors)
    if spec.defaults.as_ is not None and spec.defaults.as_ not in actors:
        r.p.add(*doc.locate(("defaults", "as")), f"unknown actor {spec.defaults.as_!r}; the file "
                f"defines: {', '.join(actors)}")
    entries = [r.entry(("collection", "ingest", i), e, e.path, "path")
               for i, e in enumerate(spec.collection.ingest)]
    cases = [r.case(i, c) for i, c in enumerate(spec.cases)]
    r.p.raise_any()
    return CaseFile(path, r.root, tuple(e for e in entries if e is not None), actors,
                    {name: dict(a.claims or {}) for name, a in spec.actors.items()},
                    spec.gate or Gate(), tuple(c for c in cases if c is not None))
