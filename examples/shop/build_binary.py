"""Build the PDF and Word files of the example shop collection from their source text.

The sources are `binary-src/*.yaml`: `output` (path below examples/shop), `title`, `language`,
`subject` and `body`, a small markup: `#`/`##`/`###` headings, `- ` bullet items, `1. `
numbered items, `| a | b |` table rows (the first row is the header), `===page===` (a page
break in PDFs, ignored in Word files) and paragraphs separated by blank lines.

The generated files are committed, so nothing is built at run time; run this script after
editing a source:

    .venv/bin/python examples/shop/build_binary.py

PDFs get a real text layer (fpdf2 embeds the font with a ToUnicode map) and an outline whose
bookmarks are the headings, so pypdf reads both the text and the heading path of each page.
The output is byte-for-byte reproducible: fixed creation dates, fixed zip timestamps.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import sys
import zipfile
from pathlib import Path

import yaml
from docx import Document
from docx.shared import Pt
from fpdf import FPDF
from fpdf.enums import XPos, YPos

HERE = Path(__file__).resolve().parent
FIXED = dt.datetime(2026, 1, 2, 9, 0, 0, tzinfo=dt.UTC)
FONT_DIRS = ["/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu",
             "/usr/local/share/fonts", "/Library/Fonts"]
_NUMBERED = re.compile(r"^\d+\.\s+")


def parse(body: str) -> list[tuple]:
    """Blocks of the mini markup: ("h", level, text), ("p", text), ("ul", items),
    ("ol", items), ("table", rows), ("page",)."""
    blocks: list[tuple] = []
    for chunk in re.split(r"\n\s*\n", body.strip()):
        lines = [ln.rstrip() for ln in chunk.strip().split("\n") if ln.strip()]
        if not lines:
            continue
        first = lines[0]
        if first == "===page===":
            blocks.append(("page",))
        elif first.startswith("#"):
            level = len(first) - len(first.lstrip("#"))
            blocks.append(("h", level, first[level:].strip()))
            if lines[1:]:
                blocks.append(("p", " ".join(lines[1:])))
        elif first.startswith("- "):
            blocks.append(("ul", [ln[2:].strip() for ln in lines]))
        elif _NUMBERED.match(first):
            blocks.append(("ol", [_NUMBERED.sub("", ln) for ln in lines]))
        elif first.startswith("|"):
            blocks.append(("table", [[c.strip() for c in ln.strip().strip("|").split("|")]
                                     for ln in lines]))
        else:
            blocks.append(("p", " ".join(lines)))
    return blocks


def _font_files() -> tuple[Path, Path] | None:
    for d in FONT_DIRS:
        regular, bold = Path(d) / "DejaVuSans.ttf", Path(d) / "DejaVuSans-Bold.ttf"
        if regular.exists() and bold.exists():
            return regular, bold
    return None


_ASCII = {"€": "EUR", "°": " deg", "×": "x", "–": "-", "—": "-", "›": ">", "★": "*", "☆": "-",
          "“": '"', "”": '"', "„": '"', "’": "'"}


def build_pdf(src: dict, blocks: list[tuple]) -> bytes:
    fonts = _font_files()
    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED)
    pdf.set_title(src["title"])
    pdf.set_author("Acme Outdoor GmbH")
    pdf.set_subject(src.get("subject", ""))
    pdf.set_lang(src["language"])
    pdf.set_margins(20, 20, 20)
    pdf.set_auto_page_break(True, 20)
    if fonts:
        pdf.add_font("DejaVu", "", str(fonts[0]))
        pdf.add_font("DejaVu", "B", str(fonts[1]))
        family, bullet = "DejaVu", "•"

        def text(s: str) -> str:
            return s
    else:  # core fonts are Latin-1 only: keep the PDF readable without a Unicode font
        family, bullet = "Helvetica", "-"

        def text(s: str) -> str:
            for k, v in _ASCII.items():
                s = s.replace(k, v)
            return s.encode("latin-1", "replace").decode("latin-1")
    pdf.add_page()
    for block in blocks:
        kind = block[0]
        if kind == "page":
            pdf.add_page()
        elif kind == "h":
            level, title = block[1], text(block[2])
            pdf.start_section(title, level=level - 1)
            pdf.set_font(family, "B", {1: 17, 2: 13}.get(level, 11))
            pdf.ln(2 if level > 1 else 0)
            pdf.multi_cell(0, 8, title, align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(1)
        elif kind == "p":
            pdf.set_font(family, "", 10.5)
            pdf.multi_cell(0, 5.5, text(block[1]), align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            pdf.ln(3)
        elif kind in ("ul", "ol"):
            pdf.set_font(family, "", 10.5)
            for i, item in enumerate(block[1], start=1):
                mark = f"{i}." if kind == "ol" else bullet
                pdf.multi_cell(0, 5.5, f"{mark} {text(item)}", align="L", new_x=XPos.LMARGIN,
                               new_y=YPos.NEXT)
            pdf.ln(3)
        elif kind == "table":
            pdf.set_font(family, "", 10)
            with pdf.table(line_height=6, text_align="LEFT") as table:
                for row in block[1]:
                    r = table.row()
                    for cell in row:
                        r.cell(text(cell))
            pdf.ln(4)
    return bytes(pdf.output())


def build_docx(src: dict, blocks: list[tuple]) -> bytes:
    doc = Document()
    doc.styles["Normal"].font.size = Pt(11)
    props = doc.core_properties
    props.title = src["title"]
    props.language = src["language"]
    props.author = "Acme Outdoor GmbH"
    props.subject = src.get("subject", "")
    props.created = props.modified = props.last_printed = FIXED.replace(tzinfo=None)
    props.revision = 1
    for block in blocks:
        kind = block[0]
        if kind == "h":
            doc.add_heading(block[2], level=block[1])
        elif kind == "p":
            doc.add_paragraph(block[1])
        elif kind in ("ul", "ol"):
            style = "List Bullet" if kind == "ul" else "List Number"
            for item in block[1]:
                doc.add_paragraph(item, style=style)
        elif kind == "table":
            rows = block[1]
            table = doc.add_table(rows=len(rows), cols=len(rows[0]))
            table.style = "Table Grid"
            for i, row in enumerate(rows):
                for j, cell in enumerate(row):
                    table.cell(i, j).text = cell
                    if i == 0:
                        for run in table.cell(i, j).paragraphs[0].runs:
                            run.bold = True
    raw = io.BytesIO()
    doc.save(raw)
    return _stable_zip(raw.getvalue())


def _stable_zip(data: bytes) -> bytes:
    """The same archive with fixed entry timestamps, so a rebuild gives identical bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, \
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 2, 9, 0, 0))
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            zout.writestr(fixed, zin.read(info.filename))
    return out.getvalue()


def main() -> int:
    sources = sorted((HERE / "binary-src").glob("*.yaml"))
    if not sources:
        print("no sources in binary-src/", file=sys.stderr)
        return 1
    if _font_files() is None:
        print("warning: no DejaVu font found; PDFs are written with core fonts (ASCII-safe)",
              file=sys.stderr)
    for path in sources:
        src = yaml.safe_load(path.read_text(encoding="utf-8"))
        blocks = parse(src["body"])
        out = HERE / src["output"]
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.suffix == ".pdf":
            data = build_pdf(src, blocks)
        elif out.suffix == ".docx":
            data = build_docx(src, blocks)
        else:
            print(f"{path.name}: unsupported output {out.suffix}", file=sys.stderr)
            return 1
        out.write_bytes(data)
        print(f"{out.relative_to(HERE)}  ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
