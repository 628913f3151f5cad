"""The loaders' and the split's resource bounds (issue 37, findings 4 and 5): a Word file of
millions of paragraphs and text of millions of tiny words are refused quickly, one file at a
time, with one line naming the bound and the setting that raises it; the good files of the
same ingest or sync are kept. Peak memory of the hostile files is checked in
tests/ingest/test_fuzz_loaders.py (a child process each) and measured in benchmarks/ingest_memory.py."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

import fuzz_inputs as fz
from evidex import Document, KnowledgeBase
from evidex.config import load_config
from evidex.ingest import load_document, load_paths, split_text
from evidex.model import ConfigError, DocumentError
from evidex.sources import sync

DEFAULTS = {"tenant": "acme", "groups": ["staff"]}


def test_the_element_bound_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    data = fz.docx_paragraphs(2_000)                             # 4,000 paragraphs and runs
    assert "word" in load_document(data, "docx", DEFAULTS, doc_id="d").text
    monkeypatch.setenv("EVIDEX_MAX_ELEMENTS", "1000")
    with pytest.raises(DocumentError, match="more than 1,000 paragraphs, runs and table cells"):
        load_document(data, "docx", DEFAULTS, doc_id="d")
    monkeypatch.setenv("EVIDEX_MAX_ELEMENTS", "many")
    with pytest.raises(ConfigError, match="EVIDEX_MAX_ELEMENTS must be a positive whole number"):
        load_document(data, "docx", DEFAULTS, doc_id="d")


@pytest.mark.parametrize(("data", "message"), [
    (fz.tiny_words(2), "a paragraph holds more than 10,000 words, more than a passage may "
                       "(EVIDEX_MAX_WORDS_PER_PASSAGE raises the limit); not read"),
    (fz.tiny_words(3, paragraph_words=5_000), "the document holds more than 1,000,000 words "
                                              "(EVIDEX_MAX_WORDS_PER_DOCUMENT raises the limit); not read"),
])
def test_text_of_many_tiny_words_is_refused_file_by_file(tmp_path: Path, data: bytes, message: str) -> None:
    """Finding 5: 10 MB of one-letter words (a .md file or one JSONL line) took 1.43 GB through
    the CLI. The file is refused and the good file beside it loads."""
    (tmp_path / "tiny.md").write_bytes(data)
    (tmp_path / "tiny.jsonl").write_bytes(json.dumps({"id": "t", "text": data.decode()}).encode() + b"\n")
    (tmp_path / "good.md").write_text("# Returns\n\nWithin 30 days.\n", encoding="utf-8")
    tracemalloc.start()
    try:
        loaded = load_paths([tmp_path], DEFAULTS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, peak  # was 1.43 GB: counted and refused, not held
    assert [d.id for d in loaded.documents] == ["good.md"]
    assert sorted((Path(r.source).name, r.reason) for r in loaded.rejected) == [
        ("tiny.jsonl:1", message), ("tiny.md", message)]


def test_an_html_page_of_too_many_elements_is_refused_before_it_is_parsed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVIDEX_MAX_ELEMENTS", "500")
    with pytest.raises(DocumentError, match="the page holds more than 500 elements"):
        load_document(b"<p>x</p>" * 501, "html", DEFAULTS, doc_id="p")


def test_the_split_bounds_passages_of_documents_built_in_code(tmp_path: Path) -> None:
    """A document given to the library directly, or split whole (mode document), is held to
    the same bounds when it is split."""
    words = " ".join(["word"] * 12_000)
    for mode in ("document", "paragraph", "heading"):
        with pytest.raises(DocumentError, match="EVIDEX_MAX_WORDS_PER_PASSAGE"):
            split_text(words, mode)
    long_doc = "\n\n".join([" ".join(["word"] * 1_000)] * 12)  # 12,000 words, short paragraphs
    assert len(split_text(long_doc, "paragraph")) == 12
    with pytest.raises(DocumentError, match="EVIDEX_MAX_WORDS_PER_PASSAGE"):
        split_text(long_doc, "document")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder="none") as kb, \
            pytest.raises(DocumentError, match="EVIDEX_MAX_WORDS_PER_PASSAGE"):
        kb.ingest([Document("big", "acme", frozenset({"staff"}), "1", long_doc)], split="document")


def test_a_sync_skips_each_file_past_a_bound_and_keeps_the_rest(tmp_path: Path) -> None:
    """Through a configured source (what POST /v1/sync runs): each hostile file is skipped with
    its reason, the good file is written; split document refuses a document as one passage."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bomb.docx").write_bytes(fz.docx_paragraphs(200_000))
    (folder / "tiny.md").write_bytes(fz.tiny_words(2))
    (folder / "long.md").write_text("\n\n".join([" ".join(["word"] * 1_000)] * 12), encoding="utf-8")
    (folder / "good.md").write_text("# Returns\n\nWithin 30 days.\n", encoding="utf-8")
    config = tmp_path / "k.yaml"
    config.write_text("sources:\n  - {id: docs, type: files, path: docs, tenant: acme, groups: [staff],\n"
                      "     split: document}\n", encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb.db", embedder="none") as kb:
        report = sync(kb, load_config(config))
    [rep] = report.sources
    assert rep.new == ["docs/good.md"]
    reasons = {s.item: s.reason for s in rep.skipped}
    assert set(reasons) == {"bomb.docx", "tiny.md", "long.md"}
    assert "EVIDEX_MAX_ELEMENTS" in reasons["bomb.docx"]
    assert "EVIDEX_MAX_WORDS_PER_PASSAGE" in reasons["tiny.md"]
    assert "EVIDEX_MAX_WORDS_PER_PASSAGE" in reasons["long.md"]
