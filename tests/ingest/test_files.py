"""Loading documents from real files (evidex.ingest.load_paths) and the splitting invariants.

Loading: YAML front matter, defaults from CLI options, content-derived versions, path-derived ids,
titles from the first H1, JSONL records, and per-file rejections (never an exception for one bad
file). Splitting: for every mode, every passage is a verbatim span of the full text; paragraph
numbers follow the "\\n\\n" parts; heading mode keeps heading paths, gives unique anchors and
divides over-long sections at paragraph boundaries.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evidex import Document
from evidex.ingest import DEFAULT_MAX_FILE_BYTES, load_paths, split_text
from evidex.model import DocumentError, Passage

DEFAULTS = {"tenant": "acme", "groups": ["staff"]}


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def sha12(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def load_one(path: Path, defaults: dict | None = None) -> Document:
    result = load_paths([path], dict(DEFAULTS if defaults is None else defaults))
    assert not result.rejected, result.rejected
    assert len(result.documents) == 1, result.documents
    return result.documents[0]


def reject_reason(path: Path, defaults: dict | None = None) -> str:
    result = load_paths([path], dict(DEFAULTS if defaults is None else defaults))
    assert result.documents == [], result.documents
    assert len(result.rejected) == 1, result.rejected
    reason = result.rejected[0].reason
    assert "\n" not in reason, f"rejection reason is not one line: {reason!r}"
    assert result.rejected[0].source.startswith(str(path))
    return reason


# --------------------------------------------------------------------------------------------
# Front matter and defaults
# --------------------------------------------------------------------------------------------

FULL_FRONT = """---
id: policy-42
version: "2026-02"
groups: [staff, hr]
visibility: confidential
language: de
title: Die Richtlinie
source_url: https://intranet.example.com/p/42
tags: [policy, travel]
published_at: 2026-02-01
---
# Not the title

Body paragraph.
"""


def test_every_front_matter_key_reaches_the_document(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "p.md", FULL_FRONT))
    assert doc.id == "policy-42"
    assert doc.tenant == "acme"
    assert doc.version == "2026-02"
    assert doc.groups == frozenset({"staff", "hr"})
    assert doc.visibility == "confidential"
    assert doc.language == "de"
    assert doc.title == "Die Richtlinie"  # front matter wins over the H1
    assert doc.source_url == "https://intranet.example.com/p/42"
    assert doc.tags == ("policy", "travel")
    assert doc.published_at == "2026-02-01"
    # The front matter is not part of the text: the body starts right after the closing ---.
    assert doc.text == "# Not the title\n\nBody paragraph.\n"


def test_front_matter_overrides_cli_defaults_and_defaults_fill_the_rest(tmp_path: Path) -> None:
    write(tmp_path / "own.md", "---\nid: own\ngroups: [hr]\nvisibility: public\nversion: '9'\n---\nx\n")
    write(tmp_path / "bare.md", "plain body\n")
    defaults = {"tenant": "acme", "groups": ["staff", "ops"], "visibility": "restricted",
                "language": "en", "version": "cli-1"}
    result = load_paths([tmp_path], defaults)
    assert not result.rejected
    docs = {d.id: d for d in result.documents}
    assert set(docs) == {"own", "bare.md"}
    own, bare = docs["own"], docs["bare.md"]
    assert (own.groups, own.visibility, own.version) == (frozenset({"hr"}), "public", "9")
    assert (own.tenant, own.language) == ("acme", "en")
    assert bare.groups == frozenset({"staff", "ops"})
    assert (bare.visibility, bare.language, bare.version, bare.tenant) == (
        "restricted", "en", "cli-1", "acme")


def test_without_visibility_anywhere_the_document_is_internal(tmp_path: Path) -> None:
    assert load_one(write(tmp_path / "a.md", "text\n")).visibility == "internal"


def test_scalar_id_and_version_in_yaml_become_strings(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "n.md", "---\nid: 1001\nversion: 7\n---\nbody\n"))
    assert (doc.id, doc.version) == ("1001", "7")


def test_front_matter_with_crlf_line_endings_is_read(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "w.md", "---\r\nid: windows\r\nversion: '3'\r\n---\r\nBody\r\n"))
    assert (doc.id, doc.version) == ("windows", "3")
    assert "id: windows" not in doc.text


def test_a_utf8_bom_does_not_make_the_front_matter_silently_ignored(tmp_path: Path) -> None:
    """A BOM (common from Windows editors) must not turn access-deciding front matter into body
    text: that would ingest a confidential HR page with the CLI's default groups."""
    path = write(tmp_path / "salary.md",
                 b"\xef\xbb\xbf---\nid: salary\ngroups: [hr]\nvisibility: confidential\n---\n# Pay\n")
    result = load_paths([path], {"tenant": "acme", "groups": ["staff"]})
    for doc in result.documents:
        assert doc.groups == frozenset({"hr"}), doc
        assert doc.visibility == "confidential", doc
        assert "visibility: confidential" not in doc.text


