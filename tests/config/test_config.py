"""knowledge.config.yaml: the issue's example loads; every kind of mistake names file, line, key;
``evidex --config`` applies retrieval and answer defaults to the commands."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from cli_runner import run_cli as run
from evidex.config import FilesSource, RecordsSource, ServerSettings, WebSource, load_config
from evidex.model import ConfigError, EvidexError
from evidex.yamlfile import YamlRefused, compose_yaml

EXAMPLE = """\
sources:
  - id: help-centre
    type: files            # files | web | records
    path: ./help
    include: ["**/*.html", "**/*.md"]
    split: heading
    tenant: acme
    groups: [customers]
    visibility: public
    language: en
    owner: web-team@example.com
  - id: returns-policy
    type: files
    path: ./policies/returns.pdf
    supersede: true
retrieval: { analyzer: exact, fuse: rrf, rrf_k: 60, top_k: 6, max_per_document: 2 }
answer: { generator: extractive, when_no_evidence: decline_and_offer_person, handoff: "support@example.com" }
freshness: { drift_check: daily, notify: { webhook: "http://127.0.0.1:9000/hook" } }
"""


def write(tmp_path: Path, text: str, name: str = "knowledge.config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert isinstance(info.value, EvidexError) and isinstance(info.value, ValueError)
    return str(info.value)


def test_the_issue_example_loads_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, EXAMPLE))
    help_centre, policy = cfg.sources
    assert isinstance(help_centre, FilesSource) and isinstance(policy, FilesSource)
    assert help_centre.path == str(tmp_path.resolve() / "help")
    assert help_centre.include == ("**/*.html", "**/*.md")
    assert (help_centre.tenant, help_centre.groups, help_centre.visibility) == ("acme", ("customers",),
                                                                               "public")
    assert policy.path == str(tmp_path.resolve() / "policies" / "returns.pdf") and policy.supersede
    assert (cfg.retrieval.analyzer, cfg.retrieval.top_k, cfg.retrieval.max_per_document) == ("exact", 6, 2)
    assert cfg.answer.handoff == "support@example.com"
    assert cfg.freshness.notify.webhook == "http://127.0.0.1:9000/hook"
    assert cfg.server is None


def test_web_records_server_and_defaults_sections(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, """\
defaults: { tenant: acme, groups: [staff], owner: docs@example.com }
sources:
  - { id: site, type: web, sitemap: "https://help.example.com/sitemap.xml" }
  - id: catalogue
    type: records
    path: data/catalogue.jsonl
    groups: [customers]
    fields: { id: sku, text: [name, description], title: name, source_url: link }
server:
  port: 8080
  api_keys:
    - { key_sha256: "%s", tenant: acme, groups: [staff] }
