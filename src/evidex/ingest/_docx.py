"""Word documents (python-docx): heading styles become sections, tables keep their header row.

The body is read in document order (``iter_inner_content`` interleaves paragraphs and tables).
A paragraph styled "Heading N" opens a section at level N; "Title" names the document. List
paragraphs ("List Bullet", "List Number", ...) are kept together as one block, one item a line.

python-docx inflates every part of the package and parses every XML part into a tree before
anything is read (about 230 bytes of memory per element). So a package is checked first,
without building anything: what its parts unpack to (as their zip entries declare, which
zipfile then holds them to), how many parts it has, and, streaming through each XML part, how
many paragraphs, runs and table cells it holds (``EVIDEX_MAX_ELEMENTS``) and how many XML
elements in all (ten times that): a 321 KB file of 2 million paragraphs is refused after
reading the first few hundred thousand elements, in well under a second.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib

from docx import Document as open_docx
from docx.document import Document as DocxDocument
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from ..model import DocumentError, EvidexError
from ._limits import ELEMENTS, UNPACKED_MB, tick
from ._structure import Extracted, TextBuilder, collapse

__all__ = ["extract_docx"]

_HEADING = re.compile(r"^heading\s+([1-9])$", re.IGNORECASE)
#: More parts than any real document has (a zip bomb costs its central directory).
MAX_PARTS = 5_000
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
#: What ``EVIDEX_MAX_ELEMENTS`` counts in a Word file.
_COUNTED = frozenset({_W + "p", _W + "r", _W + "tc"})
#: All XML elements of a package may be this many times ``EVIDEX_MAX_ELEMENTS``, plus what
#: the styles, numbering and theme parts of any document hold (Word's own template: 19,000).
_ALL_ELEMENTS = 10
_PACKAGE_ELEMENTS = 50_000


def _check_package(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
            if len(infos) > MAX_PARTS:
                raise DocumentError(f"the Word file has {len(infos)} parts, more than {MAX_PARTS}; not read")
            unpacked, most = sum(i.file_size for i in infos), UNPACKED_MB.value()
            if unpacked > most * 2**20:
                raise UNPACKED_MB.refuse(f"the Word file would unpack to {unpacked // 2**20:,} MiB, more "
                                         f"than {most:,} MiB")
            _count_elements(z, [i for i in infos if i.filename.lower().endswith((".xml", ".rels"))])
    except EvidexError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, zlib.error) as exc:
        raise DocumentError(f"not a readable Word (.docx) file: {exc}".splitlines()[0]) from None


def _count_elements(z: zipfile.ZipFile, parts: list[zipfile.ZipInfo]) -> None:
    """Stream through the XML parts, counting, keeping nothing (each element is cleared once
    read); refuse at the first bound passed."""
    most = ELEMENTS.value()
    every_most = _ALL_ELEMENTS * most + _PACKAGE_ELEMENTS
    counted = every = 0
    for info in parts:
        with z.open(info) as stream:
            try:
                for _, el in etree.iterparse(stream, events=("end",), resolve_entities=False,
                                             no_network=True, huge_tree=False, remove_comments=True):
                    every += 1
                    counted += el.tag in _COUNTED
                    if counted > most:
                        raise ELEMENTS.refuse(f"the Word file holds more than {most:,} paragraphs, runs "
                                              "and table cells")
                    if every > every_most:
                        raise ELEMENTS.refuse(f"the Word file holds more than {every_most:,} XML elements "
                                              f"({_ALL_ELEMENTS} per paragraph, run or cell allowed, and "
                                              f"{_PACKAGE_ELEMENTS:,} for styles)")
                    el.clear()
                    while el.getprevious() is not None:
                        del el.getparent()[0]
                    if every % 4096 == 0:
                        tick()
            except etree.XMLSyntaxError as exc:
                raise DocumentError(f"not a readable Word (.docx) file: {info.filename}: "
                                    f"{exc}".splitlines()[0]) from None


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
        tick()
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
