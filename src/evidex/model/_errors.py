"""Every error evidex raises on purpose: one family under ``EvidexError``, a class per kind of
problem, so each layer raises the same class for the same problem and callers catch one family."""

from __future__ import annotations

__all__ = [
    "CitationError",
    "ConfigError",
    "DocumentError",
    "EvidexError",
    "FetchError",
    "GeneratorError",
    "MissingExtraError",
    "NotifyError",
    "QueryError",
    "ReadFailed",
    "ServerUnavailable",
    "SourceError",
    "StoreError",
    "TenantMoved",
]


class EvidexError(ValueError):
    """Base of every input error evidex raises; a ``ValueError`` so callers can catch broadly."""


class QueryError(EvidexError):
    """The query string or a search parameter breaks the query contract."""


class DocumentError(EvidexError):
    """A document (or a batch of documents) is invalid; nothing of the batch was written."""


class CitationError(EvidexError):
    """A citation is not a citation at all (not a mapping, or missing its identifying fields)."""


class StoreError(EvidexError):
    """The store cannot be opened as asked (other analyzer, newer schema, unreadable file)."""


class ServerUnavailable(StoreError):
    """A database server did not answer (stopped, unreachable, its connections gone). A
    replicated store raises it for a write when its primary is down (reads go on from the
    replicas) and for a read that no server could serve."""


class ReadFailed(ServerUnavailable):
    """A replica went away (or cancelled the read) while serving a read: the replica is
    skipped from now on, and the read may run again on another server (``KnowledgeBase``
    does, once)."""


class TenantMoved(StoreError):
    """The tenant's data is moving or has moved to another server (``evidex move-tenant``).

    ``state`` is ``moving`` while the move finishes (writes wait; reads are still served
    here) or ``moved`` (reads and writes belong to ``location`` now). ``location`` is the new
    server's URL without its password; ``replicas`` those of its replicas."""

    def __init__(self, tenant: str, state: str, location: str, replicas: tuple[str, ...] = ()) -> None:
        self.tenant, self.state, self.location, self.replicas = tenant, state, location, replicas
        what = ("is being moved to" if state == "moving" else "has moved to")
        hint = (" try again in a moment" if state == "moving" else
                f" point the configuration's store.tenants.{tenant} at it")
        super().__init__(f"tenant {tenant!r} {what} {location};{hint}")


class ConfigError(EvidexError):
    """A configuration (file, server section, environment) cannot be used as it is; the message
    names the file, the line and the key where there is one."""


class SourceError(EvidexError):
    """A configured source as a whole cannot be listed (missing folder, sitemap unreachable).
    Nothing of it is removed: a failed listing is not evidence that documents are gone."""


class FetchError(EvidexError):
    """One item of a source could not be read for a reason that may pass (network, HTTP 5xx,
    I/O). The indexed version is kept."""


class NotifyError(EvidexError):
    """A drift webhook did not accept the report (transport error or a non-2xx status)."""


class GeneratorError(EvidexError):
    """The model server could not produce an answer (network, HTTP status, non-JSON reply)."""


class MissingExtraError(EvidexError, ImportError):
    """A part of evidex needs an optional extra that is not installed; the message is the one
    line that installs it (``pip install 'evidex[server]'``). Also an ``ImportError``, which is
    what it is underneath."""

    def __init__(self, extra: str, what: str, missing: str) -> None:
        super().__init__(f"{what} needs the {extra!r} extra ({missing} is not installed): "
                         f"pip install 'evidex[{extra}]'")
        self.extra = extra
