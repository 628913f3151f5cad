"""evidex: knowledge retrieval in which every passage and answer traces back to its source.

The public surface is re-exported here; submodules are implementation detail.
"""

from .answer import Answer, AnswerSettings, OpenAIConfig
from .kb import KnowledgeBase
from .model import (
    VISIBILITIES,
    Actor,
    CitationError,
    ConfigError,
    Document,
    DocumentError,
    DocumentView,
    EvidexError,
    Filters,
    Hit,
    IngestReport,
    MissingExtraError,
    Passage,
    QueryError,
    ReadFailed,
    Resolution,
    SearchResults,
    ServerUnavailable,
    StoreError,
    TenantMoved,
)
from .query import ANALYZERS, QueryLimits

__version__ = "0.1.0"

__all__ = [
    "ANALYZERS",
    "VISIBILITIES",
    "Actor",
    "Answer",
    "AnswerSettings",
    "CitationError",
    "ConfigError",
    "Document",
    "DocumentError",
    "DocumentView",
    "EvidexError",
    "Filters",
    "Hit",
    "IngestReport",
    "KnowledgeBase",
    "MissingExtraError",
    "OpenAIConfig",
    "Passage",
    "QueryError",
    "QueryLimits",
    "ReadFailed",
    "Resolution",
    "SearchResults",
    "ServerUnavailable",
    "StoreError",
    "TenantMoved",
    "__version__",
]
