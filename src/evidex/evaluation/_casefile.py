"""Evaluation case files (``examples/eval/README.md`` documents the format): read and checked
whole before anything runs.

Every problem is reported as ``file:line: where: what`` (the configuration loader's form), all of
them at once, so a case file is fixed in one pass: unknown keys at any level, unknown types and
actors, duplicate ids and keys, missing or mistyped expectations, steps whose files do not
exist. Checks that need the documents (does the expected document exist for this actor, is the
quoted fact in it) run once the collection is built (``_lint``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..model import VISIBILITIES, Actor, ConfigError, EvidexError, is_language_tag

__all__ = ["ANSWERED_TYPES", "TYPES", "Case", "CaseFile", "Gate", "IngestEntry", "load_cases"]

#: Case types and the ``expect`` keys each allows; ``REQUIRED`` the ones it must give.
EXPECT_KEYS: dict[str, frozenset[str]] = {
    "answerable": frozenset({"documents", "anchors", "must_include"}),
    "language": frozenset({"documents", "anchors", "must_include", "passage_language"}),
    "unanswerable": frozenset({"reason_any"}),
    "access": frozenset({"forbidden", "decline"}),
    "changed_source": frozenset({"documents", "version", "must_include"}),
    "injection": frozenset({"hostile", "forbidden_phrases"}),
    "live": frozenset({"tool", "must_include"}),
    "keyword_exact": frozenset({"documents", "top_k"}),
}
REQUIRED: dict[str, frozenset[str]] = {
    "answerable": frozenset({"documents"}), "language": frozenset({"documents", "passage_language"}),
    "unanswerable": frozenset(), "access": frozenset({"forbidden"}),
    "changed_source": frozenset({"documents", "version"}), "injection": frozenset({"hostile"}),
    "live": frozenset({"tool"}), "keyword_exact": frozenset({"documents"}),
}
TYPES = tuple(EXPECT_KEYS)
#: Types whose pass means "answered, citing what was expected": the gate's answerable share.
ANSWERED_TYPES = frozenset({"answerable", "language", "changed_source"})

_TOP_KEYS = {"version", "collection", "actors", "defaults", "gate", "cases"}
_CASE_KEYS = {"id", "category", "type", "question", "language", "as", "expect", "note"}
_CHANGED_KEYS = {"steps", "old_citation", "expect_matched_version"}
_INGEST_KEYS = {"path", "tenant", "groups", "visibility", "language"}
_STEP_KEYS = {"ingest", "tenant", "groups", "visibility", "language"}
_ACTOR_KEYS = {"tenant", "groups", "visibilities", "claims"}
_OLD_KEYS = {"document_id", "version", "passage", "anchor", "quote"}
_DEFAULT_KEYS = {"as", "language", "top_k"}
_MAX_TOP_K = 50
_ACTOR_FIELDS = frozenset(f.name for f in dataclasses.fields(Actor))


@dataclass(frozen=True)
class Gate:
    """What a run must achieve (the issue's targets unless the file's ``gate:`` says otherwise)."""

    access_violations_max: int = 0
    invalid_citations_max: int = 0
    injection_citations_max: int = 0
    answerable_cited_min: float = 0.85
    unanswerable_declined_min: float = 0.95
    category_answerable_min: float = 0.60


@dataclass(frozen=True)
class IngestEntry:
    """``evidex ingest PATH --tenant T --groups G --visibility V --language L --split heading``."""

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

    def line_of(self, key: str) -> int:
        return self.lines.get(key, self.line)


@dataclass(frozen=True)
class CaseFile:
    path: Path
    collection: tuple[IngestEntry, ...]
    actors: dict[str, Actor]
    #: Verified attributes of each actor (for live tools), kept even where ``Actor`` has none.
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


# -- YAML with line numbers --------------------------------------------------------------------

class _Map(dict):  # type: ignore[type-arg]
    line: int
    lines: dict[Any, int]


class _Seq(list):  # type: ignore[type-arg]
    line: int
    lines: list[int]


class _Loader(yaml.SafeLoader):
    duplicates: list[tuple[int, str]]


def _mapping(loader: _Loader, node: yaml.MappingNode) -> _Map:
    loader.flatten_mapping(node)
    out = _Map()
    out.line, out.lines = node.start_mark.line + 1, {}
    for k_node, v_node in node.value:
        key = loader.construct_object(k_node, deep=True)
        line = k_node.start_mark.line + 1
        if key in out.lines:
            loader.duplicates.append((line, f"{key}: duplicate key (first on line {out.lines[key]})"))
        out[key] = loader.construct_object(v_node, deep=True)
        out.lines[key] = line
    return out


def _sequence(loader: _Loader, node: yaml.SequenceNode) -> _Seq:
    out = _Seq(loader.construct_object(n, deep=True) for n in node.value)
    out.line, out.lines = node.start_mark.line + 1, [n.start_mark.line + 1 for n in node.value]
    return out


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the case file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the case file is not UTF-8 text") from None
    loader = _Loader(text)
    loader.duplicates = []
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    finally:
        loader.dispose()
    if loader.duplicates:
        line, msg = loader.duplicates[0]
        raise ConfigError(f"{path}:{line}: {msg}")
    return data


# -- validation --------------------------------------------------------------------------------

class Problems:
    """Problems found so far, each ``(line, where, what)``; raised together as one error."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.found: list[tuple[int, str]] = []

    def add(self, line: int, where: str, what: str) -> None:
        self.found.append((line, f"{self.path}:{line}: {where}: {what}"))

    def raise_any(self) -> None:
        if self.found:
            lines = [text for _, text in sorted(self.found, key=lambda f: f[0])]
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            raise ConfigError("\n".join([lines[0] + more, *lines[1:]]))


