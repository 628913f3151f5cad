"""The ``evidex`` console script, run as real subprocesses against temporary stores.

Covers ingest summaries (human and --json), rejections of bad files while good ones are still
ingested, search with access control, resolve from stdin, remove, stats, the --db default chain,
the error contract (non-zero exit, exactly one "error:" line on stderr, never a traceback) and that
hostile control characters in documents never reach a terminal.
"""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import subprocess
import tty
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cli_runner import EVIDEX, clean_env
from cli_runner import run_cli as evidex
from cli_runner import run_parallel as evidex_parallel
from evidex.ingest import load_paths, split_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CITATION_KEYS = {
    "kind",
    "document_id",
    "version",
    "content_sha256",
    "passage",
    "quote",
    "start",
    "end",
    "heading_path",
    "anchor",
    "title",
    "source_url",
}
HR = ("--tenant", "acme", "--groups", "hr", "--visibilities", "public,internal,confidential")
STAFF = ("--tenant", "acme", "--groups", "staff", "--visibilities", "public,internal")
CUSTOMER = ("--tenant", "acme", "--groups", "customers", "--visibilities", "public")


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def assert_one_error_line(proc: subprocess.CompletedProcess[str], needle: str = "") -> str:
    assert proc.returncode != 0, (proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, f"expected exactly one line on stderr, got {len(lines)}:\n{proc.stderr}"
    assert lines[0].startswith("error:"), lines[0]
    assert needle in lines[0], (needle, lines[0])
    return lines[0]


def summary(text: str) -> dict[str, int]:
    """'added 1, superseded 0, unchanged 0, passages written 4, rejected 0' -> dict."""
    found = dict(re.findall(r"(added|superseded|unchanged|passages written|rejected) (\d+)", text))
    assert set(found) == {"added", "superseded", "unchanged", "passages written", "rejected"}, text
    return {k: int(v) for k, v in found.items()}


def hits_of(db: Path, query: str, actor: Sequence[str], *extra: str) -> list[dict[str, Any]]:
    return ok_json(evidex("search", query, "--mode", "keyword", *actor, *extra, "--json", db=db))["hits"]


def example_docs(folder: str) -> dict[str, Any]:
    loaded = load_paths([EXAMPLES / folder], {"tenant": "acme"})
    assert not loaded.rejected, loaded.rejected
    return {d.id: d for d in loaded.documents}


def heading_passages(docs: dict[str, Any]) -> int:
    return sum(len(split_text(d.text, "heading")) for d in docs.values())


def ingest_examples(db: Path, *folders: str) -> list[subprocess.CompletedProcess[str]]:
    out = []
    for folder in folders:
        proc = evidex("ingest", EXAMPLES / folder, "--tenant", "acme", "--split", "heading", db=db)
        assert proc.returncode == 0, proc.stderr
        out.append(proc)
    return out


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """The bundled collection as `make run` loads it: old policy first, then the collection
    (human summary for the first run, --json for the second). Tests only read this store."""
    db = tmp_path_factory.mktemp("cli-examples") / "kb.db"
    first = evidex("ingest", EXAMPLES / "versions", "--tenant", "acme", "--split", "heading", db=db)
    second = evidex(
        "ingest", EXAMPLES / "collection", "--tenant", "acme", "--split", "heading", "--json", db=db
    )
    docs = example_docs("collection")
    return SimpleNamespace(db=db, first=first, second=second, docs=docs, old=example_docs("versions"))


# --------------------------------------------------------------------------------------------
# ingest
# --------------------------------------------------------------------------------------------


def test_ingest_summary_human_then_json(examples: SimpleNamespace) -> None:
    assert examples.first.returncode == 0, examples.first.stderr
    assert summary(examples.first.stdout) == {
        "added": len(examples.old),
        "superseded": 0,
        "unchanged": 0,
        "passages written": heading_passages(examples.old),
        "rejected": 0,
    }
    assert examples.second.returncode == 0, examples.second.stderr
    report = json.loads(examples.second.stdout)
    overlap = set(examples.old) & set(examples.docs)
    assert overlap == {"reisekosten-richtlinie"}
    assert report == {
        "added": len(examples.docs) - len(overlap),
        "superseded": len(overlap),
        "unchanged": 0,
        "passages_written": heading_passages(examples.docs),
        "conflicts": report["conflicts"],
        "rejected": 0,
        "rejections": [],
    }


def test_reingest_reports_unchanged_and_writes_nothing(examples: SimpleNamespace) -> None:
    human = evidex(
        "ingest", EXAMPLES / "collection", "--tenant", "acme", "--split", "heading", db=examples.db
    )
    assert human.returncode == 0, human.stderr
    assert summary(human.stdout) == {
        "added": 0,
        "superseded": 0,
        "unchanged": len(examples.docs),
        "passages written": 0,
        "rejected": 0,
    }
    as_json = ok_json(
        evidex(
            "ingest",
            EXAMPLES / "collection",
            "--tenant",
            "acme",
            "--split",
            "heading",
            "--json",
            db=examples.db,
        )
    )
    assert as_json == {
        "added": 0,
        "superseded": 0,
        "unchanged": len(examples.docs),
        "passages_written": 0,
        "conflicts": [],
        "rejected": 0,
        "rejections": [],
    }
    # (test_stats_json, which runs later on the same store, checks that nothing was added.)


def write_mixed_folder(root: Path) -> Path:
    folder = root / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text(
        "---\nid: good-one\ngroups: [staff]\n---\n# Good\n\nThe zephyr blows.\n", encoding="utf-8"
    )
    (folder / "plain.txt").write_text("A quokka smiles.\n", encoding="utf-8")
    (folder / "unknown-key.md").write_text(
        "---\nid: unk\nauthor: bob\n---\nA marmoset climbs.\n", encoding="utf-8"
    )
    (folder / "bad-yaml.md").write_text(
        "---\nid: [unclosed\ngroups: staff\n---\nA marmoset sleeps.\n", encoding="utf-8"
    )
    (folder / "bad-visibility.md").write_text(
        "---\nid: vis\nvisibility: top-secret\n---\nA marmoset hides.\n", encoding="utf-8"
    )
    (folder / "records.jsonl").write_text(
        '{"id": "jrec1", "text": "A wombat digs."}\n'
        '{"id": "jrec2", "text": "A marmoset\n'
        '{"id": "jrec3", "text": "A narwhal swims."}\n',
        encoding="utf-8",
    )
    return folder


BAD_SOURCES = {
    "unknown-key.md": "author",
    "bad-yaml.md": "YAML",
    "bad-visibility.md": "visibility",
    "records.jsonl:2": "",
}


def test_bad_files_are_rejected_one_line_each_and_good_files_still_ingested(tmp_path: Path) -> None:
    folder = write_mixed_folder(tmp_path)
    db = tmp_path / "kb.db"
    proc = evidex("ingest", folder, "--tenant", "acme", "--groups", "staff", db=db)
    assert proc.returncode != 0
    assert summary(proc.stdout) == {
        "added": 4,
        "superseded": 0,
        "unchanged": 0,
        "passages written": 5,
        "rejected": 4,
    }
    lines = proc.stderr.splitlines()
    assert len(lines) == len(BAD_SOURCES), proc.stderr
    for source, needle in BAD_SOURCES.items():
        (line,) = [ln for ln in lines if f"{folder / source}:" in ln]
        assert line.startswith("rejected "), line
        assert needle in line, line
    found, bad = evidex_parallel(
        [
            (
                (
                    "search",
                    "zephyr quokka wombat narwhal",
                    "--mode",
                    "keyword",
                    *STAFF,
                    "--limit",
                    "10",
                    "--json",
                ),
                {"db": db},
            ),
            (("search", "marmoset", "--mode", "keyword", *STAFF, "--json"), {"db": db}),
        ]
    )
    assert {h["document_id"] for h in ok_json(found)["hits"]} == {"good-one", "plain.txt", "jrec1", "jrec3"}
    assert ok_json(bad)["hits"] == []


def test_bad_files_are_rejected_in_json_form(tmp_path: Path) -> None:
    folder = write_mixed_folder(tmp_path)
    proc = evidex("ingest", folder, "--tenant", "acme", "--groups", "staff", "--json", db=tmp_path / "kb.db")
    assert proc.returncode != 0
    report = json.loads(proc.stdout)
    assert (report["added"], report["rejected"]) == (4, 4)
    by_source = {r["source"]: r["reason"] for r in report["rejections"]}
    assert set(by_source) == {str(folder / s) for s in BAD_SOURCES}
    for source, needle in BAD_SOURCES.items():
        reason = by_source[str(folder / source)]
        assert reason and "\n" not in reason and needle in reason


def test_ingest_rejects_files_over_the_size_limit_naming_file_and_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What is checked is the size limit; the per-file reading time (60 s) is out of reach, as a
    # busy machine took longer than that to read the 2 MB file (issue 45, finding 12).
    monkeypatch.setenv("EVIDEX_MAX_SECONDS_PER_FILE", "3600")
    folder = tmp_path / "docs"
    folder.mkdir()
    big = folder / "export.md"
    big.write_text("# Export\n\n" + "line of a very long export\n\n" * 80_000, encoding="utf-8")
    (folder / "note.md").write_text("a short note\n", encoding="utf-8")
    size = big.stat().st_size
    assert size > 1024 * 1024
    proc = evidex("ingest", folder, "--tenant", "acme", "--groups", "staff", "--max-file-mb", "1",
                  db=tmp_path / "kb.db")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"rejected {big}: the file is {size:,} bytes, larger than the limit of 1 MiB per file"]
    assert summary(proc.stdout)["added"] == 1 and summary(proc.stdout)["rejected"] == 1
    # Under the default limit (20 MiB) the same file is read.
    proc = evidex("ingest", big, "--tenant", "acme", "--groups", "staff", db=tmp_path / "kb.db")
    assert proc.returncode == 0 and summary(proc.stdout)["added"] == 1, proc.stderr


