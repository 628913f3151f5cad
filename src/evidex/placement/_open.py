"""``open_configured``: the one way to open the stores a configuration names.

The command line, the service's request handles, MCP and the scheduler each used to pass their
own set of settings to the opener (MCP's left out the vector leg's deadline). Here the
configuration's settings are applied once; what legitimately differs is a parameter:
``create`` (only what adds documents may create a missing store), ``as_is`` (the service opens
the stores as they are, never with the configured analyzer and model), the shared ``tools`` and
how long a write waits for a tenant being moved.
"""

from __future__ import annotations

from ..config import Config
from ..model import EvidexError
from ..store import store_exists
from ..tools import Toolbox
from ._router import MOVE_WAIT_S, PlacedKnowledge
from ._value import Placement


def require_stores(where: Placement) -> None:
    """Every location holds a store (a PostgreSQL URL is taken to; a SQLite file must exist):
    a search or an answer from a mistyped location would otherwise create an empty store and
    decline every question as if the collection lacked the answer."""
    for loc in where.locations():
        if not store_exists(loc.url):
            raise EvidexError(f"no store at {loc.url} (evidex ingest creates one; or give --db)")


def open_configured(config: Config, where: Placement, *, create: bool = False, as_is: bool = False,
                    analyzer: str | None = None, embedder: str | None = None,
                    tools: Toolbox | None = None, move_wait_s: float = MOVE_WAIT_S) -> PlacedKnowledge:
    """The knowledge of the stores ``where`` names, with ``config``'s settings.

    ``create``: a missing store may be created; otherwise every store must exist
    (``require_stores``). The stores are opened with ``analyzer``/``embedder``, else the
    configuration's ``retrieval`` ones (a store created gets them; an existing store that
    indexes otherwise is an error), unless ``as_is``. ``tools``: a toolbox shared with other
    handles (a service's), else the configuration's tools for this handle alone."""
    r = config.retrieval
    settings: dict[str, object] = {"vector_timeout_ms": r.vector.timeout_ms, "move_wait_s": move_wait_s,
                                   "tools": tools if tools is not None else config.tools}
    if not as_is:
        settings |= {"analyzer": analyzer or r.analyzer, "embedder": embedder or r.embedder}
    if not create:
        require_stores(where)
    return PlacedKnowledge(where, **settings)  # type: ignore[arg-type]
