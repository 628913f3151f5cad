"""The one document builder of the tests: ``doc("a", "text")`` is a valid ``Document`` of tenant
``t``, group ``g``, version ``1``; any field is a keyword. A test file whose documents share
other defaults says so once, ``doc = partial(documents.doc, tenant="acme", groups={"staff"})``,
rather than writing a builder of its own. Every value is handed to ``Document`` unchanged, so a
test of ``Document``'s own checks (a set of no groups, a bad language tag) builds through it too.
"""

from __future__ import annotations

import random
from typing import Any

from evidex import Document

#: Two paragraphs: two passages under the default split.
TEXT = "alpha beta\n\ngamma delta"


def doc(id: Any = "d1", text: Any = TEXT, version: Any = "1", *, tenant: Any = "t",
        groups: Any = frozenset({"g"}), **fields: Any) -> Document:
    """``Document(id, tenant, groups, version, text, **fields)`` with the tests' defaults."""
    return Document(id, tenant, groups, version, text, **fields)


#: Fields the dialects store differently (bound parameters and per-key lookups in SQLite, binary
#: COPY, ``= ANY`` arrays and ``unnest`` in PostgreSQL): non-ASCII and astral text, quotes,
#: commas, backslashes, tabs, ids whose order depends on case and collation.
ODD_IDS = ("B", "a", "Ä", "a_b", "a-b", "Z9", "z10", "ß", "é")
ODD_GROUPS = frozenset({"g", "Ärzte, \"Leitung\"", "a\\b"})


def odd_document(i: int, doc_id: str, version: str = "1") -> Document:
    return Document(doc_id, "t", ODD_GROUPS, version,
                    f"# Überblick {i}\n\nalpha 🙂 {doc_id} \\n\ttab 'quote' \"dq\" {i % 7}\n\n"
                    f"## Teil {i}\n\nbeta gamma {i % 3} 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
                    title=None if i % 2 else f"Titel {i} ✓", source_url=f"https://x.test/{i}?a=1&b='2'",
                    language=("de", "en", None)[i % 3], visibility=("internal", "public")[i % 2],
                    tags=("t1", "Tag, zwei") if i % 4 == 0 else ())


def random_docs(rng: random.Random, n: int, groups: tuple[str, ...]) -> list[Document]:
    words = [f"w{i}" for i in range(300)]
    out = []
    for i in range(n):
        g = groups[i % len(groups)]
        text = "\n\n".join(" ".join(rng.choice(words) for _ in range(5)) for _ in range(3))
        out.append(Document(f"{g}{i:05d}", "t", frozenset({g}), "1", text))
    return out