def test_non_utf8_jsonl_is_a_rejection_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "latin1.jsonl").write_bytes('{"id": "x", "text": "caf\xe9"}\n'.encode("latin-1"))
    (tmp_path / "good.md").write_text("fine text\n", encoding="utf-8")
    proc = evidex(
        "ingest",
        tmp_path / "latin1.jsonl",
        tmp_path / "good.md",
        "--tenant",
        "acme",
        "--groups",
        "staff",
        db=tmp_path / "kb.db",
    )
    assert proc.returncode != 0
    assert summary(proc.stdout)["added"] == 1
    assert proc.stderr.startswith(f"rejected {tmp_path / 'latin1.jsonl'}")


def test_heading_split_of_text_with_lone_carriage_returns_does_not_crash(tmp_path: Path) -> None:
    record = {"id": "cr", "groups": ["staff"], "text": "intro\rline\rmore\n# Heading\nbody text"}
    (tmp_path / "cr.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    proc = evidex(
        "ingest", tmp_path / "cr.jsonl", "--tenant", "acme", "--split", "heading", db=tmp_path / "kb.db"
    )
    assert proc.returncode == 0, proc.stderr
    assert summary(proc.stdout)["added"] == 1


# --------------------------------------------------------------------------------------------
# search
# --------------------------------------------------------------------------------------------


