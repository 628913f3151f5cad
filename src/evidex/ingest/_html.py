"""HTML pages (selectolax/lexbor): the main content, without navigation, as sections.

A help-centre page is mostly chrome: menus, breadcrumbs, cookie banners, footers. Indexing
that chrome makes every page match every menu word, so the loader keeps the page's main
content (``<main>``, ``<article>`` or ``role=main``; the body without page-level header, footer
and asides otherwise), drops navigation and anything the reader cannot see (hidden elements
are also where injected instructions hide), and turns headings into sections whose anchors are
the headings' own ``id`` attributes, so page URL + ``#`` + anchor opens the cited place.
"""

from __future__ import annotations

import contextlib
import re

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ..model import DocumentError
from ._limits import ELEMENTS, tick
from ._structure import Extracted, TextBuilder, collapse

__all__ = ["extract_html"]

_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_DROP = {"script", "style", "noscript", "template", "nav", "form", "button", "svg", "iframe",
         "canvas", "select", "input", "textarea", "dialog", "menu", "object", "head", "img",
         "video", "audio", "picture", "map"}
#: Page-level chrome: dropped when the page has no marked main content and the body is used.
_CHROME = {"header", "footer", "aside"}
_CHROME_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary", "menu",
                 "menubar", "dialog", "alert"}
_CHROME_CLASSES = {"breadcrumb", "breadcrumbs", "cookie", "cookie-banner", "skip-link",
                   "sidebar", "site-nav", "visually-hidden", "sr-only"}
_BLOCKS = {"p", "div", "section", "article", "main", "blockquote", "figure", "figcaption",
           "address", "details", "summary", "dl", "dt", "dd", "header", "footer", "aside",
           "center", "hr", "body", "html", "fieldset", "caption"}
_SPACED = _BLOCKS | {"li", "td", "th", "tr", "p"}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_MAX_LIST_DEPTH = 8
#: Elements nested deeper than this are refused, not read: the walk below recurses per level,
#: and no real page comes near it (Blink flattens its DOM past 512 levels, libxml2 refuses XML
#: past 256 unless told otherwise, as the Word loader does).
MAX_NESTING = 256


def collapse_ws(text: str) -> str:
    """Source line breaks in running HTML text are spaces; only <br> breaks a line."""
    return re.sub(r"\s+", " ", text)


def _children(node: LexborNode) -> list[LexborNode]:
    out = []
    c = node.child
    while c is not None:
        out.append(c)
        c = c.next
    return out


#: Elements that only their own end tag closes. The parser checks its stack of open elements
#: at every start tag, so thousands of them nested take it time quadratic in their number
#: (100,000 nested divs: minutes): a page opening many more than ``MAX_NESTING`` of them
#: without closing them is refused before it is parsed.
_NESTS = re.compile(r"<(/?)(?:div|section|article|main|aside|header|footer|nav|span|ul|ol|"
                    r"blockquote|table|dl|fieldset|details|figure)[\s/>]", re.IGNORECASE)


_START_TAG = re.compile(r"<[A-Za-z]")


def _check_elements(source: str) -> None:
    """Refuse a page of more start tags than ``EVIDEX_MAX_ELEMENTS`` (counted, stopping at the
    bound, before the page is parsed into a tree and walked)."""
    most = ELEMENTS.value()
    if source.count("<") <= most:
        return
    for n, _ in enumerate(_START_TAG.finditer(source), start=1):
        if n > most:
            raise ELEMENTS.refuse(f"the page holds more than {most:,} elements")


def _unclosed(source: str) -> int:
    """The deepest the elements of ``_NESTS`` open in ``source``, counting tags as written."""
    depth = deepest = 0
    for m in _NESTS.finditer(source):
        depth = max(0, depth - 1) if m.group(1) else depth + 1
        deepest = max(deepest, depth)
    return deepest