""" % ("ab" * 32)))
    site, cat = cfg.sources
    assert isinstance(site, WebSource) and isinstance(cat, RecordsSource)
    assert (site.tenant, site.groups, site.owner) == ("acme", ("staff",), "docs@example.com")
    assert cat.groups == ("customers",)  # the source's own value beats the default
    assert cat.fields.text == ("name", "description") and cat.split == "document"
    assert isinstance(cfg.server, ServerSettings) and cfg.server.port == 8080


@pytest.mark.parametrize(("text", "expected"), [
    ("sources:\n  - id: a\n    type: files\n    path: x\n    visibilty: public\n",
     ":5: sources[0].visibilty: unknown key"),
    ("retrieval:\n  top_k: 0\n", ":2: retrieval.top_k: Input should be greater than or equal to 1"),
    ("retrieval: {fuse: max}\n",
     ":1: retrieval.fuse: Input should be 'adaptive', 'weighted_rrf', 'rrf' or 'convex'"),
    ("sources:\n  - id: a\n    type: files\n    path: x\n    visibility: pubic\n",
     ":5: sources[0].visibility: Input should be"),
    ("sources:\n  - id: a\n    type: ftp\n",
     ":3: sources[0].type: unknown type 'ftp'; known: files, web, records, pdf"),
    ("sources:\n  - id: a\n    type: files\n", ":2: sources[0].path: required key is missing"),
    ("sources:\n  - {id: w, type: web}\n", ":2: sources[0]: a web source needs urls"),
    ("sources:\n  - {id: w, type: web, urls: [ftp://x]}\n", ":2: sources[0].urls: must be an http"),
    ("sources:\n  - {id: a, type: files, path: x}\n  - {id: a, type: files, path: y}\n",
     ":1: sources: source id 'a' is used twice"),
    ("sources:\n  - {id: 'bad id', type: files, path: x}\n", ":2: sources[0].id: must be 1-64"),
    ("freshness:\n  notify:\n    webhook: nope\n", ":3: freshness.notify.webhook: must be an http"),
    ("server:\n  port: 70000\n", ":2: server.port: Input should be less than or equal to 65535"),
    ("retrieval:\n  top_k: 3\n  top_k: 4\n", ":3: top_k: duplicate key (first on line 2)"),
    ("colour: blue\n", ":1: colour: unknown key"),
    ("- just\n- a list\n", ":1: (top level): the configuration must be a mapping"),
    ("retrieval: {top_k: 3\n", "invalid YAML"),
    ("sources:\n  - {id: a, type: files, path: x, language: English}\n",
     ":2: sources[0].language: must be a language tag"),
])
def test_mistakes_name_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    message = error_of(path)
    assert message.startswith(str(path)), message
    assert expected in message.splitlines()[0], message


def test_every_error_is_reported_not_only_the_first(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "retrieval:\n  top_k: 0\n  rrf_k: -1\nanswer:\n  colour: x\n"))
    lines = message.splitlines()
    assert "(and 2 more)" in lines[0]
    assert [ln.split(": ")[1] for ln in lines] == ["retrieval.top_k", "retrieval.rrf_k", "answer.colour"]


def _alias_bomb(levels: int = 9) -> str:
    """The probe's nested alias bomb: each level repeats the one before ten times."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("text", "expected"), [
    ("a: &a [*a]\n", ":1: YAML anchors (&a) are not accepted"),
    (_alias_bomb(), ":1: YAML anchors (&a0) are not accepted"),
    ("retrieval: {top_k: 3}\nanswer: *x\n", ":2: YAML aliases (*x) are not accepted"),
    ("x: " + "[" * 100 + "]" * 100 + "\n", ":1: YAML nested deeper than 64 levels"),
    ("x: [" + "1," * 600_000 + "1]\n", ": the configuration is larger than 1048576 bytes"),
])
def test_yaml_aliases_and_bombs_are_one_line_config_errors_within_a_second(
        tmp_path: Path, text: str, expected: str) -> None:
    """A cycle (``a: &a [*a]``) once gave a RecursionError traceback and nested aliases kept
    sync busy for minutes: anchors and aliases are refused before anything is built."""
    path = write(tmp_path, text)
    tracemalloc.start()
    try:
        message = error_of(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message.startswith(f"{path}") and expected in message, message
    assert "\n" not in message
    assert peak < 32 * 2**20, peak  # refused before anything is built (memory, not seconds)


def test_yaml_values_are_counted_and_bounded() -> None:
    text = "x:\n" + "".join(f"  k{i}: [{i}, {i}]\n" for i in range(40))
    node, data = compose_yaml(text, max_nodes=200)
    assert node is not None and len(data["x"]) == 40
    with pytest.raises(YamlRefused, match="more than 100 values") as err:
        compose_yaml(text, max_nodes=100)
    assert err.value.line == 26  # the 101st value (keys count too: 3 + 4 per line)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    assert "cannot read" in error_of(tmp_path / "nope.yaml")


# -- the CLI applies it -----------------------------------------------------------------------

def test_cli_config_sets_search_and_answer_defaults(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"d{i}.md").write_text(f"# D{i}\n\nshared word number {i}.\n\nshared again {i}.\n",
                                       encoding="utf-8")
    db = str(tmp_path / "kb.db")
    assert run("--db", db, "ingest", str(docs), "--tenant", "acme", "--groups", "staff").returncode == 0
    cfg = write(tmp_path, "retrieval: {top_k: 2, max_per_document: 1, mode: keyword}\n"
                          "answer: {handoff: 'Call Ana on 123'}\n")
    args = ("search", "shared", "--tenant", "acme", "--groups", "staff", "--visibilities", "public,internal",
            "--json")
    plain = json.loads(run("--db", db, *args).stdout)["hits"]
    configured = json.loads(run("--db", db, "--config", str(cfg), *args).stdout)["hits"]
    assert len(plain) == 6 and len(configured) == 2
    assert len({h["document_id"] for h in configured}) == 2  # max_per_document: 1
    assert "explain" not in configured[0]
    overridden = json.loads(run("--db", db, "--config", str(cfg), *args, "--limit", "3").stdout)["hits"]
    assert len(overridden) == 3  # an option on the command line beats the file
    ask = run("--db", db, "--config", str(cfg), "ask", "Who won the football world cup?",
              "--tenant", "acme", "--groups", "staff", "--visibilities", "public,internal", "--json")
    assert json.loads(ask.stdout)["handoff"] == "Call Ana on 123"
    silent = write(tmp_path, "answer: {when_no_evidence: decline}\n", "silent.yaml")
    ask = run("--db", db, "--config", str(silent), "ask", "Who won the football world cup?",
              "--tenant", "acme", "--groups", "staff", "--visibilities", "public,internal", "--json")
    assert json.loads(ask.stdout)["status"] == "declined" and json.loads(ask.stdout)["handoff"] is None


def test_cli_config_errors_are_one_line_with_file_and_line(tmp_path: Path) -> None:
    cfg = write(tmp_path, "retrieval:\n  top_k: 0\n")
    proc = run("--db", str(tmp_path / "kb.db"), "--config", str(cfg), "stats")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0] == f"error: {cfg}:2: retrieval.top_k: Input should be greater " \
                                          "than or equal to 1"
    assert not (tmp_path / "kb.db").exists()  # nothing ran


def test_cli_prints_the_error_header_before_its_continuation_lines(tmp_path: Path) -> None:
    cfg = write(tmp_path, "retrieval:\n  top_k: 0\n  rrf_k: -1\nanswer:\n  colour: x\n")
    proc = run("--db", str(tmp_path / "kb.db"), "--config", str(cfg), "stats")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 3, proc.stderr
    assert lines[0].startswith(f"error: {cfg}:2: retrieval.top_k") and lines[0].endswith("(and 2 more)")
    assert lines[1].startswith(f"  {cfg}:3: retrieval.rrf_k")
    assert lines[2].startswith(f"  {cfg}:5: answer.colour")


def test_cli_refuses_an_alias_bomb_at_once(tmp_path: Path) -> None:
    cfg = write(tmp_path, _alias_bomb())
    proc = run("--db", str(tmp_path / "kb.db"), "--config", str(cfg), "sync")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [f"error: {cfg}:1: YAML anchors (&a0) are not accepted; write the "
                                        "value out (sources share settings through defaults:)"]


def test_sync_without_a_config_says_how_to_give_one(tmp_path: Path) -> None:
    proc = run("--db", str(tmp_path / "kb.db"), "sync")
    assert proc.returncode == 2 and "--config" in proc.stderr  # called wrongly: a usage error