@pytest.mark.parametrize(
    ("front", "needle"),
    [
        ("id: x\nauthor: bob\n", "author"),            # unknown key
        ("id: [unclosed\n", "YAML"),                   # invalid YAML
        ("id: x\nvisibility: secret\n", "visibility"),  # not a known visibility
        ("- just\n- a list\n", "mapping"),             # not a mapping
        ("id: x\ntenant: other\n", "tenant"),          # tenant is not a front matter key
        ("id: x\npublished_at: someday\n", "published_at"),
        ("id: &a x\ntitle: *a\n", "front matter line 1: YAML anchors (&a) are not accepted"),
        ("groups: &g [*g]\n", "front matter line 1: YAML anchors (&g) are not accepted"),
        ("title: *nothing\n", "front matter line 1: YAML aliases (*nothing) are not accepted"),
        ("tags: " + "[" * 80 + "]" * 80 + "\n", "nested deeper than 64 levels"),
    ],
)
def test_bad_front_matter_is_a_one_line_rejection(tmp_path: Path, front: str, needle: str) -> None:
    path = write(tmp_path / "bad.md", f"---\n{front}---\nbody\n")
    assert needle in reject_reason(path)


def test_one_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    write(tmp_path / "a-good.md", "good one\n")
    write(tmp_path / "b-bad.md", "---\nsurprise: 1\n---\nbad\n")
    write(tmp_path / "c-good.txt", "good two\n")
    result = load_paths([tmp_path], dict(DEFAULTS))
    assert sorted(d.id for d in result.documents) == ["a-good.md", "c-good.txt"]
    assert [r.source for r in result.rejected] == [str(tmp_path / "b-bad.md")]


# --------------------------------------------------------------------------------------------
# Versions, ids, titles
# --------------------------------------------------------------------------------------------

def test_version_defaults_to_the_first_12_hex_of_the_body_sha256(tmp_path: Path) -> None:
    body = "# Handbook\n\nRule one.\n"
    path = write(tmp_path / "h.md", f"---\ntitle: Handbook\n---\n{body}")
    doc = load_one(path)
    assert doc.version == sha12(body)
    assert re.fullmatch(r"[0-9a-f]{12}", doc.version)
    assert doc.content_sha256 == hashlib.sha256(body.encode()).hexdigest()
    assert load_one(path).version == doc.version  # same content, same version

    write(path, f"---\ntitle: Handbook\n---\n{body}Rule two.\n")
    edited = load_one(path)
    assert edited.version != doc.version
    assert edited.version == sha12(body + "Rule two.\n")


def test_cli_version_default_beats_the_content_hash(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "a.md", "x\n"), {**DEFAULTS, "version": "v1"})
    assert doc.version == "v1"


def test_id_defaults_to_the_path_relative_to_the_folder_given(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    write(root / "top.md", "a\n")
    write(root / "sub" / "deeper" / "leaf.txt", "b\n")
    write(root / "sub" / "named.md", "---\nid: explicit\n---\nc\n")
    result = load_paths([root], dict(DEFAULTS))
    assert not result.rejected
    assert sorted(d.id for d in result.documents) == ["explicit", "sub/deeper/leaf.txt", "top.md"]
    # The same file given directly (or via its own folder) is named relative to that folder.
    assert load_one(root / "sub" / "deeper" / "leaf.txt").id == "leaf.txt"
    sub = load_paths([root / "sub"], dict(DEFAULTS))
    assert sorted(d.id for d in sub.documents) == ["deeper/leaf.txt", "explicit"]


def test_title_comes_from_the_first_h1(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "t.md", "Intro line\n\n## Second level\n\n# The Title\n\n# Later\n"))
    assert doc.title == "The Title"
    assert load_one(write(tmp_path / "none.md", "## only h2\n\ntext\n")).title is None