def test_search_human_output(examples: SimpleNamespace) -> None:
    proc, none = evidex_parallel(
        [
            (("search", "ERR-401", "--mode", "keyword", *CUSTOMER), {"db": examples.db}),
            (("search", "xylophone", "--mode", "keyword", *CUSTOMER), {"db": examples.db}),
        ]
    )
    assert proc.returncode == 0, proc.stderr
    evidence, *lines = proc.stdout.splitlines()
    assert evidence in {"evidence: strong", "evidence: weak"}
    assert len(lines) % 2 == 0 and lines
    heads, quotes = lines[0::2], lines[1::2]
    for rank, line in enumerate(heads, start=1):
        assert re.match(rf"{rank}\. \[[\w-]+ v\S+ #\d+\] ", line), line
    assert any(h.startswith("1. [") and ("error-codes v7" in h or "fehlercodes v2" in h) for h in heads)
    assert all(q.startswith("   ") for q in quotes)
    assert any("ERR-401" in q for q in quotes)
    assert none.returncode == 0 and none.stdout.strip() == "No passage you may read matches this query."


def test_search_json_hits_are_verifiable_citations(examples: SimpleNamespace) -> None:
    hits = hits_of(examples.db, "zwei Personen", STAFF, "--limit", "3")
    assert 1 <= len(hits) <= 3
    assert hits[0]["document_id"] == "reisekosten-richtlinie"
    assert hits[0]["version"] == "2026-02"  # the superseding version, not the old one
    for rank, h in enumerate(hits, start=1):
        assert set(h) >= CITATION_KEYS, set(h)
        assert h["rank"] == rank and isinstance(h["score"], float)
        doc = examples.docs[h["document_id"]]
        assert h["version"] == doc.version
        assert h["content_sha256"] == hashlib.sha256(doc.text.encode("utf-8")).hexdigest()
        assert doc.text[h["start"] : h["end"]] == h["quote"]
        assert h["title"] == doc.title and h["source_url"] == doc.source_url
        assert isinstance(h["heading_path"], list) and isinstance(h["passage"], int)
    assert len(hits_of(examples.db, "zwei Personen", STAFF, "--limit", "1")) == 1


