"""evidex sync and drift on real folders, a real SQLite file and a local HTTP server.

Every change a source can undergo is made for real (edit, same-size edit with the modification
time put back, delete, rename, config change, a PDF losing its text layer, a page answering 404
or 500) and the store is checked afterwards: the documents it holds, their versions, their
history, whether anything was written at all.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import docx
import pytest
from fpdf import FPDF

from actors import PUBLIC_INTERNAL
from backends import Locator, raw
from cli_runner import run_cli
from evidex import Actor, KnowledgeBase
from evidex.config import Config, load_config
from evidex.sources import SyncReport, drift, sync

CUSTOMER = Actor("acme", frozenset({"customers"}), visibilities=frozenset({"public"}))
STAFF = Actor("acme", frozenset({"staff"}), visibilities=PUBLIC_INTERNAL)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_pdf(path: Path, text: str | None) -> Path:
    pdf = FPDF()
    pdf.add_page()
    if text is None:
        pdf.rect(10, 10, 50, 50)  # a drawing, no text: what a scan looks like to a text extractor
    else:
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 8, text)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def make_docx(path: Path, body: str) -> Path:
    d = docx.Document()
    d.add_heading("Garantie", level=1)
    d.add_paragraph(body)
    d.save(str(path))
    return path


def config(tmp_path: Path, text: str) -> Config:
    return load_config(write(tmp_path / "knowledge.config.yaml", text))


HELP = """\
sources:
  - id: help
    type: files
    path: ./help
    tenant: acme
    groups: [customers]
    visibility: public
    owner: web-team@example.com
    {extra}
"""


def help_config(tmp_path: Path, extra: str = "") -> Config:
    return config(tmp_path, HELP.format(extra=extra))


def seed_help(tmp_path: Path) -> None:
    write(tmp_path / "help" / "returns.md", "# Returns\n\nReturn within 30 days.\n")
    write(tmp_path / "help" / "shipping" / "index.html",
          "<html><body><nav>menu</nav><main><h1 id='ship'>Shipping</h1><p>Ships in 3 days.</p>"
          "</main></body></html>")
    make_pdf(tmp_path / "help" / "warranty.pdf", "Warranty lasts two years.")
    make_docx(tmp_path / "help" / "care.docx", "Wash cold.")


_LOCATIONS: dict[int, str] = {}


def generation(kb: KnowledgeBase) -> int:
    """The store's write generation, read from its own tables (either backend)."""
    rows = raw(_LOCATIONS[id(kb)], "SELECT value FROM meta WHERE key = 'generation'")
    return int(rows[0][0])


def ids(kb: KnowledgeBase) -> list[str]:
    return [d.id for d in kb.documents()]


def totals(report: SyncReport) -> dict[str, int]:
    return report.totals()


@pytest.fixture
def kb(locate: Locator) -> Iterator[KnowledgeBase]:
    """Sync runs on every store backend: its bookkeeping is part of the store contract."""
    base = KnowledgeBase.open(locate("kb"))
    _LOCATIONS[id(base)] = locate("kb")
    yield base
    base.close()
    del _LOCATIONS[id(base)]


# -- files --------------------------------------------------------------------------------------

def test_first_sync_adds_every_format_and_a_resync_reads_and_writes_nothing(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None, reads: list[str]) -> None:
    seed_help(tmp_path)
    cfg = help_config(tmp_path)
    first = sync(kb, cfg)
    assert totals(first) == {"added": 4, "superseded": 0, "unchanged": 0, "removed": 0, "skipped": 0,
                             "errors": 0}
    assert ids(kb) == ["help/care.docx", "help/returns.md", "help/shipping/index.html",
                       "help/warranty.pdf"]
    hit = kb.search(CUSTOMER, "ships", mode="keyword")[0]
    assert hit.source_url == (tmp_path / "help" / "shipping" / "index.html").resolve().as_uri()
    assert hit.anchor == "ship"
    assert kb.search(CUSTOMER, "warranty", mode="keyword")[0].page == 1
    gen = generation(kb)
    reads.clear()
    again = sync(kb, cfg)
    assert totals(again)["unchanged"] == 4 and not again.drifted
    assert reads == []  # size, mtime and ctime unchanged: not even parsed
    assert generation(kb) == gen  # nothing written


