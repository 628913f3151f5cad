"""What test actors may read. ``Actor`` defaults to public documents only (least privilege),
while ``Document`` defaults to ``internal``; a test over internal documents says so with this."""

from __future__ import annotations

PUBLIC_INTERNAL = frozenset({"public", "internal"})