def test_internal_page_is_invisible_to_a_public_customer(examples: SimpleNamespace) -> None:
    query = "badge reception laptop"
    public_staff = ("--tenant", "acme", "--groups", "staff", "--visibilities", "public")
    default_staff = ("--tenant", "acme", "--groups", "staff")  # no --visibilities: public only
    staff, customer, restricted, by_default, human, usage = evidex_parallel(
        [
            (("search", query, "--mode", "keyword", *actor, "--json"), {"db": examples.db})
            for actor in (STAFF, CUSTOMER, public_staff, default_staff)
        ]
        + [(("search", query, "--mode", "keyword", *CUSTOMER), {"db": examples.db}),
           (("search", "--help"), {"db": examples.db})]
    )
    assert "onboarding-checklist" in {h["document_id"] for h in ok_json(staff)["hits"]}
    assert ok_json(customer)["hits"] == []
    # Visibility alone also hides it: a staff member restricted to public documents, and one
    # who forgot --visibilities (least privilege: the default is public only, and says so).
    assert ok_json(restricted)["hits"] == []
    assert ok_json(by_default)["hits"] == []
    assert "default: public only" in " ".join(usage.stdout.replace("│", " ").split())
    assert human.returncode == 0 and "onboarding" not in human.stdout.lower()
    assert "No passage" in human.stdout


SALARY_ACTORS = {
    "hr-confidential": (HR, True),
    "hr-default-visibilities": (("--tenant", "acme", "--groups", "hr"), False),
    "staff-confidential": (
        ("--tenant", "acme", "--groups", "staff", "--visibilities", "public,internal,confidential"),
        False,
    ),
    "customer": (CUSTOMER, False),
    "other-tenant": (
        ("--tenant", "other", "--groups", "hr", "--visibilities", "public,internal,confidential"),
        False,
    ),
}


@pytest.fixture(scope="module")
def salary_searches(examples: SimpleNamespace) -> dict[str, subprocess.CompletedProcess[str]]:
    procs = evidex_parallel(
        [
            (("search", "salary bands euros", "--mode", "keyword", *actor, "--json"), {"db": examples.db})
            for actor, _ in SALARY_ACTORS.values()
        ]
    )
    return dict(zip(SALARY_ACTORS, procs, strict=True))


@pytest.mark.parametrize("actor", list(SALARY_ACTORS))
def test_confidential_salary_page_only_for_hr_with_confidential(
    salary_searches: dict[str, subprocess.CompletedProcess[str]], actor: str
) -> None:
    ids = {h["document_id"] for h in ok_json(salary_searches[actor])["hits"]}
    assert ("salary-bands" in ids) is SALARY_ACTORS[actor][1], ids


# --------------------------------------------------------------------------------------------
# resolve, remove, stats
# --------------------------------------------------------------------------------------------


def resolve(db: Path, citation: Any, actor: Sequence[str], *extra: str) -> subprocess.CompletedProcess[str]:
    return evidex("resolve", *actor, *extra, db=db, stdin=json.dumps(citation))