@pytest.mark.parametrize(
    ("body", "title"),
    [
        ("# Learn C#\n\nbody\n", "Learn C#"),                          # '#' not a closing sequence
        ("# Closed heading ##\n\nbody\n", "Closed heading"),           # a real closing sequence
        ("```sh\n# install\n```\n\n# Real Title\n\nbody\n", "Real Title"),  # '#' inside a fence
        ("Setext Title\n============\n\nbody\n", "Setext Title"),      # setext H1
    ],
)
def test_title_follows_markdown_rules_for_the_first_h1(tmp_path: Path, body: str, title: str) -> None:
    doc = load_one(write(tmp_path / "doc.md", body))
    assert doc.title == title
    # ... and agrees with what heading-mode splitting sees as the heading.
    headed = [p for p in split_text(doc.text, "heading") if p.heading_path]
    assert headed and headed[0].heading_path[0] == title


# --------------------------------------------------------------------------------------------
# JSONL, suffixes, encodings, missing paths
# --------------------------------------------------------------------------------------------

def test_jsonl_records_become_documents_with_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path / "records.jsonl",
        '{"id": "r1", "text": "first record", "version": "4", "language": "en"}\n'
        "\n"
        '{"id": "r2", "text": "second record", "groups": ["hr"], "visibility": "public"}\n',
    )
    result = load_paths([path], {"tenant": "acme", "groups": ["staff"]})
    assert not result.rejected
    r1, r2 = result.documents
    assert (r1.id, r1.version, r1.language, r1.groups, r1.tenant) == (
        "r1", "4", "en", frozenset({"staff"}), "acme")
    assert (r2.id, r2.groups, r2.visibility) == ("r2", frozenset({"hr"}), "public")
    assert r2.version == sha12("second record")  # no version anywhere: content decides
    assert result.sources == {"r1": f"{path}:1", "r2": f"{path}:3"}


def test_jsonl_bad_lines_are_rejected_by_line_and_good_lines_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path / "mixed.jsonl",
        '{"id": "ok1", "text": "fine"}\n'
        "{not json\n"
        '["a", "list"]\n'
        '{"id": "extra", "text": "x", "colour": "red"}\n'
        '{"id": "notext"}\n'
        '{"id": "ok2", "text": "also fine"}\n',
    )
    result = load_paths([path], dict(DEFAULTS))
    assert [d.id for d in result.documents] == ["ok1", "ok2"]
    assert [r.source for r in result.rejected] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert all("\n" not in r.reason for r in result.rejected)
    assert "colour" in result.rejected[2].reason
    assert "text" in result.rejected[3].reason


def test_an_unsupported_suffix_given_explicitly_is_rejected(tmp_path: Path) -> None:
    reason = reject_reason(write(tmp_path / "scan.png", b"\x89PNG\r\n"))
    assert ".png" in reason and ".pdf" in reason  # names the file type and what is supported


def test_a_broken_pdf_is_rejected_as_unreadable(tmp_path: Path) -> None:
    assert "not a readable PDF" in reject_reason(write(tmp_path / "report.pdf", b"%PDF-1.4"))


def test_unsupported_files_inside_a_folder_are_skipped(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "text\n")
    write(tmp_path / "image.png", b"\x89PNG\r\n")
    result = load_paths([tmp_path], dict(DEFAULTS))
    assert [d.id for d in result.documents] == ["a.md"]
    assert result.rejected == []