def _line(container: Any, key: Any) -> int:
    if isinstance(container, _Map) and key in container.lines:
        return container.lines[key]
    if isinstance(container, _Seq) and isinstance(key, int) and key < len(container.lines):
        return container.lines[key]
    return getattr(container, "line", 1)


def _mapping_of(value: Any, keys: set[str] | frozenset[str], where: str, line: int,
                p: Problems) -> _Map | None:
    """``value`` as a mapping with only ``keys``; reports and returns None when it is not one."""
    if not isinstance(value, _Map):
        p.add(line, where, f"must be a mapping, got {type(value).__name__}")
        return None
    for key in value:
        if key not in keys:
            name = str(key) if where == "(top level)" else f"{where}.{key}"
            p.add(value.lines[key], name, f"unknown key; allowed: {', '.join(sorted(keys))}")
    return value


def _str(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_str(v) for v in value)


def _entry(value: Any, where: str, line: int, p: Problems, base: Path, path_key: str,
           keys: set[str], default_tenant: str | None) -> IngestEntry | None:
    m = _mapping_of(value, keys, where, line, p)
    if m is None:
        return None
    ok = True
    if not _str(m.get(path_key)):
        p.add(_line(m, path_key), f"{where}.{path_key}", "required: a file or folder relative to "
              "the case file")
        ok = False
    elif not (base / m[path_key]).exists():
        p.add(_line(m, path_key), f"{where}.{path_key}", f"no such file or folder: {base / m[path_key]}")
        ok = False
    tenant = m.get("tenant", default_tenant)
    if not _str(tenant):
        p.add(_line(m, "tenant"), f"{where}.tenant", "required: the tenant of its documents")
        ok = False
    groups = m.get("groups")
    if groups is not None and not _str_list(groups):
        p.add(_line(m, "groups"), f"{where}.groups", "must be a non-empty list of group names")
        ok = False
    if m.get("visibility") is not None and m["visibility"] not in VISIBILITIES:
        p.add(_line(m, "visibility"), f"{where}.visibility",
              f"must be one of {', '.join(sorted(VISIBILITIES))}")
        ok = False
    if m.get("language") is not None and not is_language_tag(m["language"]):
        p.add(_line(m, "language"), f"{where}.language", "must be a language tag such as en or de")
        ok = False
    if not ok:
        return None
    return IngestEntry(base / m[path_key], tenant, tuple(groups) if groups else None,
                       m.get("visibility"), m.get("language"), line, where)


def _actors(value: Any, line: int, p: Problems) -> tuple[dict[str, Actor], dict[str, dict[str, str]]]:
    actors: dict[str, Actor] = {}
    claims: dict[str, dict[str, str]] = {}
    if not isinstance(value, _Map) or not value:
        p.add(line, "actors", "required: a mapping of actor names to {tenant, groups, visibilities}")
        return actors, claims
    for name, spec in value.items():
        where = f"actors.{name}"
        m = _mapping_of(spec, _ACTOR_KEYS, where, value.lines[name], p)
        if m is None:
            continue
        groups = m.get("groups", [])
        if not isinstance(groups, list) or not all(_str(g) for g in groups):
            p.add(_line(m, "groups"), f"{where}.groups", "must be a list of group names")
            continue
        found = m.get("claims") or {}
        if not isinstance(found, dict) or not all(_str(k) and _str(v) for k, v in found.items()):
            p.add(_line(m, "claims"), f"{where}.claims", "must map claim names to strings")
            continue
        # Claims go to the actor once ``Actor`` carries them (live tools, issue 22).
        extra = {"claims": dict(found)} if found and "claims" in _ACTOR_FIELDS else {}
        try:
            actors[name] = Actor(m.get("tenant"), frozenset(groups),  # type: ignore[arg-type]
                                 visibilities=frozenset(m.get("visibilities", ["public"])), **extra)
        except (EvidexError, TypeError) as exc:
            p.add(m.line, where, str(exc))
            continue
        claims[name] = dict(found)
    return actors, claims