def test_resolve_reads_a_citation_from_stdin(examples: SimpleNamespace) -> None:
    hit = hits_of(examples.db, "zwei Personen", STAFF)[0]
    forged = hit["quote"].replace("Einzelzimmer", "Doppelzimmer")
    assert forged != hit["quote"]
    cases = [
        (hit, STAFF, "--json"),
        (hit, STAFF),
        ({**hit, "quote": forged}, STAFF, "--json"),
        ({**hit, "document_id": "no-such-document"}, STAFF, "--json"),
        (hit, CUSTOMER, "--json"),
    ]
    good, human, tampered, unknown, outsider = evidex_parallel(
        [
            (("resolve", *actor, *extra), {"db": examples.db, "stdin": json.dumps(citation)})
            for citation, actor, *extra in cases
        ]
    )
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout) == {
        "ok": True,
        "reason": None,
        "detail": "",
        "current_version": "2026-02",
        "matched_version": None,
    }
    assert human.returncode == 0 and human.stdout.startswith("ok"), human.stderr
    for proc, reason in ((tampered, "quote_mismatch"), (unknown, "unavailable"), (outsider, "unavailable")):
        assert proc.returncode != 0
        assert json.loads(proc.stdout)["reason"] == reason


def test_resolve_of_a_whole_search_result_says_it_is_not_a_citation(examples: SimpleNamespace) -> None:
    found = evidex("search", "zwei Personen", "--mode", "keyword", *STAFF, "--json", db=examples.db)
    assert found.returncode == 0, found.stderr
    proc = evidex("resolve", *STAFF, db=examples.db, stdin=found.stdout)
    line = assert_one_error_line(proc, "this is not a citation")
    assert "pass one hit" in line and "unavailable" not in line and proc.stdout == ""