@pytest.mark.parametrize("name", ["latin1.md", "latin1.txt", "latin1.jsonl"])
def test_a_non_utf8_file_is_rejected_not_raised(tmp_path: Path, name: str) -> None:
    content = ('{"id": "x", "text": "caf\xe9"}\n' if name.endswith(".jsonl") else "Caf\xe9 au lait\n")
    path = write(tmp_path / name, content.encode("latin-1"))
    write(tmp_path / "good.md", "fine\n")
    result = load_paths([path, tmp_path / "good.md"], dict(DEFAULTS))
    assert [d.id for d in result.documents] == ["good.md"]
    assert len(result.rejected) == 1 and result.rejected[0].source.startswith(str(path))
    assert "UTF-8" in result.rejected[0].reason or "utf-8" in result.rejected[0].reason


def test_a_missing_path_is_rejected(tmp_path: Path) -> None:
    assert "no such file" in reject_reason(tmp_path / "nope.md")


@pytest.mark.parametrize(("name", "content"), [
    ("empty.md", ""),
    ("blank.md", " \n\n\t\n"),
    ("front-only.md", "---\ntitle: Nothing here\n---\n"),
    ("empty.txt", ""),
])
def test_a_file_without_text_is_rejected_not_indexed_empty(tmp_path: Path, name: str, content: str) -> None:
    """Like a PDF without a text layer: a document no search can find is refused, not added with
    0 passages."""
    assert reject_reason(write(tmp_path / name, content)) == (
        "no text to index (the file is empty or holds only front matter)")


def test_a_jsonl_record_without_text_is_rejected_by_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", '{"id": "a", "text": "fine"}\n{"id": "b", "text": "  "}\n')
    result = load_paths([path], dict(DEFAULTS))
    assert [d.id for d in result.documents] == ["a"]
    assert [(r.source, r.reason) for r in result.rejected] == [
        (f"{path}:2", "record 'b' has no text to index")]


def test_files_over_the_size_limit_are_rejected_unread_with_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    with big.open("wb") as f:  # sparse: 20 MiB + 1 byte on disk costs nothing to make
        f.truncate(DEFAULT_MAX_FILE_BYTES + 1)
    just = write(tmp_path / "small.md", "x" * 2048 + "\n")
    records = write(tmp_path / "r.jsonl", '{"id": "r", "text": "' + "y" * 3000 + '"}\n')
    result = load_paths([big, just, records], dict(DEFAULTS))
    assert [d.id for d in result.documents] == ["small.md", "r"]
    assert [(r.source, r.reason) for r in result.rejected] == [
        (str(big), "the file is 20,971,521 bytes, larger than the limit of 20 MiB per file")]
    result = load_paths([big, just, records], dict(DEFAULTS), max_bytes=2048)
    assert result.documents == []
    assert [(r.source, r.reason) for r in result.rejected] == [
        (str(big), "the file is 20,971,521 bytes, larger than the limit of 2,048 bytes per file"),
        (str(just), "the file is 2,049 bytes, larger than the limit of 2,048 bytes per file"),
        (str(records), "the file is 3,024 bytes, larger than the limit of 2,048 bytes per file")]


# --------------------------------------------------------------------------------------------
# Splitting: examples
# --------------------------------------------------------------------------------------------

def spans(passages: list[Passage]) -> list[tuple[int, str]]:
    return [(p.number, p.text) for p in passages]


def test_paragraph_numbers_keep_empty_parts_and_skip_whitespace_only_parts() -> None:
    text = "\n\nfirst\n\n\n\nthird\n\n   \n\nfifth\n\n\nsixth"
    # parts: "", "first", "", "third", "   ", "fifth", "\nsixth"
    ps = split_text(text, "paragraph")
    assert spans(ps) == [(2, "first"), (4, "third"), (6, "fifth"), (7, "\nsixth")]
    for p in ps:
        assert text[p.start:p.end] == p.text


def test_editing_one_paragraph_does_not_renumber_the_others() -> None:
    before = split_text("a\n\nb\n\nc", "paragraph")
    after = split_text("a\n\n\n\nc", "paragraph")  # b emptied
    assert spans(before) == [(1, "a"), (2, "b"), (3, "c")]
    assert spans(after) == [(1, "a"), (3, "c")]


def test_document_mode_is_one_trimmed_passage() -> None:
    text = "\n  Whole thing.\n\nSecond para.  \n"
    (p,) = split_text(text, "document")
    assert (p.number, p.text) == (1, "Whole thing.\n\nSecond para.")
    assert text[p.start:p.end] == p.text
    assert split_text(" \n\t\n", "document") == []


