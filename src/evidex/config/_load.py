"""The whole configuration (``Config``) and reading it from a file with line numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    field_validator,
    model_validator,
)

from .. import tools as _tools
from ..answer import AnswerSettings
from ..model import ConfigError
from ..notify import handoff_text
from ..retrieve import Fusion
from ..tools import ToolConfig
from ..yamlfile import read_yaml
from ._answers import AnswerConfig
from ._common import (
    Strict,
)
from ._retrieval import RetrievalConfig
from ._server import ServerSettings
from ._sources import (
    SOURCE_KEYS,
    FilesSource,
    Freshness,
    RecordsSource,
    SourceConfig,
    SourceDefaults,
    WebSource,
)
from ._stores import StoreConfig


class Config(Strict):
    sources: tuple[SourceConfig, ...] = ()
    #: Where the store lives (the command line's --db when absent).
    store: StoreConfig | None = None
    defaults: SourceDefaults = SourceDefaults()
    retrieval: RetrievalConfig = RetrievalConfig()
    answer: AnswerConfig = AnswerConfig()
    freshness: Freshness = Freshness()
    server: ServerSettings | None = None
    #: Live tools (read-only lookups at question time); their hosts must be in server.tool_hosts.
    tools: tuple[ToolConfig, ...] = ()

    def answer_settings(self, handoff: str | None = None) -> AnswerSettings:
        """The library's answer settings from the ``answer:`` and ``retrieval:`` sections (one
        place, so the CLI and the service decline and cite alike)."""
        a, r = self.answer, self.retrieval
        offered = handoff or handoff_text(a.handoff) or AnswerSettings().handoff
        return AnswerSettings(handoff=offered if a.when_no_evidence == "decline_and_offer_person" else "",
                              link_allowlist=a.link_allowlist, include_flagged=a.include_flagged,
                              reader=a.reader, reader_threshold=a.reader_threshold,
                              top_k=self.retrieval.top_k, mode=self.retrieval.mode,
                              fusion=Fusion(r.fuse, r.rrf_k, r.window, r.alpha))

    def tenant_sources(self, tenant: str) -> list[str]:
        """Ids of the sources whose documents belong to ``tenant`` (what its admins may sync)."""
        return [s.id for s in self.sources if (s.tenant or self.defaults.tenant) == tenant]

    @field_validator("sources")
    @classmethod
    def _unique(cls, value: tuple[Any, ...]) -> tuple[Any, ...]:
        seen: set[str] = set()
        for s in value:
            if s.id in seen:
                raise ValueError(f"source id {s.id!r} is used twice")
            seen.add(s.id)
        return value

    _tool_ids = field_validator("tools")(_tools.unique_tool_ids)

    @model_validator(mode="after")
    def _tools_allowed(self) -> Config:
        # load_config checks each url at its own line (validation context); this catches a
        # Config built in code.
        _tools.check_tool_hosts(self.tools, self.server.tool_hosts if self.server is not None else ())
        return self

    def source(self, source_id: str) -> FilesSource | WebSource | RecordsSource:  # or a subclass
        for s in self.sources:
            if s.id == source_id:
                return s
        known = ", ".join(s.id for s in self.sources) or "none"
        raise ConfigError(f"no source {source_id!r} in the configuration; configured: {known}")


# -- loading with line numbers ---------------------------------------------------------------

#: Largest configuration file read (a configuration is a few kilobytes; URL lists this long
#: belong in a sitemap).
MAX_CONFIG_BYTES = 1024 * 1024


def load_config(path: str | Path) -> Config:
    """Read and validate a configuration file; raises ``ConfigError`` naming file, line, key."""
    doc = read_yaml(path, what="configuration", max_bytes=MAX_CONFIG_BYTES,
                    hint=" (sources share settings through defaults:)")
    data = doc.data
    if not isinstance(data, dict):
        raise doc.fail((), "the configuration must be a mapping of sections")
    given = data.get("defaults")
    defaults: dict[str, Any] = given if isinstance(given, dict) else {}
    if isinstance(data.get("sources"), list):
        # Each source inherits from ``defaults:``; the merge happens before validation so an
        # inherited bad value is reported at the defaults' line by the defaults section itself.
        data = {**data, "sources": [
            {**{k: v for k, v in defaults.items() if k in SOURCE_KEYS}, **s}
            if isinstance(s, dict) else s for s in data["sources"]
        ]}
    return doc.validate(Config, data, context={"base": str(Path(path).resolve().parent),
                                               "tool_hosts": _tools.hosts_as_written(data)})
