"""``evidex.yamlfile``, the one YAML loader: the configuration, case files and Markdown front
matter are held to the same rules and their mistakes read the same way (``file:line: ...``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from evidex import ConfigError, EvidexError
from evidex.config import Config, FilesSource, load_config
from evidex.ingest import load_document
from evidex.notify import HandoffRoute
from evidex.tools import ToolConfig
from evidex.yamlfile import StrictModel, YamlRefused, compose_yaml, read_yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("a: 1\nb: 2\na: 3\n", 3, "a: duplicate key (first on line 1)"),
    ("a: {x: 1, y: 2, x: 3}\n", 1, "x: duplicate key (first on line 1)"),
    ("a: {<<: {x: 1}}\n", 1, "YAML merge keys (<<) are not accepted"),
    ("? [a, b]\n: 1\n", 1, "a mapping key must be a single value, not a list or a mapping"),
    ("a: &x 1\n", 1, "YAML anchors (&x) are not accepted"),
    ("a: 1\nb: *x\n", 2, "YAML aliases (*x) are not accepted"),
    ("when: 2026-13-45\n", 1, "cannot read the value '2026-13-45': month must be in 1..12"),
    ("n: " + "9" * 5_000 + "\n", 1, "cannot read the value '9999"),
])
def test_what_the_loader_refuses_is_named_with_its_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(YamlRefused) as exc:
        compose_yaml(text)
    assert exc.value.line == line and exc.value.problem.startswith(problem), exc.value.problem


def test_a_duplicate_key_in_front_matter_is_a_rejection() -> None:
    """YAML keeps the last of two ``visibility:`` lines silently; a document whose front matter
    says both ``restricted`` and ``public`` is rejected instead of published."""
    md = b"---\nid: d\nvisibility: restricted\nvisibility: public\n---\n# D\n\ntext\n"
    with pytest.raises(EvidexError, match=r"^front matter line 3: visibility: duplicate key "
                                          r"\(first on line 2\)$"):
        load_document(md, "markdown", {"tenant": "t", "groups": ["g"]}, doc_id="d", name="d.md")


@pytest.mark.parametrize(("text", "expected"), [
    ("retrieval: {top_k: " + "9" * 5_000 + "}\n", ":1: cannot read the value '9999"),
    ("retrieval: {top_k: 3}\nwhen: 2026-13-45\n", ":2: cannot read the value '2026-13-45'"),
    ("retrieval: {<<: {top_k: 3}}\n", ":1: YAML merge keys (<<) are not accepted"),
])
def test_values_yaml_cannot_build_are_config_errors_not_tracebacks(tmp_path: Path, text: str,
                                                                   expected: str) -> None:
    """A 5,000-digit number and the 45th of a month were ValueError tracebacks from
    ``load_config`` (and from a Markdown file's front matter, which stopped a whole ingest)."""
    path = tmp_path / "k.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert str(exc.value).startswith(f"{path}{expected}") and "\n" not in str(exc.value)


def test_every_yaml_in_the_repository_reads_as_pyyaml_reads_it() -> None:
    """The loader parses with libyaml under Python's composer: the values are PyYAML's."""
    files = [p for pattern in ("examples/**/*.yaml", "tests/**/*.yaml", "benchmarks/**/*.yaml")
             for p in ROOT.glob(pattern)]
    assert len(files) >= 5
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        assert compose_yaml(text, max_nodes=10**6)[1] == yaml.safe_load(text), path


def test_read_yaml_bounds_the_file_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(b"a: 1\n" * 300)
    with pytest.raises(ConfigError, match=r"x\.yaml: the thing is larger than 1000 bytes$"):
        read_yaml(path, what="thing", max_bytes=1000)
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(ConfigError, match=r"x\.yaml: the thing is not UTF-8 text$"):
        read_yaml(path, what="thing")
    with pytest.raises(ConfigError, match="cannot read the thing"):
        read_yaml(tmp_path / "nope.yaml", what="thing")
    path.write_bytes(b"# nothing but a comment\n")
    assert read_yaml(path, what="thing").data == {}  # an empty file is an empty mapping


def test_one_strict_base_model() -> None:
    """The configuration's sections, message routes and tools share one base: unknown keys are
    errors, values frozen, no NaN or infinity."""
    for model in (Config, FilesSource, HandoffRoute, ToolConfig):
        assert issubclass(model, StrictModel)
        assert model.model_config["extra"] == "forbid" and model.model_config["frozen"] is True
        assert model.model_config["allow_inf_nan"] is False