def test_a_base_url_makes_citation_links_of_published_pages(tmp_path: Path, kb: KnowledgeBase) -> None:
    seed_help(tmp_path)
    sync(kb, help_config(tmp_path, "base_url: https://help.example.com/"))
    hit = kb.search(CUSTOMER, "ships", mode="keyword")[0]
    assert (hit.source_url, hit.anchor) == ("https://help.example.com/shipping/index.html", "ship")


def test_an_edit_supersedes_and_the_old_citation_matches_history(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    seed_help(tmp_path)
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    old = kb.search(CUSTOMER, "return", mode="keyword")[0].citation()
    write(tmp_path / "help" / "returns.md", "# Returns\n\nReturn within 60 days.\n")
    rep = sync(kb, cfg)
    assert rep.sources[0].changed == ["help/returns.md"] and totals(rep)["unchanged"] == 3
    res = kb.resolve(CUSTOMER, old)
    assert res.reason == "source_changed" and res.matched_version == old["version"]
    assert [h.quote for h in kb.search(CUSTOMER, "return", mode="keyword")] == [
        "# Returns\n\nReturn within 60 days."]


def test_supersede_false_keeps_no_history(tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    seed_help(tmp_path)
    cfg = help_config(tmp_path, "supersede: false")
    sync(kb, cfg)
    old = kb.search(CUSTOMER, "return", mode="keyword")[0].citation()
    write(tmp_path / "help" / "returns.md", "# Returns\n\nReturn within 60 days.\n")
    sync(kb, cfg)
    assert kb.resolve(CUSTOMER, old).matched_version is None
    assert kb.stats()["history_versions"] == 0


def test_an_edit_that_keeps_size_and_mtime_is_still_noticed(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    path = write(tmp_path / "help" / "a.md", "Code ABC-123 opens the door.\n")
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    st = path.stat()
    write(path, "Code XYZ-789 opens the door.\n")  # same length
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # as rsync -t or a restore would
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    rep = sync(kb, cfg)
    assert rep.sources[0].changed == ["help/a.md"]
    assert kb.search(CUSTOMER, "XYZ-789", mode="keyword") and not kb.search(CUSTOMER, "ABC-123",
                                                                             mode="keyword")


def test_a_file_written_just_before_a_sync_is_read_again_next_time(
        tmp_path: Path, kb: KnowledgeBase, reads: list[str], racy_seconds: Callable[[float], None]) -> None:
    # A window wider than the test's run time, so both syncs see the file as just written
    # however slow the machine is.
    racy_seconds(3600.0)
    write(tmp_path / "help" / "a.md", "fresh\n")
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    reads.clear()
    gen = generation(kb)
    rep = sync(kb, cfg)  # its stamp was too recent to trust: parsed again, compared, not written
    assert reads == ["help/a.md"] and totals(rep)["unchanged"] == 1
    assert generation(kb) == gen


def test_a_reread_file_whose_language_was_identified_is_unchanged(
        tmp_path: Path, kb: KnowledgeBase, reads: list[str], racy_seconds: Callable[[float], None]) -> None:
    """A file that states no language gets the identified one when written; read again (its
    stamp not trusted, as after a `touch`), it is the same document: drift reports no change
    (owners would be told of a drift that is none) and sync writes nothing."""
    racy_seconds(3600.0)
    write(tmp_path / "help" / "returns.md",
          "# Returns\n\nYou can return unworn items within 30 days of delivery for a full refund.\n")
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    assert kb.search(CUSTOMER, "refund", mode="keyword")[0].language == "en"
    gen = generation(kb)
    reads.clear()
    checked = drift(kb, cfg)
    assert reads == ["help/returns.md"]  # read again, compared
    assert not checked.drifted and totals(checked)["unchanged"] == 1
    again = sync(kb, cfg)
    assert totals(again)["unchanged"] == 1 and totals(again)["superseded"] == 0
    assert generation(kb) == gen


def test_deleted_and_renamed_files_leave_no_stale_passage(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    seed_help(tmp_path)
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    write(tmp_path / "help" / "returns.md", "# Returns\n\nReturn within 45 days.\n")
    sync(kb, cfg)  # returns.md now has a history entry
    (tmp_path / "help" / "warranty.pdf").unlink()
    (tmp_path / "help" / "returns.md").rename(tmp_path / "help" / "returns-policy.md")
    rep = sync(kb, cfg).sources[0]
    assert sorted(rep.removed) == ["help/returns.md", "help/warranty.pdf"]
    assert rep.new == ["help/returns-policy.md"]
    assert ids(kb) == ["help/care.docx", "help/returns-policy.md", "help/shipping/index.html"]
    assert [h.document_id for h in kb.search(CUSTOMER, "warranty return", mode="keyword")] == [
        "help/returns-policy.md"]
    assert kb.stats()["history_versions"] == 0  # removed with its history
    with kb.store.read() as view:
        assert view.history("acme", "help/returns.md") == []
    assert {e.doc_id for e in kb.source_entries("help")} == set(ids(kb))


def test_a_config_change_reindexes_unchanged_files(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None, reads: list[str]) -> None:
    seed_help(tmp_path)
    sync(kb, help_config(tmp_path))
    assert kb.search(CUSTOMER, "return", mode="keyword")
    reads.clear()
    staff_only = config(tmp_path, HELP.format(extra="").replace("customers", "staff").replace(
        "public", "internal"))
    rep = sync(kb, staff_only)
    assert len(reads) == 4 and len(rep.sources[0].changed) == 4
    assert not kb.search(CUSTOMER, "return", mode="keyword")
    assert kb.search(STAFF, "return", mode="keyword")


def test_unreadable_files_are_skipped_with_reasons_and_never_indexed_empty(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    make_pdf(tmp_path / "help" / "scan.pdf", None)
    write(tmp_path / "help" / "bad.md", "---\ncolour: red\n---\ntext\n")
    write(tmp_path / "help" / "notes.rtf", "{\\rtf1 hello}")
    write(tmp_path / "help" / "ok.md", "fine\n")
    cfg = help_config(tmp_path)
    rep = sync(kb, cfg).sources[0]
    reasons = {s.item: s.reason for s in rep.skipped}
    assert reasons["scan.pdf"] == "no text layer (needs OCR)"
    assert "unknown front matter keys ['colour']" in reasons["bad.md"]
    assert reasons["notes.rtf"].startswith("unsupported file type .rtf")
    assert ids(kb) == ["help/ok.md"]
    # Reported again on every sync until fixed: a skipped file is never forgotten silently.
    assert {s.item for s in sync(kb, cfg).sources[0].skipped} == {"scan.pdf", "bad.md", "notes.rtf"}


def test_files_over_the_source_size_limit_are_skipped_with_the_limit(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    write(tmp_path / "help" / "huge.md", "# Huge\n\n" + "words " * 1000)
    write(tmp_path / "help" / "empty.md", "")
    write(tmp_path / "help" / "ok.md", "fine\n")
    rep = sync(kb, help_config(tmp_path, "max_bytes: 2048")).sources[0]
    assert {s.item: s.reason for s in rep.skipped} == {
        "huge.md": "the file is 6,008 bytes, larger than the limit of 2,048 bytes per file",
        "empty.md": "no text to index (the file is empty or holds only front matter)"}
    assert ids(kb) == ["help/ok.md"]
    rep = sync(kb, help_config(tmp_path)).sources[0]  # the default limit is 20 MiB
    assert [s.item for s in rep.skipped] == ["empty.md"] and ids(kb) == ["help/huge.md", "help/ok.md"]


def test_a_pdf_that_loses_its_text_layer_is_removed_not_kept_stale(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    make_pdf(tmp_path / "help" / "policy.pdf", "Refunds within 14 days.")
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    make_pdf(tmp_path / "help" / "policy.pdf", None)  # replaced by a scan
    rep = sync(kb, cfg).sources[0]
    assert rep.removed == ["help/policy.pdf"]
    assert [s.reason for s in rep.skipped] == ["no text layer (needs OCR)"]
    assert ids(kb) == []


def test_a_missing_source_folder_fails_the_source_and_removes_nothing(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    seed_help(tmp_path)
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    (tmp_path / "help").rename(tmp_path / "help-unmounted")
    rep = sync(kb, cfg)
    assert "does not exist" in (rep.sources[0].failed or "") and not rep.ok
    assert len(ids(kb)) == 4
    (tmp_path / "help-unmounted").rename(tmp_path / "help")
    for f in (tmp_path / "help").rglob("*"):
        if f.is_file():
            f.unlink()
    assert totals(sync(kb, cfg))["removed"] == 4  # an existing empty folder is a real emptying


def test_include_and_exclude_globs(tmp_path: Path, kb: KnowledgeBase) -> None:
    write(tmp_path / "help" / "a.md", "a\n")
    write(tmp_path / "help" / "deep" / "er" / "b.html", "<p>b</p>")
    write(tmp_path / "help" / "drafts" / "c.md", "c\n")
    write(tmp_path / "help" / "d.txt", "d\n")
    sync(kb, help_config(tmp_path, 'include: ["**/*.md", "**/*.html"]\n    exclude: ["drafts/**"]'))
    assert ids(kb) == ["help/a.md", "help/deep/er/b.html"]


def test_a_single_file_source_keeps_its_id_when_the_file_is_replaced(
        tmp_path: Path, kb: KnowledgeBase) -> None:
    text = ("sources:\n  - {id: returns-policy, type: files, path: ./policies/%s, supersede: true,"
            " tenant: acme, groups: [customers], visibility: public}\n")
    make_pdf(tmp_path / "policies" / "returns-2025.pdf", "Returns within 30 days.")
    sync(kb, config(tmp_path, text % "returns-2025.pdf"))
    make_pdf(tmp_path / "policies" / "returns-2026.pdf", "Returns within 14 days.")
    rep = sync(kb, config(tmp_path, text % "returns-2026.pdf")).sources[0]
    assert rep.changed == ["returns-policy"] and rep.removed == []
    assert ids(kb) == ["returns-policy"] and kb.stats()["history_versions"] == 1


def test_a_document_removed_by_hand_comes_back_on_the_next_sync(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    seed_help(tmp_path)
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    assert kb.remove("acme", "help/returns.md")
    rep = sync(kb, cfg).sources[0]
    assert rep.new == ["help/returns.md"] and len(ids(kb)) == 4


def test_two_sources_claiming_one_id_do_not_overwrite_each_other(
        tmp_path: Path, kb: KnowledgeBase) -> None:
    write(tmp_path / "a" / "x.md", "---\nid: shared\n---\nfrom a\n")
    write(tmp_path / "b" / "y.md", "---\nid: shared\n---\nfrom b\n")
    cfg = config(tmp_path, "defaults: {tenant: acme, groups: [staff]}\nsources:\n"
                           "  - {id: a, type: files, path: a}\n  - {id: b, type: files, path: b}\n")
    for _ in range(2):
        rep = sync(kb, cfg)
        assert [s.reason for s in rep.sources[1].skipped] == ["document id 'shared' belongs to source 'a'"]
        assert [h.quote for h in kb.search(STAFF, "from", mode="keyword")] == ["from a"]


def test_only_the_named_source_is_synced(tmp_path: Path, kb: KnowledgeBase) -> None:
    write(tmp_path / "a" / "x.md", "x\n")
    write(tmp_path / "b" / "y.md", "y\n")
    cfg = config(tmp_path, "defaults: {tenant: acme, groups: [staff]}\nsources:\n"
                           "  - {id: a, type: files, path: a}\n  - {id: b, type: files, path: b}\n")
    assert [s.source for s in sync(kb, cfg, "b").sources] == ["b"]
    assert ids(kb) == ["b/y.md"]
    with pytest.raises(ValueError, match="no source 'c'"):
        sync(kb, cfg, "c")


def test_a_source_without_tenant_or_groups_is_refused_by_name(tmp_path: Path, kb: KnowledgeBase) -> None:
    make_pdf(tmp_path / "policies" / "returns.pdf", "Returns.")
    cfg = config(tmp_path, "sources:\n  - {id: returns-policy, type: files, path: policies/returns.pdf}\n")
    rep = sync(kb, cfg).sources[0]
    assert rep.failed is not None and "sets no tenant and no groups" in rep.failed


# -- records --------------------------------------------------------------------------------------

RECORDS = """\
sources:
  - id: catalogue
    type: records
    path: ./catalogue.jsonl
    tenant: acme
    groups: [customers]
    visibility: public
    fields: {id: sku, text: [name, description], title: name, source_url: link, version: updated}
"""


def records(path: Path, rows: list[dict | str]) -> None:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows)
                    + "\n", encoding="utf-8")


def test_records_map_fields_and_sync_per_record(tmp_path: Path, kb: KnowledgeBase,
                                                trusted_stamps: None) -> None:
    path = tmp_path / "catalogue.jsonl"
    jacket = {"sku": "J-1", "name": "Jacke", "description": "Wasserdicht, Größe M.", "link":
              "https://shop.example.com/j-1", "updated": "2026-01", "price": 99, "groups": ["hr"]}
    boots = {"sku": 7, "name": "Stiefel", "description": "Leder.", "updated": "2026-01"}
    records(path, [jacket, boots, "{not json", {"sku": "X-9", "name": 5}])
    cfg = config(tmp_path, RECORDS)
    rep = sync(kb, cfg).sources[0]
    assert sorted(rep.new) == ["catalogue/7", "catalogue/J-1"]
    assert [s.item for s in rep.skipped] == ["catalogue.jsonl:3", "catalogue.jsonl:4"]
    hit = kb.search(CUSTOMER, "wasserdicht", mode="keyword")[0]
    assert (hit.document_id, hit.title, hit.source_url, hit.version) == (
        "catalogue/J-1", "Jacke", "https://shop.example.com/j-1", "2026-01")
    assert hit.quote == "Jacke\n\nWasserdicht, Größe M."
    assert "99" not in hit.quote  # unmapped keys are not indexed ...
    doc = next(d for d in kb.documents() if d.id == "catalogue/J-1")
    assert doc.groups == {"customers"}  # ... and never choose who may read the record
    records(path, [{**jacket, "description": "Wasserdicht, Größe L.", "updated": "2026-02"}])
    rep = sync(kb, cfg).sources[0]
    assert rep.changed == ["catalogue/J-1"] and rep.removed == ["catalogue/7"]
    assert ids(kb) == ["catalogue/J-1"]


# -- web ------------------------------------------------------------------------------------------

class _Handler(SimpleHTTPRequestHandler):
    failing: ClassVar[set[str]] = set()
    hooks: ClassVar[list[dict]] = []

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        if self.path in self.failing:
            self.send_error(500, "broken")
            return
        super().do_GET()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.hooks.append(json.loads(body))
        self.send_response(204 if self.path == "/hook" else 500)
        self.end_headers()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, type[_Handler]]]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    root = tmp_path / "site"
    root.mkdir()
    handler = type("Handler", (_Handler,), {"failing": set(), "hooks": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root, handler
    server.shutdown()
    server.server_close()


def page(root: Path, name: str, body: str, bump: int = 0) -> None:
    path = write(root / name, f"<html><head><title>{name}</title></head><body><nav>Menu</nav>"
                              f"<main><h1 id='top'>{name}</h1><p>{body}</p></main></body></html>")
    if bump:  # HTTP dates have one-second resolution: move the page clearly forward in time
        st = path.stat()
        os.utime(path, (st.st_atime + bump, st.st_mtime + bump))


def sitemap(root: Path, base: str, names: list[str]) -> None:
    urls = "".join(f"<url><loc>{base}/{n}</loc></url>" for n in names)
    write(root / "sitemap.xml", '<?xml version="1.0" encoding="UTF-8"?>'
          f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')


def web_config(tmp_path: Path, base: str, extra: str = "") -> Config:
    return config(tmp_path, f"""\
sources:
  - id: site
    type: web
    sitemap: {base}/sitemap.xml
    urls: ["{base}/extra.html"]
    tenant: acme
    groups: [customers]
    visibility: public
    owner: web@example.com
{extra}""")


def test_web_pages_sync_with_conditional_requests_and_404_removal(
        tmp_path: Path, kb: KnowledgeBase, site: tuple[str, Path, type[_Handler]]) -> None:
    base, root, handler = site
    page(root, "a.html", "Alpha returns policy")
    page(root, "b.html", "Beta shipping policy")
    page(root, "extra.html", "Extra page")
    sitemap(root, base, ["a.html", "b.html"])
    cfg = web_config(tmp_path, base)
    rep = sync(kb, cfg).sources[0]
    assert sorted(rep.new) == [f"site/{base}/{n}" for n in ("a.html", "b.html", "extra.html")]
    hit = kb.search(CUSTOMER, "alpha", mode="keyword")[0]
    assert (hit.source_url, hit.anchor, hit.title) == (f"{base}/a.html", "top", "a.html")
    gen = generation(kb)
    assert sync(kb, cfg).sources[0].unchanged == 3 and generation(kb) == gen  # all 304
    page(root, "a.html", "Alpha returns policy, now 60 days", bump=10)
    (root / "b.html").unlink()
    rep = sync(kb, cfg).sources[0]
    assert rep.changed == [f"site/{base}/a.html"] and rep.removed == [f"site/{base}/b.html"]
    assert kb.search(CUSTOMER, "60", mode="keyword")
    handler.failing.add("/a.html")
    rep = sync(kb, cfg).sources[0]
    assert [e.item for e in rep.errors] == [f"{base}/a.html"] and "HTTP 500" in rep.errors[0].reason
    assert kb.search(CUSTOMER, "60", mode="keyword")  # a server error keeps the indexed version
    handler.failing.add("/sitemap.xml")
    rep = sync(kb, cfg).sources[0]
    assert "sitemap" in (rep.failed or "") and len(ids(kb)) == 2  # nothing removed


def test_a_gzip_sitemap_is_inflated_only_up_to_max_bytes(
        tmp_path: Path, kb: KnowledgeBase, site: tuple[str, Path, type[_Handler]]) -> None:
    """A 100 KB gzip sitemap inflating to 100 MB was inflated whole, whatever max_bytes said."""
    import gzip

    base, root, _ = site
    page(root, "extra.html", "Extra page")
    body = (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + b" " * (100 * 1024 * 1024) + b"<url><loc>" + base.encode()
            + b"/extra.html</loc></url></urlset>")
    (root / "sitemap.xml").write_bytes(gzip.compress(body, compresslevel=9))
    rep = sync(kb, web_config(tmp_path, base, "    max_bytes: 10485760\n")).sources[0]
    assert rep.failed == (f"the sitemap {base}/sitemap.xml inflates to more than max_bytes "
                          "(10485760)")


def test_a_page_dropped_from_the_sitemap_is_removed(tmp_path: Path, kb: KnowledgeBase,
                                                     site: tuple[str, Path, type[_Handler]]) -> None:
    base, root, _ = site
    for n in ("a.html", "b.html", "extra.html"):
        page(root, n, f"text of {n}")
    sitemap(root, base, ["a.html", "b.html"])
    cfg = web_config(tmp_path, base)
    sync(kb, cfg)
    sitemap(root, base, ["a.html"])
    assert sync(kb, cfg).sources[0].removed == [f"site/{base}/b.html"]


# -- drift ----------------------------------------------------------------------------------------

def test_drift_reports_each_kind_of_change_without_writing(
        tmp_path: Path, kb: KnowledgeBase, trusted_stamps: None) -> None:
    seed_help(tmp_path)
    cfg = help_config(tmp_path)
    sync(kb, cfg)
    clean = drift(kb, cfg)
    assert not clean.drifted and clean.totals()["unchanged"] == 4
    write(tmp_path / "help" / "returns.md", "# Returns\n\nReturn within 10 days.\n")
    write(tmp_path / "help" / "new.md", "brand new\n")
    (tmp_path / "help" / "care.docx").unlink()
    gen = generation(kb)
    report = drift(kb, cfg)
    assert generation(kb) == gen
    d = report.as_dict()
    assert d["drifted"] is True and (d["new"], d["changed"], d["removed"]) == (1, 1, 1)
    src = d["sources"][0]
    assert (src["new"], src["changed"], src["removed"], src["owner"]) == (
        ["help/new.md"], ["help/returns.md"], ["help/care.docx"], "web-team@example.com")
    assert d["by_owner"] == {"web-team@example.com": {"new": 1, "changed": 1, "removed": 1}}
    sync(kb, cfg)
    assert not drift(kb, cfg).drifted


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)


def test_cli_sync_and_drift_exit_statuses_json_and_webhook(
        tmp_path: Path, site: tuple[str, Path, type[_Handler]]) -> None:
    base, _, handler = site
    write(tmp_path / "help" / "a.md", "# A\n\nalpha\n")
    make_pdf(tmp_path / "help" / "scan.pdf", None)
    hook = "freshness:\n  notify: {{webhook: '{}'}}\n"
    cfg = write(tmp_path / "k.yaml", HELP.format(extra="") + hook.format(f"{base}/hook"))
    db = str(tmp_path / "kb.db")
    proc = cli("--db", db, "--config", str(cfg), "drift", "--json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["sources"][0]["new"] == ["help/a.md"]
    assert [h["sources"][0]["new"] for h in handler.hooks] == [["help/a.md"]]
    proc = cli("--db", db, "--config", str(cfg), "sync")
    assert proc.returncode == 0, proc.stderr  # a skipped scan is reported, not a failure
    assert "help (owner web-team@example.com): added 1, superseded 0, unchanged 0, removed 0, skipped 1" \
        in proc.stdout
    assert "skipped scan.pdf: no text layer (needs OCR)" in proc.stderr
    proc = cli("--db", db, "--config", str(cfg), "drift")
    assert proc.returncode == 0 and "in sync: 0 new, 0 changed, 0 removed" in proc.stdout
    assert len(handler.hooks) == 1  # nothing drifted: nobody is bothered
    write(tmp_path / "help" / "b.md", "beta\n")
    proc = cli("--db", db, "--config", str(cfg), "drift", "--no-notify")
    assert proc.returncode == 1 and "  new      help/b.md" in proc.stdout and len(handler.hooks) == 1
    bad = write(tmp_path / "bad.yaml", HELP.format(extra="") + hook.format(f"{base}/x"))
    proc = cli("--db", db, "--config", str(bad), "drift")
    assert proc.returncode == 2 and "answered HTTP 500" in proc.stderr
    proc = cli("--db", db, "--config", str(cfg), "sync", "--source", "help", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["added"] == 1
    (tmp_path / "help").rename(tmp_path / "gone")
    proc = cli("--db", db, "--config", str(cfg), "sync")
    assert proc.returncode == 1 and "does not exist" in proc.stderr


def test_cli_sync_record_writes_each_sources_run_as_the_scheduler_does(tmp_path: Path) -> None:
    """`make run` syncs with --record so the page's Operators tab and /metrics start with a sync
    history; without it nothing is recorded (the run log is the scheduler's)."""
    write(tmp_path / "help" / "a.md", "# A\n\nalpha\n")
    make_pdf(tmp_path / "help" / "scan.pdf", None)
    cfg = write(tmp_path / "k.yaml", HELP.format(extra=""))
    db = str(tmp_path / "kb.db")
    assert cli("--db", db, "--config", str(cfg), "sync").returncode == 0
    assert json.loads(cli("--db", db, "runs", "--json").stdout) == {"runs": []}
    write(tmp_path / "help" / "b.md", "# B\n\nbeta\n")
    proc = cli("--db", db, "--config", str(cfg), "sync", "--record")
    assert proc.returncode == 0, proc.stderr
    [run] = json.loads(cli("--db", db, "runs", "--json").stdout)["runs"]
    assert (run["kind"], run["source"], run["scheduled_for"]) == ("sync", "help", None)
    assert run["counts"]["added"] == 1 and run["started_at"] <= run["ended_at"]
    assert run["problems"] == ["skipped scan.pdf: no text layer (needs OCR)"] and run["ok"]