def test_resolve_after_a_new_version_says_source_changed(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    ingest_examples(db, "versions")
    old = [h for h in hits_of(db, "Doppelzimmer", STAFF) if h["version"] == "2025-01"]
    assert old, "the old policy version should mention Doppelzimmer"
    ingest_examples(db, "collection")
    res = resolve(db, old[0], STAFF, "--json")
    assert res.returncode != 0
    assert json.loads(res.stdout) | {"detail": ""} == {
        "ok": False,
        "reason": "source_changed",
        "detail": "",
        "current_version": "2026-02",
        "matched_version": "2025-01",
    }


def test_remove_then_search_and_resolve_no_longer_find_it(tmp_path: Path) -> None:
    db = tmp_path / "kb.db"
    ingest_examples(db, "collection")
    hits = [h for h in hits_of(db, "support rota December", STAFF) if h["document_id"] == "team-note-weekly"]
    assert hits
    removed = evidex("remove", "team-note-weekly", "--tenant", "acme", db=db)
    assert removed.returncode == 0, removed.stderr
    assert "team-note-weekly" in removed.stdout
    assert all(h["document_id"] != "team-note-weekly" for h in hits_of(db, "support rota December", STAFF))
    res = resolve(db, hits[0], STAFF, "--json")
    assert res.returncode != 0 and json.loads(res.stdout)["reason"] == "unavailable"
    assert ok_json(evidex("stats", "--json", db=db))["documents"] == len(example_docs("collection")) - 1
    again = evidex("remove", "team-note-weekly", "--tenant", "acme", "--json", db=db)
    assert_one_error_line(again, "team-note-weekly")
    assert json.loads(again.stdout)["removed"] is False


def test_stats_json(examples: SimpleNamespace) -> None:
    stats = ok_json(evidex("stats", "--json", db=examples.db))
    assert stats["documents"] == len(examples.docs)
    assert stats["passages"] == heading_passages(examples.docs)
    assert stats["tenants"] == 1
    assert stats["history_versions"] == 1  # the superseded 2025-01 policy
    assert stats["analyzer"] == "auto"
    human = evidex("stats", db=examples.db)
    assert human.returncode == 0 and f"documents: {len(examples.docs)}" in human.stdout.splitlines()


# --------------------------------------------------------------------------------------------
# --db default
# --------------------------------------------------------------------------------------------


def small_doc(tmp_path: Path) -> Path:
    path = tmp_path / "note.md"
    path.write_text("---\nid: note\n---\nA capybara naps.\n", encoding="utf-8")
    return path


def test_db_defaults_to_evidex_db_env_variable(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env_db = tmp_path / "from-env.db"
    env = clean_env(EVIDEX_DB=str(env_db))
    proc = evidex("ingest", small_doc(tmp_path), "--tenant", "acme", "--groups", "staff", cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    assert env_db.is_file()
    assert not (work / "evidex.db").exists()
    assert ok_json(evidex("stats", "--json", cwd=work, env=env))["documents"] == 1
    # An explicit --db wins over the variable (and a reading command does not create it).
    explicit = tmp_path / "explicit.db"
    proc = evidex("stats", "--json", db=explicit, cwd=work, env=env)
    assert proc.returncode == 1 and f"error: no store at {explicit}" in proc.stderr
    assert not explicit.exists()


@pytest.mark.parametrize("command", [("search", "capybara", *STAFF), ("ask", "Who naps?", *STAFF),
                                     ("stats",), ("runs",), ("conflicts",)])
def test_reading_commands_refuse_a_missing_store_instead_of_creating_one(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    # A mistyped --db used to create an empty store that declined every question as if the
    # collection lacked the answer.
    missing = tmp_path / "typo.db"
    proc = evidex(*command, db=missing)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.strip().splitlines() == [
        f"error: no store at {missing} (evidex ingest creates one; or give --db)"]
    assert not missing.exists()


def test_version_prints_the_version() -> None:
    """It said "error: Missing command." (click checks for a command before the option runs)."""
    from evidex import __version__

    proc = evidex("--version")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"{__version__}\n", "")


def test_an_invalid_thread_count_is_one_error_line(examples: SimpleNamespace) -> None:
    """EVIDEX_EMBED_THREADS=abc ended the first embedding with a traceback."""
    env = clean_env(EVIDEX_EMBED_THREADS="abc", EVIDEX_QUERY_THREADS="abc")
    proc = evidex("search", "travel", *STAFF, db=examples.db, env=env)  # asserts no traceback
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 1 and len(errors) == 1, proc.stderr
    assert "THREADS must be a positive integer, got 'abc'" in errors[0]


def test_a_reader_that_stops_early_gets_no_error_line(examples: SimpleNamespace) -> None:
    """`evidex search ... | head -1` printed "error: Broken pipe": the reader went away, which is
    no error of the command's (it leaves as cat does, with 128 + SIGPIPE)."""
    proc = subprocess.Popen([str(EVIDEX), "--db", str(examples.db), "search", "travel", "--mode", "keyword",
                             *STAFF, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=clean_env())
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command has written anything: its first write meets no reader
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == "", err


def test_no_arguments_print_the_help_and_no_empty_error_line() -> None:
    proc = evidex()
    assert proc.returncode == 2 and "Usage: evidex" in proc.stdout and "search" in proc.stdout
    assert "error:" not in proc.stderr, proc.stderr


def test_runs_on_a_store_without_runs_says_so(examples: SimpleNamespace) -> None:
    """An empty listing read as "no failures"; runs are only the scheduled ones."""
    text = evidex("runs", db=examples.db)
    assert text.returncode == 0 and text.stdout.startswith("no runs recorded: runs are the scheduled"), text
    assert "of source 'faq'" in evidex("runs", "--source", "faq", db=examples.db).stdout
    assert ok_json(evidex("runs", "--json", db=examples.db)) == {"runs": []}


def test_db_defaults_to_evidex_db_in_the_working_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    proc = evidex("ingest", small_doc(tmp_path), "--tenant", "acme", "--groups", "staff", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert (work / "evidex.db").is_file()
    hits = ok_json(evidex("search", "capybara", "--mode", "keyword", *STAFF, "--json", cwd=work))["hits"]
    assert [h["document_id"] for h in hits] == ["note"]


# --------------------------------------------------------------------------------------------
# errors: non-zero exit, exactly one "error:" line, no traceback
# --------------------------------------------------------------------------------------------

SEARCH = ("search", "travel", "--mode", "keyword", *STAFF)
ERRORS = {
    "limit-zero": ((*SEARCH, "--limit", "0"), "limit"),
    "limit-too-big": ((*SEARCH, "--limit", "999"), "limit"),
    "limit-not-a-number": ((*SEARCH, "--limit", "many"), "limit"),
    "query-newline": (("search", "travel\npolicy", "--mode", "keyword", *STAFF), "control character"),
    "query-escape": (("search", "travel\x1b[31m", "--mode", "keyword", *STAFF), "control character"),
    "query-too-long": (("search", "x" * 201, *STAFF), "200"),
    "unknown-match": ((*SEARCH, "--match", "most"), "match"),
    "unknown-visibility": ((*SEARCH, "--visibilities", "public,secret"), "secret"),
    "missing-groups-option": (("search", "travel", "--mode", "keyword", "--tenant", "acme"), "--groups"),
    "unknown-analyzer": (("--analyzer", "klingon", "ingest", EXAMPLES / "collection" / "returns-faq.md",
                          "--tenant", "acme"), "klingon"),
    "unknown-split": (
        ("ingest", EXAMPLES / "collection" / "returns-faq.md", "--tenant", "acme", "--split", "sentence"),
        "sentence",
    ),
    "missing-path": (("ingest", "{tmp}/no-such-file.md", "--tenant", "acme"), "no-such-file.md"),
    "missing-beir-folder": (("eval", "--beir", "{tmp}/no-such-beir"), "no-such-beir"),
    "remove-unknown-id": (("remove", "no-such-doc", "--tenant", "acme"), "no-such-doc"),
    "empty-groups": (("search", "travel", "--tenant", "acme", "--groups", " , "), "--groups names no group"),
    "conflicts-unknown-status": (("conflicts", "--status", "bogus"), "open, closed, dismissed, all"),
    "dismiss-without-tenant": (("conflicts", "--dismiss", "1"), "--dismiss needs --tenant"),
}


BAD_CITATIONS = {"not-json": ("this is not json", "JSON"), "a-list": ("[1, 2]", "object"),
                 "empty": ("", "no citation on standard input"), "blank": ("\n  \n", "no citation")}


@pytest.fixture(scope="module")
def error_runs(examples: SimpleNamespace, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cli-errors")
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    for case, (args, _) in ERRORS.items():
        db = tmp / "fresh.db" if case == "unknown-analyzer" else examples.db
        calls.append((tuple(str(a).replace("{tmp}", str(tmp)) for a in args), {"db": db}))
    calls.append((("stats",), {"db": tmp / "no" / "such" / "dir" / "kb.db"}))
    for stdin, _ in BAD_CITATIONS.values():
        calls.append((("resolve", *STAFF), {"db": examples.db, "stdin": stdin}))
    procs = evidex_parallel(calls)
    return {
        "tmp": tmp,
        "procs": dict(zip([*ERRORS, "missing-db-folder", *BAD_CITATIONS], procs, strict=True)),
    }


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_one_line_and_exit_non_zero(error_runs: dict[str, Any], case: str) -> None:
    assert_one_error_line(error_runs["procs"][case], ERRORS[case][1])
    if case == "unknown-analyzer":
        assert not (error_runs["tmp"] / "fresh.db").exists(), "a rejected analyzer must not create a store"


def test_ingesting_nothing_is_an_error_and_creates_no_store(tmp_path: Path) -> None:
    """A folder with no file evidex reads (a mistyped path, the wrong folder) said "added 0 ...
    rejected 0", exit 0, and left an empty store behind."""
    empty, other = tmp_path / "empty", tmp_path / "spreadsheets"
    empty.mkdir()
    other.mkdir()
    (other / "prices.csv").write_text("sku,price\n1,2\n", encoding="utf-8")
    (other / "blank.jsonl").write_text("\n\n", encoding="utf-8")
    for folder in (empty, other):
        db = tmp_path / f"{folder.name}.db"
        line = assert_one_error_line(evidex("ingest", folder, "--tenant", "acme", db=db), "nothing to ingest")
        assert ".md" in line and ".pdf" in line
        assert not db.exists()


def test_store_in_a_missing_folder_is_a_one_line_error(error_runs: dict[str, Any]) -> None:
    assert_one_error_line(error_runs["procs"]["missing-db-folder"], "kb.db")


@pytest.mark.parametrize("case", list(BAD_CITATIONS))
def test_resolve_with_bad_input_is_a_one_line_error(error_runs: dict[str, Any], case: str) -> None:
    assert_one_error_line(error_runs["procs"][case], BAD_CITATIONS[case][1])


# --------------------------------------------------------------------------------------------
# hostile text never drives the terminal
# --------------------------------------------------------------------------------------------

HOSTILE = "\x1b[31m"


def run_on_terminal(args: Sequence[str], db: Path) -> tuple[int, str, str]:
    """Run evidex with stdout on a (raw) pseudo-terminal, as a person would see it: libraries
    that strip escape codes only when stdout is not a terminal cannot hide a missing filter."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen(
        [str(EVIDEX), "--db", str(db), *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.PIPE,
        env=clean_env(),
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace"), err


def test_control_characters_in_documents_never_reach_human_search_output(tmp_path: Path) -> None:
    record = {
        "id": "hostile",
        "groups": ["staff"],
        "title": f"Evil {HOSTILE}title\x1b]0;pwned\x07",
        "text": (
            f"# Head {HOSTILE}red\x1b[0m\n\nbeacon {HOSTILE}ALERT\x1b[0m bell\x07 back\x08\x08 "
            "osc\x1b]0;owned\x07 csi\x9b2J nel\x85 rtl\u202e end\rline"
        ),
    }
    (tmp_path / "h.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    db = tmp_path / "kb.db"
    ingested = evidex("ingest", tmp_path / "h.jsonl", "--tenant", "acme", "--split", "heading", db=db)
    assert ingested.returncode == 0, ingested.stderr
    # The control characters are really stored (the JSON output is exact) ...
    hits = hits_of(db, "beacon", STAFF)
    assert hits and HOSTILE in hits[0]["quote"] and HOSTILE in hits[0]["title"]
    # ... but the human output shows none of them, neither on a pipe nor on a terminal.
    piped = evidex("search", "beacon", "--mode", "keyword", *STAFF, db=db)
    code, on_tty, err = run_on_terminal(["search", "beacon", "--mode", "keyword", *STAFF], db)
    assert piped.returncode == 0 and code == 0, (piped.stderr, err)
    for out in (piped.stdout, on_tty):
        assert "beacon" in out and "ALERT" in out
        bad = sorted(
            {f"U+{ord(c):04X}" for c in out if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")}
        )
        assert bad == [], f"control characters reached the terminal: {bad}"


def test_each_hit_is_two_lines_even_with_a_newline_in_the_title(tmp_path: Path) -> None:
    record = {
        "id": "spoof",
        "groups": ["staff"],
        "text": "beacon words",
        "title": "Nice\n2. [salary-bands v2026 #1] Salary bands 2026",
    }
    (tmp_path / "s.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    db = tmp_path / "kb.db"
    assert evidex("ingest", tmp_path / "s.jsonl", "--tenant", "acme", db=db).returncode == 0
    proc = evidex("search", "beacon", "--mode", "keyword", *STAFF, db=db)
    assert proc.returncode == 0
    evidence, *lines = proc.stdout.splitlines()
    assert evidence.startswith("evidence: ")
    assert len(lines) == 2, lines
    assert not any(line.startswith("2. [") for line in lines), lines


def test_reindex_switches_the_analyzer_of_an_existing_store(tmp_path: Path) -> None:
    """An exact store stays exact until `evidex reindex --analyzer auto`, after which the
    English passages are stemmed ("refunded" finds "refund"); a bad name changes nothing."""
    db = tmp_path / "kb.db"
    proc = evidex("--analyzer", "exact", "ingest", EXAMPLES / "collection", "--tenant", "acme",
                  "--split", "heading", db=db)
    assert proc.returncode == 0, proc.stderr
    assert hits_of(db, "refunded", STAFF) == []
    assert_one_error_line(evidex("reindex", "--analyzer", "klingon", db=db), "unknown analyzer 'klingon'")
    assert ok_json(evidex("stats", "--json", db=db))["analyzer"] == "exact"
    report = ok_json(evidex("reindex", "--analyzer", "auto", "--json", db=db))
    assert report == {"analyzer": "auto", "passages": ok_json(evidex("stats", "--json", db=db))["passages"]}
    assert ok_json(evidex("stats", "--json", db=db))["analyzer"] == "auto"
    assert {h["document_id"] for h in hits_of(db, "refunded", STAFF)} == {"returns-faq"}
