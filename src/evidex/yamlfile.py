"""Every YAML evidex reads: the configuration, evaluation case files, Markdown front matter.

One loader, so every file is held to the same rules and every mistake reads the same way,
``file:line: where: what``:

- **No anchors, aliases or merge keys.** PyYAML's safe loader expands them, and with them a few
  hundred bytes describe a structure that never ends (``a: &a [*a]``) or has a billion leaves
  (nested aliases, each repeating the one before ten times). Nothing evidex reads needs them: a
  configuration and a case file share settings through their ``defaults:`` sections, front
  matter is a handful of scalar keys. They are refused with their line, never expanded.
- **Bounded**: file size, nesting depth and number of values, each refused before anything
  is built (the composer recurses once per level, so depth is also what keeps a document of
  50,000 ``[`` from ending in a ``RecursionError``).
- **Duplicate keys are errors** (the first occurrence's line named): YAML keeps the last one
  silently, and a repeated ``visibility:`` or ``groups:`` is the kind of slip that makes
  documents readable by the wrong people. A mapping key must be a single value.
- **A value the constructor cannot build** (a 5,000-digit number, the 45th of a month) is an
  error at its line, not a ``ValueError`` from deep inside PyYAML.
- **Validation through pydantic**, each error located in the node tree: the line of the key
  (or of the mapping that lacks it) and the dotted path a reader finds in the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from .model import ConfigError

__all__ = [
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "Problems",
    "StrictModel",
    "YamlFile",
    "YamlRefused",
    "compose_yaml",
    "read_yaml",
    "yaml_problem",
]

#: Deepest nesting accepted (a configuration is about five levels deep, a case file six).
MAX_YAML_DEPTH = 64
#: Most values (scalars, lists, mappings; keys count too) in one document by default (a long
#: list of web URLs is a few thousand; longer lists belong in a sitemap).
MAX_YAML_NODES = 50_000
#: Largest file read by default.
MAX_YAML_BYTES = 1024 * 1024
#: Most problems listed under the first line of one error (all are counted on the first).
MAX_LISTED = 50

_MERGE_TAG = "tag:yaml.org,2002:merge"

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Base of every model read from a file: an unknown key is an error (a misspelt
    ``visibilty`` must never be ignored), instances are frozen, and no number is infinite or
    NaN (no setting means either)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class YamlRefused(yaml.YAMLError):
    """A well-formed YAML document evidex does not accept (an alias, too deep, too large, a
    duplicate key); ``line`` is 1-based."""

    def __init__(self, line: int, problem: str) -> None:
        problem = _one_line(problem)  # a key or value quoted in it may hold line breaks
        super().__init__(problem)
        self.line = line
        self.problem = problem


def _line(node_or_mark: Any) -> int:
    mark = getattr(node_or_mark, "start_mark", node_or_mark)
    return int(mark.line) + 1


if yaml.__with_libyaml__:
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.cyaml import CParser
    from yaml.resolver import Resolver

    class _Safe(Composer, CParser, SafeConstructor, Resolver):  # type: ignore[misc]
        """PyYAML's safe loader with libyaml's scanner and parser under Python's composer (the
        events are the same; the scanning is three times faster, and the composer stays where
        the rules below hook in)."""

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
else:  # pragma: no cover - PyYAML built without libyaml
    _Safe = yaml.SafeLoader  # type: ignore[misc,assignment]


class _Loader(_Safe):
    def __init__(self, text: str, max_depth: int, max_nodes: int) -> None:
        super().__init__(text)
        self._max_depth, self._max_nodes = max_depth, max_nodes
        self._depth = self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        line = _line(event)
        if isinstance(event, yaml.AliasEvent):
            raise YamlRefused(line, f"YAML aliases (*{event.anchor}) are not accepted; write the "
                                    "value out")
        if getattr(event, "anchor", None):
            raise YamlRefused(line, f"YAML anchors (&{event.anchor}) are not accepted; write the "
                                    "value out")
        self._nodes += 1
        if self._nodes > self._max_nodes:
            raise YamlRefused(line, f"more than {self._max_nodes} values in one YAML document")
        self._depth += 1
        try:
            if self._depth > self._max_depth:
                raise YamlRefused(line, f"YAML nested deeper than {self._max_depth} levels")
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1

    def compose_mapping_node(self, anchor: str | None) -> yaml.MappingNode:
        node: yaml.MappingNode = super().compose_mapping_node(anchor)
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise YamlRefused(_line(key), "a mapping key must be a single value, not a list or "
                                              "a mapping")
            if key.tag == _MERGE_TAG:
                raise YamlRefused(_line(key), "YAML merge keys (<<) are not accepted; write the "
                                              "keys out")
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in first:
                raise YamlRefused(_line(key_node), f"{_shorten(str(key))}: duplicate key (first on "
                                                   f"line {first[key]})")
            first[key] = _line(key_node)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:  # int("9" * 5000), date(2026, 13, 45)
            # Python's own advice after the ";" (sys.set_int_max_str_digits) is not the reader's.
            raise YamlRefused(_line(node), f"cannot read the value {_short(node)}: "
                                           f"{_one_line(str(exc).split(';')[0])}") from None


def _shorten(text: str, most: int = 60) -> str:
    return text if len(text) <= most else text[:most - 3] + "..."


def _short(node: yaml.Node) -> str:
    return repr(_shorten(node.value if isinstance(node.value, str) else "", 43))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def compose_yaml(text: str, *, max_depth: int = MAX_YAML_DEPTH,
                 max_nodes: int = MAX_YAML_NODES) -> tuple[yaml.Node | None, Any]:
    """(node tree with line marks, Python value) of one YAML document, with safe tags only.
    Raises ``yaml.YAMLError`` for malformed YAML and ``YamlRefused`` for what evidex refuses."""
    loader = _Loader(text, max_depth, max_nodes)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def yaml_problem(exc: yaml.YAMLError, hint: str = "") -> tuple[int | None, str]:
    """(line, what is wrong) of a YAML error, on one line; ``hint`` follows a refused alias."""
    if isinstance(exc, YamlRefused):
        return exc.line, exc.problem + (hint if "YAML a" in exc.problem else "")
    mark = getattr(exc, "problem_mark", None)
    line = _line(mark) if mark is not None else None
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    if "maximum nesting depth" in str(problem):  # libyaml's own bound (1,000), met while scanning
        return line, f"YAML nested deeper than {MAX_YAML_DEPTH} levels"
    return line, f"invalid YAML: {_one_line(str(problem))}"


# -- problems as file:line: where: what --------------------------------------------------------

class Problems:
    """The problems found in one file, each ``(line, "file:line: where: what")``; raised
    together as one ``ConfigError`` whose first line is the first problem in the file (with
    how many more there are) and the others below it, so a file is fixed in one pass."""

    def __init__(self, file: str | Path) -> None:
        self.file = str(file)
        self.found: list[tuple[int, str]] = []

    def add(self, line: int, where: str, what: str) -> None:
        self.found.append((line, f"{self.file}:{line}: {_one_line(where)}: {_one_line(what)}"))

    def lines(self) -> list[str]:
        """Every problem in line order."""
        return [text for _, text in sorted(self.found, key=lambda f: f[0])]

    def raise_any(self) -> None:
        if self.found:
            lines = self.lines()
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            raise ConfigError("\n".join([lines[0] + more, *lines[1:MAX_LISTED]]))


@dataclass(frozen=True)
class YamlFile:
    """One YAML file read: its name as given (the start of every message), the node tree (the
    line of every key) and the Python value."""

    name: str
    root: yaml.Node
    data: Any

    def locate(self, loc: Sequence[str | int], *, missing: bool = False,
               label: str | None = None) -> tuple[int, str]:
        """(line, dotted path) of a location in the file. Parts that are not in the file (the
        union member pydantic tried) are skipped, except the last part of a ``missing``
        location: the key the reader has to add. ``label``: a sequence item that is a mapping
        with this key is named by its value too (``cases[3] returns-04``)."""
        node, line = self.root, _line(self.root)
        names: list[str] = []
        for i, part in enumerate(loc):
            step = _child(node, part, label)
            if step is not None:
                line, node, name = step
                names.append(name)
            elif i == len(loc) - 1 and missing:
                names.append(str(part))
        return line, ".".join(names).replace(".[", "[") or "(top level)"

    def line(self, loc: Sequence[str | int]) -> int:
        return self.locate(loc)[0]

    def key_lines(self, loc: Sequence[str | int], prefix: str = "") -> dict[str, int]:
        """The line of each key of the mapping at ``loc`` (none when there is no mapping)."""
        node = self.root
        for part in loc:
            step = _child(node, part, None)
            if step is None:
                return {}
            node = step[1]
        if not isinstance(node, yaml.MappingNode):
            return {}
        return {prefix + str(k.value): _line(k) for k, _ in node.value}

    def fail(self, loc: Sequence[str | int], what: str) -> ConfigError:
        """The error for one problem at ``loc``."""
        p = Problems(self.name)
        p.add(*self.locate(loc), what)
        return ConfigError(p.found[0][1])

    def validate(self, model: type[M], data: Any = None, *, context: dict[str, Any] | None = None,
                 label: str | None = None) -> M:
        """``model`` from the file's value (or ``data``, the value prepared from it); every
        validation error is a ``file:line: where: what`` line of one ``ConfigError``."""
        try:
            return model.model_validate(self.data if data is None else data, context=context)
        except ValidationError as exc:
            p = Problems(self.name)
            for err in exc.errors(include_url=False, include_input=False):
                loc, missing, what = _explain(err)
                if err["type"] == "extra_forbidden":
                    allowed = sorted({k for m in _models_at(model, loc[:-1]) for k in _keys(m)})
                    what += f"; allowed: {', '.join(allowed)}" if allowed else ""
                p.add(*self.locate(loc, missing=missing, label=label), what)
            p.raise_any()
            raise  # unreachable: a ValidationError has at least one error


def _child(node: yaml.Node, part: str | int, label: str | None) -> tuple[int, yaml.Node, str] | None:
    """(line, node, name) of ``part`` (a key or an index) below ``node``, or None."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == str(part):
                return _line(k), v, str(part)
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item = node.value[part]
        return _line(item), item, f"[{part}]{_label(item, label)}"
    return None