def test_heading_mode_paths_and_anchors() -> None:
    text = (
        "Preamble.\n\n# Guide\n\nIntro.\n\n## Install\n\n```sh\n# not a heading\n```\n\n"
        "### Linux\n\nApt.\n\n## Use\n\nRun.\n\n# Guide\n\nAgain.\n"
    )
    ps = split_text(text, "heading")
    got = [(p.heading_path, p.anchor, p.text.splitlines()[0]) for p in ps]
    assert got == [
        ((), None, "Preamble."),
        (("Guide",), "guide", "# Guide"),
        (("Guide", "Install"), "install", "## Install"),
        (("Guide", "Install", "Linux"), "linux", "### Linux"),
        (("Guide", "Use"), "use", "## Use"),
        (("Guide",), "guide-1", "# Guide"),
    ]
    assert "# not a heading" in ps[2].text
    for p in ps:
        assert text[p.start:p.end] == p.text


def test_heading_anchors_are_unique_even_when_a_title_looks_like_a_deduplicated_slug() -> None:
    text = "# A\n\none\n\n# A\n\ntwo\n\n# A-1\n\nthree\n"
    anchors = [p.anchor for p in split_text(text, "heading")]
    assert len(anchors) == 3
    assert len(set(anchors)) == 3, anchors


def test_heading_mode_handles_crlf_and_lone_carriage_returns() -> None:
    crlf = "x\r\n# H\r\nbody\r\n\r\n# I\r\nmore"
    assert [(p.heading_path, p.text) for p in split_text(crlf, "heading")] == [
        ((), "x"), (("H",), "# H\r\nbody"), (("I",), "# I\r\nmore")]
    # A lone "\r" is a line ending for markdown-it; the heading must still start its section
    # (and nothing may crash: these texts arrive through JSONL or the library API).
    for text in ("a\rb\n# H\nbody", "a\rb\rc\n# H\nbody"):
        ps = split_text(text, "heading")
        headed = [p for p in ps if p.heading_path == ("H",)]
        assert len(headed) == 1 and headed[0].text.startswith("# H"), ps


def test_over_long_section_is_divided_at_paragraph_boundaries_keeping_its_path() -> None:
    paras = [f"Paragraph {i} " + "word " * 8 for i in range(6)]
    text = "# Top\n\n## Long\n\n" + "\n\n".join(p.strip() for p in paras) + "\n\n## After\n\nShort.\n"
    ps = split_text(text, "heading", max_section_chars=100)
    long_pieces = [p for p in ps if p.heading_path == ("Top", "Long")]
    assert len(long_pieces) >= 3
    assert {p.anchor for p in long_pieces} == {"long"}
    assert all(len(p.text) <= 100 for p in long_pieces)
    assert long_pieces[0].text.startswith("## Long")
    assert [p.number for p in ps] == list(range(1, len(ps) + 1))
    # With the default maximum the same section is one passage.
    assert len([p for p in split_text(text, "heading") if p.heading_path == ("Top", "Long")]) == 1


def test_a_single_paragraph_longer_than_the_maximum_stays_whole() -> None:
    text = "# H\n\n" + "x" * 300 + "\n\nshort"
    ps = split_text(text, "heading", max_section_chars=50)
    assert ["x" * 300 in p.text for p in ps].count(True) == 1
    # The heading line is no passage of its own: it goes with the paragraph after it.
    assert any(p.text == "# H\n\n" + "x" * 300 for p in ps)


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "100"])
def test_max_section_chars_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(DocumentError):
        split_text("# H\n\ntext", "heading", max_section_chars=bad)  # type: ignore[arg-type]


def test_unknown_split_mode_is_an_error() -> None:
    with pytest.raises(DocumentError):
        split_text("text", "sentence")


# --------------------------------------------------------------------------------------------
# Splitting: properties
# --------------------------------------------------------------------------------------------

WORD_CHARS = "abcxyzÄäöüßéñЖж日本0123456789"
TITLE_POOL = ["Intro", "intro", "A", "a", "A-1", "A 1", "Über uns", "über-uns", "日本", "Plan B2",
              "Section 2", "section-2-1"]