def _gate(value: Any, line: int, p: Problems) -> Gate:
    if value is None:
        return Gate()
    names = {f.name: f.type for f in dataclasses.fields(Gate)}
    m = _mapping_of(value, set(names), "gate", line, p)
    if m is None:
        return Gate()
    out: dict[str, Any] = {}
    for key, v in m.items():
        if key not in names:
            continue
        if key.endswith("_max"):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                p.add(m.lines[key], f"gate.{key}", "must be a whole number >= 0")
                continue
        elif isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= 1:
            p.add(m.lines[key], f"gate.{key}", "must be a share between 0 and 1")
            continue
        out[key] = v
    return Gate(**out)


def _top_k(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= _MAX_TOP_K


#: Checks of each ``expect`` value: (test, what a good value is).
_EXPECT_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "documents": (_str_list, "a non-empty list of document ids"),
    "anchors": (_str_list, "a non-empty list of anchors"),
    "must_include": (_str_list, "a non-empty list of phrases"),
    "passage_language": (is_language_tag, "a language tag such as en or de"),
    "reason_any": (_str_list, "a non-empty list of decline reasons"),
    "forbidden": (_str_list, "a non-empty list of document ids"),
    "decline": (lambda v: isinstance(v, bool), "true or false"),
    "version": (_str, "a version string"),
    "hostile": (_str_list, "a non-empty list of document ids"),
    "forbidden_phrases": (_str_list, "a non-empty list of phrases"),
    "tool": (_str, "a tool id"),
    "top_k": (_top_k, f"a whole number from 1 to {_MAX_TOP_K}"),
}


def _case(value: Any, index: int, line: int, ctx: _Context, p: Problems) -> Case | None:
    cid = value.get("id") if isinstance(value, _Map) else None
    where = f"cases[{index}]" + (f" {cid}" if isinstance(cid, str) else "")
    ctype = value.get("type") if isinstance(value, _Map) else None
    allowed = _CASE_KEYS | (_CHANGED_KEYS if ctype == "changed_source" else set())
    m = _mapping_of(value, allowed, where, line, p)
    if m is None:
        return None
    ok = True
    for key in ("id", "category", "question"):
        if not _str(m.get(key)):
            p.add(_line(m, key), f"{where}.{key}", "required: a non-empty string")
            ok = False
    if _str(cid):
        if cid in ctx.ids:
            p.add(_line(m, "id"), f"{where}.id", f"duplicate id (first on line {ctx.ids[cid]})")
            ok = False
        else:
            ctx.ids[cid] = _line(m, "id")
    if ctype not in EXPECT_KEYS:
        p.add(_line(m, "type"), f"{where}.type", f"unknown type {ctype!r}; known: {', '.join(TYPES)}")
        return None
    language = m.get("language", ctx.defaults.get("language"))
    if not is_language_tag(language):
        p.add(_line(m, "language"), f"{where}.language",
              "required (here or in defaults): a language tag such as en or de")
        ok = False
    actor_name = m.get("as", ctx.defaults.get("as"))
    if actor_name not in ctx.actors:
        known = ", ".join(ctx.actors) or "none"
        p.add(_line(m, "as"), f"{where}.as", f"unknown actor {actor_name!r}; the file defines: {known}")
        ok = False
    expect = m.get("expect", _Map())
    if not isinstance(expect, _Map):
        p.add(_line(m, "expect"), f"{where}.expect", "must be a mapping")
        return None
    lines = {f"expect.{k}": v for k, v in getattr(expect, "lines", {}).items()}
    lines.update(getattr(m, "lines", {}))
    for key, v in expect.items():
        if key not in EXPECT_KEYS[ctype]:
            p.add(expect.lines[key], f"{where}.expect.{key}",
                  f"not an expectation of type {ctype}; allowed: {', '.join(sorted(EXPECT_KEYS[ctype]))}")
            ok = False
            continue
        test, good = _EXPECT_CHECKS[key]
        if not test(v):
            p.add(expect.lines[key], f"{where}.expect.{key}", f"must be {good}")
            ok = False
    for key in sorted(REQUIRED[ctype] - set(expect)):
        p.add(_line(m, "expect"), f"{where}.expect", f"type {ctype} needs expect.{key}")
        ok = False
    steps: list[IngestEntry] = []
    old = None
    if ctype == "changed_source":
        ok = _changed(m, where, ctx, p, steps) and ok
        old = m.get("old_citation")
    if not ok:
        return None
    top_k = expect.get("top_k", ctx.defaults.get("top_k", 6))
    return Case(cid, m["category"], ctype, m["question"], language, actor_name,
                ctx.actors[actor_name], top_k, dict(expect), m.line, where, lines,
                m.get("note"), tuple(steps), dict(old) if old else None,
                m.get("expect_matched_version"))