def _label(node: yaml.Node, label: str | None) -> str:
    if label is None or not isinstance(node, yaml.MappingNode):
        return ""
    value = next((v for k, v in node.value if k.value == label), None)
    if not isinstance(value, yaml.ScalarNode) or not value.value:
        return ""
    return " " + _shorten(_one_line(value.value))


def _members(tp: Any) -> list[Any]:
    """The types ``tp`` may be: Annotated unwrapped, unions split."""
    if get_origin(tp) is Annotated:
        return _members(get_args(tp)[0])
    if get_origin(tp) in (Union, UnionType):
        return [m for a in get_args(tp) for m in _members(a)]
    return [tp]


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _models_at(model: type[BaseModel], loc: Sequence[Any]) -> list[type[BaseModel]]:
    """The models a pydantic error location can be inside (to name the keys allowed there).
    A part that is no key or index (a union member pydantic names: a tag, a class name)
    selects the members it names, or is passed over."""
    current: list[Any] = [model]
    for part in loc:
        named = [m for m in current if _is_model(m) and (m.__name__ == part or _tag_of(m) == part)]
        if named:
            current = named
            continue
        below: list[Any] = []
        for m in current:
            origin, args = get_origin(m), get_args(m)
            if _is_model(m):
                below += [a for name, f in m.model_fields.items() if (f.alias or name) == part
                          for a in _members(f.annotation)]
            elif origin in (list, tuple) and isinstance(part, int) and args:
                below += _members(args[0])
            elif origin is dict and len(args) == 2:
                below += _members(args[1])
        current = below or current
    return [m for m in current if _is_model(m)]


