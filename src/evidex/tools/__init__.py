"""Live data as read-only tools: HTTP GET lookups at question time, cited like passages.

A configured tool (``ToolConfig``, the configuration's ``tools:`` list) is asked for by a
question's words, called only for actors that may use it (tenant, groups, visibility, like a
document), with parameters from the question (validated by pattern, percent-encoded) or from
the actor's verified claims (never from the question). Its JSON response is reduced to fields,
rendered into one line, scanned like a passage, and cited with ``kind: "live"``; resolving the
citation looks the value up again. ``Toolbox`` holds the tools of a process.
"""

from ._config import (
    CALLER_WORDS,
    ToolConfig,
    ToolParameter,
    check_claim_names,
    check_origins,
    check_tool_host,
    check_tool_hosts,
    hosts_as_written,
    names_caller,
    origin,
    unique_tool_ids,
)
from ._params import Bound
from ._toolbox import LIVE_KIND, LiveSource, Pending, Toolbox, compare

__all__ = [
    "CALLER_WORDS",
    "LIVE_KIND",
    "Bound",
    "LiveSource",
    "Pending",
    "ToolConfig",
    "ToolParameter",
    "Toolbox",
    "check_claim_names",
    "check_origins",
    "check_tool_host",
    "check_tool_hosts",
    "compare",
    "hosts_as_written",
    "names_caller",
    "origin",
    "unique_tool_ids",
]