def _changed(m: _Map, where: str, ctx: _Context, p: Problems, steps: list[IngestEntry]) -> bool:
    ok = True
    raw = m.get("steps")
    if not isinstance(raw, _Seq) or not raw:
        p.add(_line(m, "steps"), f"{where}.steps", "type changed_source needs steps: "
              "[{ingest: FILE, tenant: T}]")
        ok = False
    else:
        for i, s in enumerate(raw):
            entry = _entry(s, f"{where}.steps[{i}]", raw.lines[i], p, ctx.base, "ingest",
                           _STEP_KEYS, ctx.tenant)
            ok = ok and entry is not None
            if entry is not None:
                steps.append(entry)
    old = m.get("old_citation")
    om = _mapping_of(old, _OLD_KEYS, f"{where}.old_citation", _line(m, "old_citation"), p)
    if om is None:
        ok = False
    else:
        for key in ("document_id", "version", "quote"):
            if not _str(om.get(key)):
                p.add(_line(om, key), f"{where}.old_citation.{key}", "required: a non-empty string")
                ok = False
        if ("passage" in om) == ("anchor" in om):
            p.add(om.line, f"{where}.old_citation", "give exactly one of passage (a number) or anchor")
            ok = False
        elif "passage" in om and (isinstance(om["passage"], bool)
                                  or not isinstance(om["passage"], int) or om["passage"] < 1):
            p.add(_line(om, "passage"), f"{where}.old_citation.passage", "must be a passage number")
            ok = False
    if not _str(m.get("expect_matched_version")):
        p.add(_line(m, "expect_matched_version"), f"{where}.expect_matched_version",
              "type changed_source needs the version the old quote must match")
        ok = False
    return ok


@dataclass
class _Context:
    base: Path
    tenant: str | None
    actors: dict[str, Actor]
    defaults: dict[str, Any]
    ids: dict[str, int] = field(default_factory=dict)


def load_cases(path: str | Path) -> CaseFile:
    """Read and check a case file; raises ``ConfigError`` naming file, line and key of every
    problem (the first on the first line, the others below it)."""
    path = Path(path)
    data = _read(path)
    p = Problems(path)
    if not isinstance(data, _Map):
        raise ConfigError(f"{path}:1: (top level): a case file is a mapping with version, "
                          "collection, actors and cases")
    _mapping_of(data, _TOP_KEYS, "(top level)", 1, p)
    if data.get("version") != 1:
        p.add(_line(data, "version"), "version", "required: 1 (the format this evidex reads)")
    base = path.parent
    col = _mapping_of(data.get("collection"), {"tenant", "ingest"}, "collection",
                      _line(data, "collection"), p)
    entries: list[IngestEntry] = []
    tenant = None
    if col is not None:
        tenant = col.get("tenant")
        if tenant is not None and not _str(tenant):
            p.add(_line(col, "tenant"), "collection.tenant", "must be a tenant name")
            tenant = None
        raw = col.get("ingest")
        if not isinstance(raw, _Seq) or not raw:
            p.add(_line(col, "ingest"), "collection.ingest",
                  "required: a list of {path, tenant, groups, visibility, language}")
        else:
            for i, e in enumerate(raw):
                entry = _entry(e, f"collection.ingest[{i}]", raw.lines[i], p, base, "path",
                               _INGEST_KEYS, tenant)
                if entry is not None:
                    entries.append(entry)
    actors, claims = _actors(data.get("actors"), _line(data, "actors"), p)
    defaults = _mapping_of(data.get("defaults", _Map()), _DEFAULT_KEYS, "defaults",
                           _line(data, "defaults"), p) or {}
    if "top_k" in defaults and not _top_k(defaults["top_k"]):
        p.add(_line(defaults, "top_k"), "defaults.top_k", f"must be a whole number from 1 to {_MAX_TOP_K}")
    if "as" in defaults and defaults["as"] not in actors:
        p.add(_line(defaults, "as"), "defaults.as", f"unknown actor {defaults['as']!r}")
    gate = _gate(data.get("gate"), _line(data, "gate"), p)
    ctx = _Context(base, tenant, actors, dict(defaults))
    raw_cases = data.get("cases")
    cases: list[Case] = []
    if not isinstance(raw_cases, _Seq) or not raw_cases:
        p.add(_line(data, "cases"), "cases", "required: a non-empty list of cases")
    else:
        for i, c in enumerate(raw_cases):
            case = _case(c, i, raw_cases.lines[i], ctx, p)
            if case is not None:
                cases.append(case)
    p.raise_any()
    return CaseFile(path, tuple(entries), actors, claims, gate, tuple(cases))