def _tag_of(model: type[BaseModel]) -> Any:
    """The literal ``type`` of a model in a discriminated union (None for others)."""
    f = model.model_fields.get("type")
    args = get_args(f.annotation) if f is not None and get_origin(f.annotation) is Literal else ()
    return args[0] if len(args) == 1 else None


def _tags(text: str) -> str:
    return ", ".join(re.findall(r"'([^']*)'", text))


def _explain(err: Any) -> tuple[tuple[Any, ...], bool, str]:
    """(location, whether it names a missing key, message) of one pydantic error, in the words
    of the file: unknown and missing keys and discriminated unions ("type") are named as the
    reader wrote them."""
    loc, kind, ctx = tuple(err["loc"]), err["type"], err.get("ctx") or {}
    if kind == "extra_forbidden":
        return loc, False, "unknown key"
    if kind == "missing":
        return loc, True, "required key is missing"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = str(ctx.get("discriminator", "")).strip("'") or "type"
        if kind == "union_tag_not_found":
            return (*loc, key), True, "required key is missing"
        return ((*loc, key), False, f"unknown {key} {str(ctx.get('tag'))!r}; known: "
                f"{_tags(str(ctx.get('expected_tags', '')))}")
    msg = str(err["msg"])
    return loc, False, msg[len("Value error, "):] if msg.startswith("Value error, ") else msg


def read_yaml(path: str | Path, *, what: str, max_bytes: int = MAX_YAML_BYTES,
              max_nodes: int = MAX_YAML_NODES, hint: str = "") -> YamlFile:
    """Read one YAML file under every rule above; an empty file is an empty mapping. Raises
    ``ConfigError`` (``file[:line]: ...``, one line) naming ``what`` the file is; ``hint``
    follows a refused alias (where shared settings go instead)."""
    name = str(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read the {what}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise ConfigError(f"{name}: the {what} is larger than {max_bytes} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{name}: the {what} is not UTF-8 text") from None
    try:
        root, data = compose_yaml(text, max_nodes=max_nodes)
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc, hint)
        raise ConfigError(f"{name}{'' if line is None else f':{line}'}: {problem}") from None
    if root is None or data is None:
        root, data = compose_yaml("{}")
    assert root is not None
    return YamlFile(name, root, data)
