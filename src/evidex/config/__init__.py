"""``knowledge.config.yaml``: sources, retrieval and answer defaults, freshness, server, stores.

Configuration is validated whole before anything runs: unknown keys, duplicate keys and bad
values are errors naming the file, the line and the key (``ConfigError``), because a typo in a
source's ``groups`` or ``visibility`` otherwise becomes documents the wrong people can read.
Relative paths are relative to the configuration file, so the file means the same thing from
any working directory.

One module per section: ``_sources`` (``sources:``, ``defaults:``, ``freshness:``),
``_retrieval``, ``_answers``, ``_server`` (identity: each API key, stored only as its SHA-256,
maps to one actor; nothing in a request body can name a tenant or a group, so these models are
the only place an identity is ever defined; they live here, not in ``evidex.server``, so
reading a configuration never needs the server's optional packages), ``_stores`` (``store:``),
``_load`` (the whole ``Config`` and ``load_config``) and ``_placement_file`` (rewriting one
tenant's ``store:`` line in place, for ``evidex move-tenant --write-config``).
"""

from __future__ import annotations

from ..tools import ToolConfig
from ._answers import AnswerConfig

# Importable as before (``from evidex.config import Split``), though no other package uses them.
from ._common import Cadence as Cadence
from ._common import FuseMethod as FuseMethod
from ._common import Split as Split
from ._common import Visibility
from ._common import WhenNoEvidence as WhenNoEvidence
from ._load import MAX_CONFIG_BYTES as MAX_CONFIG_BYTES
from ._load import Config, load_config
from ._placement_file import config_line, write_placement
from ._retrieval import KeywordLeg, RetrievalConfig, VectorLeg
from ._server import ApiKey, JwtSettings, ServerSettings
from ._sources import (
    FilesSource,
    Freshness,
    Notify,
    PdfSource,
    RecordFields,
    RecordsSource,
    SourceConfig,
    SourceDefaults,
    WebSource,
    WikiSource,
)
from ._stores import Location as Location
from ._stores import StoreConfig, StoreLocation

__all__ = [
    "AnswerConfig",
    "ApiKey",
    "Config",
    "FilesSource",
    "Freshness",
    "JwtSettings",
    "KeywordLeg",
    "Notify",
    "PdfSource",
    "RecordFields",
    "RecordsSource",
    "RetrievalConfig",
    "ServerSettings",
    "SourceConfig",
    "SourceDefaults",
    "StoreConfig",
    "StoreLocation",
    "ToolConfig",
    "VectorLeg",
    "Visibility",
    "WebSource",
    "WikiSource",
    "config_line",
    "load_config",
    "write_placement",
]
