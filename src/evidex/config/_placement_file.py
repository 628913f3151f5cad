"""Rewriting one tenant's line under ``store:`` / ``tenants:`` in a configuration file, in place.

``evidex move-tenant --write-config`` changes only that entry's text: comments, order and
layout of everything else stay as the operator wrote them, so the file is edited with the
YAML parser's positions (``yaml.compose``) rather than loaded and dumped again. The whole file
is validated (``load_config``) before it replaces the old one.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import yaml

from ..model import EvidexError
from ._load import load_config
from ._stores import StoreLocation


def _location_yaml(location: StoreLocation) -> str:
    if not location.replicas:
        return _scalar(location.url)
    replicas = ", ".join(_scalar(r) for r in location.replicas)
    return "{url: " + _scalar(location.url) + ", replicas: [" + replicas + "]}"


#: Words YAML reads as something other than a string.
_YAML_WORDS = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n", "~"})
#: A tenant name written plain: anything else is quoted.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def _scalar(value: str) -> str:
    """``value`` as a YAML scalar that reads back as itself in any context, block or flow: a
    plain name as it is, everything else double-quoted (a JSON string is a YAML double-quoted
    scalar). A plain URL inside ``{url: ..., replicas: [...]}`` would be split at its commas or
    cut at `` #``, and the file would not read back."""
    if _PLAIN_KEY.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)


def config_line(tenant: str, location: StoreLocation) -> str:
    """The configuration's line for ``tenant`` (under ``store:`` / ``tenants:``)."""
    return f"{_scalar(tenant)}: {_location_yaml(location)}"


def write_placement(path: str | Path, tenant: str, location: StoreLocation) -> None:
    """Set ``store.tenants.<tenant>`` in the configuration file at ``path`` to ``location``,
    changing only that entry's text (comments and layout stay), and check the whole file
    before it replaces the old one (atomically)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    new = _with_tenant(text, tenant, location)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        load_config(tmp)  # the whole file still valid, or nothing is replaced
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _with_tenant(text: str, tenant: str, location: StoreLocation) -> str:
    lines = text.splitlines(keepends=True)
    root = yaml.compose(text) if text.strip() else None
    entry = _location_yaml(location)
    if root is not None and not isinstance(root, yaml.MappingNode):
        raise EvidexError("the configuration is not a mapping of sections; nothing was written")
    store = _child(root, "store")
    if store is None or _empty(store):
        if store is not None:  # ``store:`` with nothing under it: the section goes there
            del lines[store.start_mark.line if store.start_mark.column else store.start_mark.line - 1]
            text = "".join(lines)
        tail = "" if not text or text.endswith("\n") else "\n"
        return text + tail + f"store:\n  tenants:\n    {_scalar(tenant)}: {entry}\n"
    if not isinstance(store, yaml.MappingNode) or store.flow_style:
        raise EvidexError("store: is not written as a block mapping; set store.tenants by hand")
    tenants = _child(store, "tenants")
    indent = store.value[0][0].start_mark.column if store.value else 2
    if tenants is None:
        at = store.end_mark.line if store.end_mark.column == 0 else store.end_mark.line + 1
        lines.insert(at, " " * indent + f"tenants:\n{' ' * (indent + 2)}{_scalar(tenant)}: {entry}\n")
        return "".join(lines)
    if _empty(tenants):
        tenants = yaml.MappingNode("tag:yaml.org,2002:map", [], tenants.start_mark, tenants.end_mark,
                                   flow_style=True)
    if not isinstance(tenants, yaml.MappingNode) or (tenants.flow_style and tenants.value):
        raise EvidexError("store.tenants is not written as a block mapping; set it by hand")
    for key, value in tenants.value:
        if key.value != tenant:
            continue
        start, end = value.start_mark, value.end_mark
        if isinstance(value, yaml.ScalarNode) or value.flow_style:  # on the key's line: in place
            flat = "".join(lines)
            return flat[:_offset(lines, start.line, start.column)] + entry + flat[_offset(lines, end.line,
                                                                                        end.column):]
        # A block below the key: its lines give way to one line. The block ends where the next
        # key begins (or at the end of the file).
        before_end = lines[end.line][:end.column] if end.line < len(lines) else ""
        last = end.line - 1 if not before_end.strip() else end.line
        first = key.start_mark.line
        lines[first:last + 1] = [" " * key.start_mark.column + f"{_scalar(tenant)}: {entry}\n"]
        return "".join(lines)
    if tenants.value:
        column = tenants.value[0][0].start_mark.column
        last = tenants.value[-1][1].end_mark
        at = last.line if last.column == 0 else last.line + 1
    else:  # ``tenants: {}`` or an empty value: the entry goes on the next line
        column = indent + 2
        at = tenants.start_mark.line + 1
        line = lines[tenants.start_mark.line]
        lines[tenants.start_mark.line] = re.sub(r"tenants:\s*(\{\s*\})?\s*$", "tenants:\n", line)
    lines.insert(at, " " * column + f"{_scalar(tenant)}: {entry}\n")
    return "".join(lines)


def _empty(node: yaml.Node) -> bool:
    """A key with no value (``store:`` on its own), or an empty flow mapping (``{}``)."""
    if isinstance(node, yaml.ScalarNode):
        return node.tag.endswith(":null") and node.value in ("", "~", "null")
    return isinstance(node, yaml.MappingNode) and not node.value


def _child(node: yaml.Node | None, name: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key, value in node.value:
        if getattr(key, "value", None) == name:
            return value  # type: ignore[no-any-return]
    return None


def _offset(lines: list[str], line: int, column: int) -> int:
    return sum(len(x) for x in lines[:line]) + column