def _nesting(root: LexborNode) -> int:
    """How deep elements nest below ``root``, found without recursion (stopping once past
    ``MAX_NESTING``)."""
    deepest, stack = 0, [(root, 0)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            break
        c = node.child
        while c is not None:
            if c.is_element_node:
                stack.append((c, depth + 1))
            c = c.next
    return deepest


def _hidden(node: LexborNode, body_root: bool) -> bool:
    tag = node.tag or ""
    if tag in _DROP or (body_root and tag in _CHROME):
        return True
    attrs = node.attributes
    if "hidden" in attrs or (attrs.get("aria-hidden") or "").lower() == "true":
        return True
    if (attrs.get("role") or "").lower() in _CHROME_ROLES:
        return True
    if _HIDDEN_STYLE.search(attrs.get("style") or ""):
        return True
    classes = set((attrs.get("class") or "").lower().split())
    return bool(classes & _CHROME_CLASSES)


class _Walker:
    def __init__(self, body_root: bool) -> None:
        self.body_root = body_root
        self.out = TextBuilder()
        self.buf: list[str] = []

    def flush(self) -> None:
        text = "".join(self.buf)
        self.buf = []
        if text.strip():
            self.out.block(text)

    def inline(self, node: LexborNode, skip: frozenset[str] = frozenset()) -> str:
        parts: list[str] = []
        for c in _children(node):
            if c.tag == "-text":
                parts.append(c.text_content or "")
            elif c.tag == "br":
                parts.append(" ")
            elif c.is_element_node and c.tag not in skip and not _hidden(c, self.body_root):
                text = self.inline(c, skip)
                parts.append(f" {text} " if c.tag in _SPACED else text)
        return "".join(parts)

    def walk(self, node: LexborNode) -> None:
        tick()
        for c in _children(node):
            tag = c.tag or ""
            if tag == "-text":
                self.buf.append(collapse_ws(c.text_content or ""))
            elif not c.is_element_node or _hidden(c, self.body_root):
                continue
            elif tag in _HEADINGS:
                self.flush()
                self.out.heading(_HEADINGS[tag], self.inline(c), _anchor(c))
            elif tag == "br":
                self.buf.append("\n")
            elif tag == "pre":
                self.flush()
                self.out.block(c.text(deep=True) or "", preformatted=True)
            elif tag in ("ul", "ol"):
                self.flush()
                lines: list[str] = []
                self.list_lines(c, 0, lines)
                self.out.block("\n".join(lines))
            elif tag == "table":
                self.flush()
                self.out.table(self.rows(c))
            elif tag in _BLOCKS or tag == "li":
                self.flush()
                self.walk(c)
                self.flush()
            else:
                self.walk_inline(c)

    def walk_inline(self, node: LexborNode) -> None:
        """An inline element may still contain blocks (a link around a heading); those are
        walked as blocks, the rest is running text."""
        if node.css_first(",".join([*_HEADINGS, "p", "div", "table", "ul", "ol", "pre"])) is None:
            self.buf.append(collapse_ws(self.inline(node)))
        else:
            self.walk(node)

    def list_lines(self, node: LexborNode, depth: int, lines: list[str]) -> None:
        for li in _children(node):
            if li.tag != "li" or _hidden(li, self.body_root):
                continue
            text = collapse(self.inline(li, frozenset({"ul", "ol"})))
            if text:
                lines.append("  " * depth + "- " + text)
            for sub in li.css("ul, ol"):
                if sub.parent is not None and sub.parent.mem_id == li.mem_id and depth < _MAX_LIST_DEPTH:
                    self.list_lines(sub, depth + 1, lines)

    def rows(self, table: LexborNode) -> list[list[str]]:
        """Rows of this table (not of tables nested in its cells), header row first."""
        rows: list[tuple[bool, list[str]]] = []
        for tr in table.css("tr"):
            owner = tr.parent
            while owner is not None and owner.tag != "table":
                owner = owner.parent
            if owner is None or owner.mem_id != table.mem_id or _hidden(tr, self.body_root):
                continue
            cells = [c for c in _children(tr) if c.tag in ("td", "th")]
            in_head = tr.parent is not None and tr.parent.tag == "thead"
            rows.append((in_head or all(c.tag == "th" for c in cells),
                         [collapse(self.inline(c)) for c in cells]))
        first_head = next((i for i, (is_head, _) in enumerate(rows) if is_head), 0)
        return [r for i, (_, r) in enumerate(rows) if i == first_head] + [
            r for i, (_, r) in enumerate(rows) if i != first_head]


def _anchor(heading: LexborNode) -> str | None:
    """The id a browser can scroll to: the heading's own, one inside it, or that of the
    section the heading opens."""
    own = heading.attributes.get("id")
    if own:
        return own
    inner = heading.css_first("[id], a[name]")
    if inner is not None:
        return inner.attributes.get("id") or inner.attributes.get("name")
    parent = heading.parent
    if parent is not None and parent.tag in ("section", "article", "div") and parent.attributes.get("id"):
        first = next((c for c in _children(parent) if c.is_element_node), None)
        if first is not None and first.mem_id == heading.mem_id:
            return parent.attributes.get("id")
    return None


def extract_html(data: bytes | str, charset: str | None = None) -> Extracted:
    """``charset``: what the HTTP Content-Type header declared, which beats the page's own
    ``<meta charset>``; without it the encoding is detected as the HTML Standard says (BOM,
    then meta declaration, else UTF-8)."""
    if isinstance(data, bytes) and charset:
        with contextlib.suppress(LookupError):  # an unknown label: detect like a browser does
            data = data.decode(charset, "replace")
    source = data if isinstance(data, str) else data.decode("latin-1")  # tags are ASCII
    _check_elements(source)
    if _unclosed(source) > 4 * MAX_NESTING:
        raise DocumentError(f"the page nests elements more than {MAX_NESTING} levels deep; not read")
    tree = (LexborHTMLParser(data) if isinstance(data, str)
            else LexborHTMLParser(data, encoding=True))
    root = (tree.css_first("main") or tree.css_first("[role=main]") or tree.css_first("article"))
    body_root = root is None
    if root is None:
        root = tree.body or tree.root
    if root is None:
        raise DocumentError("no HTML content")
    if _nesting(root) > MAX_NESTING:
        raise DocumentError(f"the page nests elements more than {MAX_NESTING} levels deep; not read")
    w = _Walker(body_root)
    w.walk(root)
    w.flush()
    title_node = tree.css_first("title")
    title = collapse(title_node.text()) if title_node is not None else ""
    if not title:
        h1 = root.css_first("h1")
        title = collapse(h1.text()) if h1 is not None else ""
    html = tree.css_first("html")
    lang = (html.attributes.get("lang") or "").strip() if html is not None else ""
    lang = "-".join([lang.split("-")[0].lower(), *lang.split("-")[1:]]) if lang else ""
    out = w.out.build(title or None, lang or None)
    if not out.text.strip():
        raise DocumentError("no text content in the page's main content")
    return out
