"""Tenants placed on several servers, and moving one of them online.

The configuration's ``store:`` section is the source of truth: a default location and, per
tenant, its own (each a PostgreSQL primary with its read replicas, or a SQLite file). A tenant's
documents, statistics, records and citations live on its server only, so permission-exact
statistics never cross servers: a search is answered by the one server that holds everything
the actor may read.

* ``_value``: ``Placement``, where each tenant is, and opening one location;
* ``_router``: ``PlacedKnowledge`` (``open_knowledge``), the ``Knowledge`` over the placement:
  a ``KnowledgeBase`` per server, each call routed by tenant;
* ``_open``: ``open_configured``, the one way to open the stores a configuration names;
* ``_move``: ``move_tenant``, copy, catch up, freeze, verify, switch, remove.

The configuration file's tenant line is rewritten by ``config.write_placement``.
"""

from ._move import MoveReport, move_tenant, unfinished_source
from ._open import open_configured, require_stores
from ._router import SERVICE_MOVE_WAIT_S, PlacedKnowledge, open_knowledge
from ._value import Placement, open_location

__all__ = ["SERVICE_MOVE_WAIT_S", "MoveReport", "PlacedKnowledge", "Placement", "move_tenant",
           "open_configured", "open_knowledge", "open_location", "require_stores",
           "unfinished_source"]
