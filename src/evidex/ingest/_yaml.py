"""YAML as evidex reads it: configuration files and Markdown front matter.

PyYAML's safe loader still accepts anchors and aliases, and with them a file of a few hundred
bytes can describe a structure that never ends (``a: &a [*a]``, a cycle) or one with a billion
leaves (nested aliases, each repeating the one before ten times). Nothing evidex reads needs
them: a configuration shares settings through its ``defaults:`` section, and front matter is a
handful of scalar keys written by whoever wrote the document. So anchors and aliases are refused
outright, with the line, rather than expanded under a budget, and the nesting depth and number
of values are bounded; every refusal is a one-line error before anything is built.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_NODES", "YamlRefused", "compose_yaml"]

#: Deepest nesting accepted (a configuration is about five levels deep).
MAX_YAML_DEPTH = 64
#: Most values (scalars, lists, mappings) accepted in one document (a long list of web URLs is a
#: few thousand; longer lists belong in a sitemap).
MAX_YAML_NODES = 50_000


class YamlRefused(yaml.YAMLError):
    """A well-formed YAML document evidex does not accept (an alias, too deep, too large);
    ``line`` is 1-based."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


class _Loader(yaml.SafeLoader):
    def __init__(self, text: str, max_depth: int, max_nodes: int) -> None:
        super().__init__(text)
        self._max_depth, self._max_nodes = max_depth, max_nodes
        self._depth = self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()
        line = event.start_mark.line + 1
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