words = st.text(alphabet=WORD_CHARS, min_size=1, max_size=8)
line = st.lists(words, min_size=1, max_size=6).map(" ".join)
title = st.one_of(st.sampled_from(TITLE_POOL), line)


@st.composite
def heading_block(draw: st.DrawFn) -> tuple[str, int, str]:
    level = draw(st.integers(1, 4))
    t = draw(title)
    indent = draw(st.sampled_from(["", " ", "   "]))
    return ("heading", level, f"{indent}{'#' * level} {t}")


def _title_of(block: str) -> str:
    return block.strip().lstrip("#").strip()


paragraph_block = st.lists(line, min_size=1, max_size=3).map(lambda ls: ("para", 0, "\n".join(ls)))
fence_block = st.lists(st.sampled_from(["# not a heading", "## nor this", "", "code()", "#", "x = 1"]),
                       min_size=1, max_size=4).map(
    lambda ls: ("fence", 0, "```\n" + "\n".join(ls) + "\n```"))
separator = st.sampled_from(["\n", "\n\n", "\n\n\n", "\n  \n", "\n\n\n\n"])


@st.composite
def markdown_doc(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, str]]]:
    """Markdown text and, as an oracle, its headings (offset of the heading line, level, title)."""
    blocks = draw(st.lists(st.one_of(heading_block(), paragraph_block, fence_block),
                           min_size=1, max_size=12))
    lead = draw(st.sampled_from(["", "\n", "\n\n"]))
    text, heads = lead, []
    for i, (kind, level, body) in enumerate(blocks):
        if i:
            text += draw(separator)
        if kind == "heading":
            heads.append((len(text), level, _title_of(body)))
        text += body
    text += draw(st.sampled_from(["", "\n", "\n\n"]))
    return text, heads


# Markdown-ish free text: every kind of line ending and whitespace, '#', fences, unicode.
free_text = st.lists(
    st.one_of(st.sampled_from(["\n", "\n\n", "\r\n", "\r", " ", "\t", "#", "# ", "## ", "```\n", "-",
                               "=", "*", "`", "\u00a0", "\u2028", "é", "e\u0301", "日"]),
              st.characters(codec="utf-8", exclude_characters="\x00")),
    max_size=120,
).map("".join)

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_spans(text: str, passages: list[Passage]) -> None:
    prev_end, prev_number = -1, 0
    for p in passages:
        assert 0 <= p.start < p.end <= len(text), p
        assert p.text == text[p.start:p.end], p
        assert p.text.strip(), p  # nothing whitespace-only is indexed
        assert p.start >= prev_end, "passages overlap or are out of order"
        assert p.number > prev_number, "numbers must increase"
        prev_end, prev_number = p.end, p.number


@PROPS
@given(text=st.one_of(free_text, markdown_doc().map(lambda d: d[0])),
       mode=st.sampled_from(["paragraph", "heading", "document"]),
       max_chars=st.integers(1, 400))
@example(text="a\rb\rc\n# H\nbody", mode="heading", max_chars=2000)
def test_every_passage_is_a_verbatim_span_of_the_text(text: str, mode: str, max_chars: int) -> None:
    passages = split_text(text, mode, max_section_chars=max_chars)
    check_spans(text, passages)
    covered = [False] * len(text)
    for p in passages:
        for i in range(p.start, p.end):
            covered[i] = True
    if mode != "paragraph":
        # Heading and document modes lose nothing but whitespace, and heading mode the heading
        # lines of sections without text of their own.
        lines = [(m.start(), m.end()) for m in re.finditer(r"[^\r\n]*", text)]
        underline = re.compile(r"[ \t]*(?:=+|-+)[ \t]*")

        def heading_line(i: int) -> bool:
            for k, (a, b) in enumerate(lines):
                if a <= i <= b:
                    line, nxt = text[a:b], text[lines[k + 1][0]:lines[k + 1][1]] if k + 1 < len(lines) else ""
                    return (line.lstrip().startswith("#") or bool(underline.fullmatch(line))
                            or bool(underline.fullmatch(nxt)) or not nxt)
            return False

        lost = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
        assert not lost or (mode == "heading" and all(heading_line(i) for i in lost)), lost


