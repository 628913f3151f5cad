"""The one document builder of the tests: ``doc("a", "text")`` is a valid ``Document`` of tenant
``t``, group ``g``, version ``1``; any field is a keyword. A test file whose documents share
other defaults says so once, ``doc = partial(documents.doc, tenant="acme", groups={"staff"})``,
rather than writing a builder of its own. Every value is handed to ``Document`` unchanged, so a
test of ``Document``'s own checks (a set of no groups, a bad language tag) builds through it too.
"""

from __future__ import annotations

from typing import Any

from evidex import Document

#: Two paragraphs: two passages under the default split.
TEXT = "alpha beta\n\ngamma delta"


def doc(id: Any = "d1", text: Any = TEXT, version: Any = "1", *, tenant: Any = "t",
        groups: Any = frozenset({"g"}), **fields: Any) -> Document:
    """``Document(id, tenant, groups, version, text, **fields)`` with the tests' defaults."""
    return Document(id, tenant, groups, version, text, **fields)
