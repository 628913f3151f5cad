"""Web sources: listed URLs and sitemaps, fetched with httpx.

Re-fetches are conditional (``If-None-Match`` / ``If-Modified-Since`` from the validators the
server sent last time), so an unchanged page costs one "304 Not Modified". A page that answers
404 or 410 is gone and its document is removed; any other failure (timeouts, 5xx) keeps the
indexed version and is reported, because one bad night of the web server must not empty the
index.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from ..config import WebSource
from ..ingest import FORMATS, load_document
from ..model import DocumentError
from ._items import (
    Content,
    FetchError,
    Gone,
    Item,
    NotModified,
    SourceError,
    check_access_defaults,
    document_defaults,
    glob_match,
)

__all__ = ["web_items"]

_TYPES = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "text/markdown": "markdown",
    "text/x-markdown": "markdown",
    "text/plain": "text",
}
_MAX_SITEMAPS = 100
_MAX_URLS = 50_000  # the sitemap protocol's own limit per file
USER_AGENT = "evidex-sync/0.1"


def _client(source: WebSource) -> httpx.Client:
    return httpx.Client(timeout=source.timeout_seconds, follow_redirects=True,
                        headers={"User-Agent": USER_AGENT})


def _get(client: httpx.Client, url: str, max_bytes: int,
         headers: dict[str, str] | None = None) -> tuple[httpx.Response, bytes]:
    with client.stream("GET", url, headers=headers) as resp:
        body = bytearray()
        if resp.status_code == 200:
            for chunk in resp.iter_bytes():
                body.extend(chunk)
                if len(body) > max_bytes:
                    raise DocumentError(f"{url} is larger than max_bytes ({max_bytes})")
        return resp, bytes(body)


def _gunzip(body: bytes, max_bytes: int, url: str) -> bytes:
    """A gzip sitemap inflated to at most ``max_bytes`` (a small file may inflate to gigabytes:
    it is refused once past the bound, never inflated whole)."""
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflate.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise SourceError(f"the sitemap {url} is not readable gzip: {exc}") from None
    if len(out) > max_bytes or inflate.unconsumed_tail:
        raise SourceError(f"the sitemap {url} inflates to more than max_bytes ({max_bytes})")
    return out


def _sitemap_urls(client: httpx.Client, url: str, max_bytes: int) -> list[str]:
    """Page URLs of a sitemap or a sitemap index (followed to its sitemaps), in file order."""
    todo, seen_maps, out = [url], set(), []
    while todo:
        sm = todo.pop(0)
        if sm in seen_maps:
            continue
        seen_maps.add(sm)
        if len(seen_maps) > _MAX_SITEMAPS:
            raise SourceError(f"more than {_MAX_SITEMAPS} sitemaps below {url}")
        try:
            resp, body = _get(client, sm, max_bytes)
        except (httpx.HTTPError, DocumentError) as exc:
            raise SourceError(f"cannot fetch the sitemap {sm}: {exc}") from None
        if resp.status_code != 200:
            raise SourceError(f"cannot fetch the sitemap {sm}: HTTP {resp.status_code}")
        if body[:2] == b"\x1f\x8b":
            body = _gunzip(body, max_bytes, sm)
        try:
            root = ET.fromstring(body)
        except ET.ParseError as exc:
            raise SourceError(f"the sitemap {sm} is not XML: {exc}") from None
        locs = [(el.text or "").strip() for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "loc"]
        if root.tag.rsplit("}", 1)[-1] == "sitemapindex":
            todo.extend(loc for loc in locs if loc)
        else:
            out.extend(loc for loc in locs if loc)
        if len(out) > _MAX_URLS:
            raise SourceError(f"the sitemap {url} lists more than {_MAX_URLS} URLs")
    return out


def _format(resp: httpx.Response, url: str) -> str | None:
    ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype in _TYPES:
        return _TYPES[ctype]
    path = urlsplit(str(resp.url)).path.lower()
    suffix = path[path.rfind("."):] if "." in path.rsplit("/", 1)[-1] else ""
    fmt = FORMATS.get(suffix)
    return fmt if fmt != "records" else None


def _validators(resp: httpx.Response) -> str:
    etag, modified = resp.headers.get("etag"), resp.headers.get("last-modified")
    if etag:
        return "etag:" + etag
    if modified:
        return "modified:" + modified
    return ""


def web_items(source: WebSource, client_factory: Callable[[WebSource], httpx.Client] = _client
              ) -> tuple[list[Item], Callable[[], None]]:
    """Items of a web source and a function that closes the HTTP client when sync is done."""
    check_access_defaults(source)
    client = client_factory(source)
    try:
        urls = list(dict.fromkeys([*source.pages(), *(
            _sitemap_urls(client, source.sitemap, source.max_bytes) if source.sitemap else [])]))
    except BaseException:
        client.close()
        raise
    inc, exc = glob_match(source.include), glob_match(source.exclude)
    urls = [u for u in urls if inc(urlsplit(u).path or "/") and not exc(urlsplit(u).path or "/")]
    defaults = document_defaults(source)

    def reader(url: str) -> Callable[[str | None], Content | NotModified | Gone]:
        def read(previous: str | None) -> Content | NotModified | Gone:
            headers = {}
            if previous and previous.startswith("etag:"):
                headers["If-None-Match"] = previous[5:]
            elif previous and previous.startswith("modified:"):
                headers["If-Modified-Since"] = previous[9:]
            try:
                resp, body = _get(client, url, source.max_bytes, headers)
            except httpx.HTTPError as exc:
                raise FetchError(f"cannot fetch {url}: {type(exc).__name__}: {exc}") from None
            if resp.status_code == 304 and previous:
                return NotModified()
            if resp.status_code in (404, 410):
                return Gone()
            if resp.status_code != 200:
                raise FetchError(f"cannot fetch {url}: HTTP {resp.status_code}")
            fmt = _format(resp, url)
            if fmt is None:
                raise DocumentError(f"unsupported content type "
                                    f"{resp.headers.get('content-type') or '(none)'}")
            doc = load_document(body, fmt, defaults, doc_id=f"{source.id}/{url}",
                                source_url=str(resp.url), name=url, charset=resp.charset_encoding)
            return Content([doc], _validators(resp))
        return read

    return [Item(u, reader(u)) for u in urls], client.close
