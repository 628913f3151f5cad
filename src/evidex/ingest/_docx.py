"""Word documents (python-docx): heading styles become sections, tables keep their header row.

The body is read in document order (``iter_inner_content`` interleaves paragraphs and tables).
A paragraph styled "Heading N" opens a section at level N; "Title" names the document. List
paragraphs ("List Bullet", "List Number", ...) are kept together as one block, one item a line.
"""

from __future__ import annotations

import io
import re
import zipfile

from docx import Document as open_docx
from docx.document import Document as DocxDocument
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from ..model import DocumentError
from ._structure import Extracted, TextBuilder, collapse

__all__ = ["extract_docx"]

_HEADING = re.compile(r"^heading\s+([1-9])$", re.IGNORECASE)
#: python-docx inflates every part of the package into memory before anything is read, so a
#: package is refused first when its parts (as their zip entries declare, which zipfile then
#: holds them to) would unpack to more than this, or when it has more parts than any real
#: document: a zip bomb costs its central directory, never its inflated size.
MAX_UNPACKED_BYTES = 128 * 1024 * 1024
MAX_PARTS = 5_000


def _check_package(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise DocumentError(f"not a readable Word (.docx) file: {exc}".splitlines()[0]) from None
    if len(infos) > MAX_PARTS:
        raise DocumentError(f"the Word file has {len(infos)} parts, more than {MAX_PARTS}; not read")
    unpacked = sum(i.file_size for i in infos)
    if unpacked > MAX_UNPACKED_BYTES:
        raise DocumentError(f"the Word file would unpack to {unpacked // 2**20} MiB, more than "
                            f"{MAX_UNPACKED_BYTES // 2**20} MiB; not read")


def _rows(table: Table) -> list[list[str]]:
    """Cell texts per row; a merged cell (python-docx repeats it for every grid column it
    spans) is read once."""
    out = []
    for row in table.rows:
        cells, seen = [], set()
        for cell in row.cells:
            if id(cell._tc) in seen:
                continue
            seen.add(id(cell._tc))
            cells.append(collapse(cell.text))
        out.append(cells)
    return out


def extract_docx(data: bytes) -> Extracted:
    _check_package(data)
    try:
        return _extract(open_docx(io.BytesIO(data)))
    except DocumentError:
        raise
    # lxml refuses what it must (entity expansion, nesting past 256 levels, huge text nodes);
    # a damaged package fails in zipfile, zlib or python-docx in many ways: all mean unreadable.
    except (PackageNotFoundError, zipfile.BadZipFile, etree.LxmlError) as exc:
        raise DocumentError(f"not a readable Word (.docx) file: {exc}".splitlines()[0]) from None
    except Exception as exc:
        raise DocumentError(f"not a readable Word (.docx) file: {type(exc).__name__}: "
                            f"{exc}".splitlines()[0]) from None


def _extract(doc: DocxDocument) -> Extracted:
    out = TextBuilder()
    title: str | None = collapse(doc.core_properties.title or "") or None
    items: list[str] = []

    def flush_list() -> None:
        if items:
            out.block("\n".join(items))
            items.clear()

    for part in doc.iter_inner_content():
        if isinstance(part, Table):
            flush_list()
            out.table(_rows(part))
            continue
        assert isinstance(part, Paragraph)
        style = (part.style.name if part.style is not None else "") or ""
        text = part.text
        if not text.strip():
            continue
        m = _HEADING.match(style)
        if m:
            flush_list()
            out.heading(int(m.group(1)), text)
        elif style.lower() == "title":
            flush_list()
            title = title or collapse(text)
            out.block(text)
        elif style.lower().startswith("list"):
            level = int(style[-1]) - 1 if style[-1].isdigit() else 0
            items.append("  " * level + "- " + collapse(text))
        else:
            flush_list()
            out.block(text.replace("\v", "\n"))
    flush_list()
    lang = None
    if doc.core_properties.language:
        lang = doc.core_properties.language.strip().split("-")[0].lower() or None
    result = out.build(title, lang)
    if not result.text.strip():
        raise DocumentError("no text in the Word document")
    return result