@PROPS
@given(text=st.one_of(free_text, markdown_doc().map(lambda d: d[0])))
def test_paragraph_numbers_follow_the_blank_line_parts(text: str) -> None:
    expected, pos = [], 0
    for number, part in enumerate(text.split("\n\n"), start=1):
        if part.strip():
            expected.append((number, pos, pos + len(part), part))
        pos += len(part) + 2
    got = [(p.number, p.start, p.end, p.text) for p in split_text(text, "paragraph")]
    assert got == expected


@PROPS
@given(text=free_text)
def test_document_mode_is_the_trimmed_text(text: str) -> None:
    ps = split_text(text, "document")
    assert [p.text for p in ps] == ([text.strip()] if text.strip() else [])


def expected_paths(heads: list[tuple[int, int, str]]) -> list[tuple[int, tuple[str, ...]]]:
    stack: list[tuple[int, str]] = []
    out = []
    for offset, level, t in heads:
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, t))
        out.append((offset, tuple(x for _, x in stack)))
    return out


@PROPS
@given(doc=markdown_doc(), max_chars=st.one_of(st.just(2000), st.integers(1, 120)))
@example(doc=("# A\n\none\n\n# A\n\ntwo\n\n# A-1\n\nthree\n", [(0, 1, "A"), (10, 1, "A"), (20, 1, "A-1")]),
         max_chars=2000)
def test_heading_mode_paths_anchors_and_division(doc: tuple[str, list], max_chars: int) -> None:
    text, heads = doc
    passages = split_text(text, "heading", max_section_chars=max_chars)
    check_spans(text, passages)
    sections = expected_paths(heads)

    def section_of(p: Passage) -> int:
        """Index of the heading the passage belongs to, -1 for text before the first heading."""
        idx = -1
        for i, (offset, _) in enumerate(sections):
            if offset <= p.start:
                idx = i
        return idx

    by_section: dict[int, list[Passage]] = {}
    for p in passages:
        i = section_of(p)
        by_section.setdefault(i, []).append(p)
        assert p.heading_path == (sections[i][1] if i >= 0 else ()), (p, sections)
    # Every heading with text of its own starts a passage, beginning with the heading line; a
    # heading without text is no passage (it lives on in the heading paths below it).
    for i, (offset, _) in enumerate(sections):
        if i not in by_section:
            end = sections[i + 1][0] if i + 1 < len(sections) else len(text)
            assert len(text[offset:end].strip().splitlines()) <= 2, text[offset:end]
            continue
        first = by_section[i][0]
        assert text[offset:first.start].strip() == ""
        assert first.text.lstrip(" ").startswith("#")
    # One anchor per section, shared by its pieces, unique across sections.
    anchors = []
    for i, pieces in by_section.items():
        assert len({p.anchor for p in pieces}) == 1
        if i == -1:
            assert pieces[0].anchor is None
        else:
            anchors.append(pieces[0].anchor)
            assert pieces[0].anchor
    assert len(anchors) == len(set(anchors)), anchors
    # Over-long sections are divided at blank lines only, and only when needed (greedy packing:
    # a piece ends where adding the next paragraph would exceed the maximum).
    blank_line = re.compile(r"\n[ \t]*\n")
    for pieces in by_section.values():
        for a, b in itertools.pairwise(pieces):
            gap = text[a.end:b.start]
            assert gap.strip() == "" and blank_line.search(gap), (a, b)
            m = blank_line.search(b.text)
            first_para_end = b.start + (len(b.text[:m.start()].rstrip()) if m else len(b.text))
            assert first_para_end - a.start > max_chars, f"{a} and the next paragraph fit together"
        for k, p in enumerate(pieces):
            body = p.text
            if k == 0 and p.text.lstrip(" ").startswith("#"):
                # A heading line is never a piece alone: it goes with the paragraph after it.
                m = re.compile(r"\n(?:[ \t]*\n)+").search(body)  # all the blank lines after it
                body = body[m.end():] if m and len(body[:m.start()].splitlines()) == 1 else body
            assert len(body) <= max_chars or not blank_line.search(body), (
                f"a piece of {len(p.text)} > {max_chars} chars still contains a paragraph break")
