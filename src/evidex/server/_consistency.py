"""Read your writes through the service, and which server answered.

Every request gets a read session (``store.ReadSession``) of its caller, the API key (or token
subject) the guard authenticated, in its ASGI scope (``scope["state"]["reads"]``); routes take
it as the ``_deps.Reads`` dependency and hand it to every store call they make. Its reads
include what that caller wrote in the last few seconds (``store.RecentWrites``, shared by the
worker processes through a small file), so an admin key that synced or deleted a document reads
the change back on its next request, whichever replica or worker serves it. The response says
which server answered its last read (``X-Evidex-Server``), the generation a write committed
(``X-Evidex-Written-Generation``), and the newest of the caller's own recent writes that the
read included (``X-Evidex-Generation``). The store's generation counts every tenant's writes on
a server the tenants share, so its current value is never shown: another tenant would watch it
move with each write of theirs (issue 45, finding 6). A caller only ever sees generations of
its own writes, which it was told when it wrote them. A server is named by its role and a short
digest of its address (``/v1/health`` maps digests to servers for admins): the addresses of the
database servers are not for every caller.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..store import ReadSession, RecentWrites
from ._identity import Principal

__all__ = ["ReadYourWrites", "server_id"]


def server_id(name: str) -> str:
    """``role digest`` of a server name (``primary host:port/db``): what a response shows."""
    role, _, where = name.partition(" ")
    if not where:
        role, where = "store", name
    return f"{role} {hashlib.sha256(where.encode('utf-8')).hexdigest()[:8]}"


class ReadYourWrites:
    """ASGI middleware (inside ``Guard``, which authenticates first); see the module docstring."""

    def __init__(self, app: Any, memory: RecentWrites) -> None:
        self.app = app
        self.memory = memory

    def _own_write(self, session: ReadSession) -> int | None:
        """The newest generation the session's caller wrote, in this request or in the last
        few seconds (None: no write of its own to speak of)."""
        found = list(session.written.values())
        if session.caller:
            remembered = self.memory.newest(session.caller)
            if remembered is not None:
                found.append(remembered)
        return max(found) if found else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        who = scope.get("state", {}).get("principal")
        session = ReadSession()
        if isinstance(who, Principal):
            session.memory, session.caller = self.memory, f"{who.label}\x1f{who.actor.tenant}"

        async def send_with_servers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if session.served:
                    last = session.served[-1]
                    headers.append((b"x-evidex-server", server_id(last.server).encode()))
                    own = self._own_write(session)
                    if own is not None and last.generation >= own:
                        headers.append((b"x-evidex-generation", str(own).encode()))
                if session.written:
                    headers.append((b"x-evidex-written-generation",
                                    str(max(session.written.values())).encode()))
                message = {**message, "headers": headers}
            await send(message)

        scope.setdefault("state", {})["reads"] = session
        await self.app(scope, receive, send_with_servers)
