"""What a live tool is: one entry of the configuration's ``tools:`` list, validated whole.

A tool is a read-only HTTP GET against a system that owns live data (orders, stock). Everything
that decides what it may reach and with whose identity is configuration: the URL template (its
origin must be on ``server.tool_hosts``), where each parameter comes from (the question, or a
verified claim of the actor), and who may use it (tenant, groups, visibility, like a document).
Mistakes are refused when the file is loaded, never discovered at question time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..yamlfile import StrictModel

__all__ = [
    "CALLER_WORDS",
    "UNICODE_FLAG",
    "ToolConfig",
    "ToolParameter",
    "check_tool_host",
    "finder_source",
    "names_caller",
    "origin",
    "pattern_flags",
]

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ENV = re.compile(r"\$\{([^}]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_HEADER = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_ORIGIN = re.compile(r"https?://(?:[A-Za-z0-9.-]{1,253}|\[[0-9a-fA-F:.]+\])(?::[0-9]{1,5})?")
_SAFE_DEFAULT = re.compile(r"^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,63}$")
#: Words that make a parameter name one that identifies the caller ("customer_id", "userEmail"):
#: such a value must come from the verified identity, never from what the question says.
CALLER_WORDS = frozenset({
    "account", "buyer", "caller", "client", "customer", "email", "employee", "login", "member",
    "owner", "patient", "person", "student", "subscriber", "tenant", "user", "username",
})
#: Headers evidex sets itself or that would change where a request goes.
_RESERVED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


def names_caller(name: str) -> bool:
    """Whether a parameter name says it identifies the caller (split at ``_``, ``-``, ``.``
    and camelCase humps)."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return any(w.lower() in CALLER_WORDS for w in words.replace(".", " ").split())


def origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower-cased, with the default port left out, so that
    ``HTTP://Orders.internal:80/x`` and ``http://orders.internal`` compare equal."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def check_tool_host(url: str, hosts: Iterable[str]) -> None:
    """ValueError unless the origin of ``url`` is one of ``hosts`` (``server.tool_hosts``)."""
    allowed = {origin(h) for h in hosts}
    if origin(url) not in allowed:
        listed = ", ".join(sorted(allowed)) or "none"
        raise ValueError(f"the host {origin(url)} is not in server.tool_hosts (allowed: {listed})")


def check_tool_hosts(tools: Iterable[ToolConfig], hosts: Iterable[str]) -> None:
    """ValueError naming ``tools[i].url`` unless every tool's origin is one of ``hosts``."""
    allowed = tuple(hosts)
    for i, t in enumerate(tools):
        try:
            check_tool_host(t.url, allowed)
        except ValueError as exc:
            raise ValueError(f"tools[{i}].url: {exc}") from None


def unique_tool_ids(tools: tuple[ToolConfig, ...]) -> tuple[ToolConfig, ...]:
    seen: set[str] = set()
    for t in tools:
        if t.id in seen:
            raise ValueError(f"tool id {t.id!r} is used twice")
        seen.add(t.id)
    return tools


def check_origins(hosts: tuple[str, ...]) -> tuple[str, ...]:
    """``server.tool_hosts``: origins only (scheme and host, optional port, no path)."""
    for h in hosts:
        if not _ORIGIN.fullmatch(h):
            raise ValueError(f"{h!r} is not an origin like http://127.0.0.1:8081 or "
                             "https://orders.internal (scheme and host, no path)")
    return hosts


def hosts_as_written(data: Mapping[str, Any]) -> tuple[str, ...]:
    """``server.tool_hosts`` of a configuration file's data as written (checked by its own
    model), so that each tool's url is checked against it at the tool's own line."""
    server = data.get("server")
    hosts = server.get("tool_hosts") if isinstance(server, dict) else None
    return tuple(h for h in hosts if isinstance(h, str)) if isinstance(hosts, list) else ()


def check_claim_names(claims: dict[str, str]) -> dict[str, str]:
    """Verified claims as configured (API keys, JWT claim mappings): names like identifiers,
    values printable, non-empty, without surrounding spaces."""
    for name, value in claims.items():
        if not _FIELD.match(name):
            raise ValueError(f"claim name {name!r} must be letters, digits and _")
        if not value or value.strip() != value or len(value) > 256 or not value.isprintable():
            raise ValueError(f"claim {name} must be a non-empty printable value without "
                             "surrounding spaces")
    return claims


#: A pattern that starts with this matches Unicode digits, letters and spaces (``\d`` the
#: Arabic-Indic and full-width digits too); without it ``\d``, ``\w``, ``\s`` and ``\b`` are
#: ASCII, so a value sent to a tool is the ASCII the system behind it expects.
UNICODE_FLAG = "(?u)"


def finder_source(pattern: str, prefix: str | None) -> str:
    """The regular expression that finds a parameter's value in a question (group ``_value``)."""
    pattern = pattern.removeprefix(UNICODE_FLAG)
    return (rf"(?:{prefix})\s*(?P<_value>(?:{pattern}))" if prefix is not None
            else rf"(?P<_value>(?:{pattern}))")


def pattern_flags(pattern: str, ignore_case: bool) -> re.RegexFlag:
    """How a parameter's pattern (and its finder) is compiled: ASCII classes unless the pattern
    starts with ``(?u)``."""
    flags = re.IGNORECASE if ignore_case else re.NOFLAG
    return flags if pattern.startswith(UNICODE_FLAG) else flags | re.ASCII


def _compile(pattern: str, flags: re.RegexFlag, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern.removeprefix(UNICODE_FLAG), flags)
    except re.error as exc:
        raise ValueError(f"{what} is not a valid regular expression: {exc}") from None


class _Strict(StrictModel):
    model_config = ConfigDict(populate_by_name=True)  # ``from`` is ``source`` in code


class ToolParameter(_Strict):
    """Where one URL parameter's value comes from.

    ``from: question``: found in the question by ``pattern`` (a list: tried in order, the first
    that matches wins), optionally right after ``prefix`` ("size L"); ``\\d``, ``\\w`` and ``\\b``
    are ASCII unless the pattern starts with ``(?u)``; a value given explicitly
    (an operator's call, a citation being resolved, a model's function call) must match a
    pattern as a whole. Without ``default`` the tool is only asked for when the value is found.
    ``from: actor``: the value of the verified claim ``claim`` of the actor (``Actor.claims``);
    never taken from the question or from any request.
    """

    source: Literal["question", "actor"] = Field(alias="from")
    pattern: str | tuple[str, ...] | None = None
    prefix: str | None = None
    ignore_case: bool = False
    default: str | None = None
    claim: str | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ToolParameter:
        if self.source == "actor":
            extra = [k for k in ("pattern", "prefix", "default") if getattr(self, k) is not None]
            if extra:
                raise ValueError(f"a parameter from: actor takes its value from a claim only; remove "
                                 f"{', '.join(extra)}")
            if not self.claim or not _FIELD.match(self.claim):
                raise ValueError("a parameter from: actor needs claim: NAME (letters, digits, _)")
            return self
        if self.claim is not None:
            raise ValueError("claim: is for parameters from: actor")
        if not self.patterns:
            raise ValueError("a parameter from: question needs a pattern")
        if self.prefix is not None:
            _compile(self.prefix, re.IGNORECASE if self.ignore_case else re.NOFLAG, "prefix")
        for i, p in enumerate(self.patterns):
            flags = pattern_flags(p, self.ignore_case)
            _compile(p, flags, f"pattern {i + 1}")
            _compile(finder_source(p, self.prefix), flags, f"pattern {i + 1} after its prefix")
        if self.default is not None and (not _SAFE_DEFAULT.match(self.default)
                                         or set(self.default) == {"."}):
            raise ValueError("default must be 1-64 letters, digits or . _ ~ - (it goes into the URL "
                             "as it is)")
        return self

    @property
    def patterns(self) -> tuple[str, ...]:
        if self.pattern is None:
            return ()
        return (self.pattern,) if isinstance(self.pattern, str) else tuple(self.pattern)


class ToolConfig(_Strict):
    """One read-only live tool (see the module docstring and the README's tools section)."""

    id: str
    description: str = Field(min_length=1, max_length=300)
    method: Literal["GET"] = "GET"
    parameters: dict[str, ToolParameter] = Field(default_factory=dict)
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    when: tuple[str, ...] = Field(min_length=1)
    fields: dict[str, str] = Field(min_length=1)
    render: str = Field(min_length=1, max_length=2000)
    timeout_ms: int = Field(default=2000, ge=1, le=60_000)
    retries: int = Field(default=1, ge=0, le=5)
    max_response_bytes: int = Field(default=65_536, ge=16, le=16 * 1024 * 1024)
    #: Lookups of this tool under way at once in one process; one more is declined at once
    #: (``tool_unavailable``), so a slow service holds at most this many of the lookup threads.
    max_concurrent: int = Field(default=8, ge=1, le=64)
    tenant: str = Field(min_length=1, max_length=256)
    groups: tuple[str, ...] = Field(min_length=1)
    visibility: Literal["public", "internal", "confidential", "restricted"]

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("must be 1-64 letters, digits, '.', '_' or '-', starting with a letter "
                             f"or digit, got {value!r}")
        return value

    @field_validator("parameters")
    @classmethod
    def _parameters(cls, value: dict[str, ToolParameter]) -> dict[str, ToolParameter]:
        for name, p in value.items():
            if not _FIELD.match(name):
                raise ValueError(f"parameter name {name!r} must be letters, digits and _")
            if p.source == "question" and names_caller(name):
                raise ValueError(f"parameter {name!r} names the caller, so it must come from the "
                                 "verified identity (from: actor, claim: ...), never from the question")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str, info: ValidationInfo) -> str:
        params: Mapping[str, ToolParameter] = info.data.get("parameters") or {}
        if any(ch.isspace() or not ch.isprintable() for ch in value):
            # urlsplit drops tabs and line breaks silently: the URL would load and every call
            # would then fail on the URL as written.
            raise ValueError(f"must be a URL without spaces or control characters, got {value!r}")
        parts = urlsplit(_PLACEHOLDER.sub("x", value))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"must be an http:// or https:// URL template, got {value!r}")
        netloc = urlsplit(value).netloc
        if "{" in netloc or "}" in netloc or "@" in netloc:
            raise ValueError("the scheme and host are fixed: no placeholders and no user:password@ "
                             "in them (credentials go in headers)")
        if "$" in value:
            raise ValueError("${VAR} is for header values only; the URL is cited and must hold no "
                             "credentials")
        if parts.fragment:
            raise ValueError("a fragment (#...) is never sent; remove it")
        used = _PLACEHOLDER.findall(value)
        unknown = sorted(set(used) - set(params))
        if unknown:
            raise ValueError(f"placeholders {unknown} are not parameters of this tool")
        unused = sorted(set(params) - set(used))
        if unused:
            raise ValueError(f"parameters {unused} are not used in the url")
        if len(used) != len(set(used)):
            raise ValueError("each placeholder may appear once")
        hosts = (info.context or {}).get("tool_hosts")
        if hosts is not None:
            check_tool_host(value, hosts)
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _HEADER.match(name) or name.lower() in _RESERVED_HEADERS:
                raise ValueError(f"{name!r} is not a header name evidex sends")
            if any(ord(c) < 32 or ord(c) == 127 for c in text):
                raise ValueError(f"the value of header {name} contains control characters")
            for var in _ENV.findall(text):
                if not _ENV_NAME.match(var):
                    raise ValueError(f"${{{var}}} in header {name} is not an environment variable name")
            if "$" in _ENV.sub("", text):
                raise ValueError(f"header {name}: '$' is only allowed as ${{VAR}}")
        return value

    @field_validator("when")
    @classmethod
    def _when(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for w in value:
            if not re.search(r"[^\W_]", w):
                raise ValueError(f"{w!r} has no word in it")
        return value

    @field_validator("fields")
    @classmethod
    def _fields(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        params = info.data.get("parameters") or {}
        for name, pointer in value.items():
            if not _FIELD.match(name):
                raise ValueError(f"field name {name!r} must be letters, digits and _")
            if name in params:
                raise ValueError(f"field {name!r} has the name of a parameter")
            if not pointer.startswith("/") or re.search(r"~[^01]|~$", pointer):
                raise ValueError(f"{pointer!r} is not a JSON pointer (RFC 6901: /key/0/key)")
        return value

    @field_validator("render")
    @classmethod
    def _render(cls, value: str, info: ValidationInfo) -> str:
        fields = info.data.get("fields") or {}
        params = info.data.get("parameters") or {}
        body = value.replace("{{", "").replace("}}", "")
        names = _PLACEHOLDER.findall(body)
        if "{" in _PLACEHOLDER.sub("", body) or "}" in _PLACEHOLDER.sub("", body):
            raise ValueError("unbalanced braces (write {{ and }} for literal ones)")
        for name in names:
            p = params.get(name)
            if p is not None and p.source == "actor":
                raise ValueError(f"{{{name}}} comes from the actor's identity, which a citation names "
                                 "but never shows")
            if name not in fields and p is None:
                raise ValueError(f"{{{name}}} is neither a field nor a parameter of this tool")
        return value

    @field_validator("groups")
    @classmethod
    def _groups(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for g in value:
            if not g or g.strip() != g or len(g) > 256:
                raise ValueError(f"group {g!r} must be a non-empty name without surrounding spaces")
        return value

    # -- derived ---------------------------------------------------------------------------------
    def question_parameters(self) -> list[str]:
        return [n for n, p in self.parameters.items() if p.source == "question"]

    def actor_parameters(self) -> list[str]:
        return [n for n, p in self.parameters.items() if p.source == "actor"]

    def summary(self) -> dict[str, Any]:
        """What an operator is shown: everything but header values (which may hold a secret
        only as ${VAR}, but are not needed to understand the tool)."""
        out = self.model_dump(by_alias=True, exclude_none=True, mode="json")
        out["parameters"] = {n: p.model_dump(by_alias=True, exclude_defaults=True, mode="json")
                             | {"from": p.source} for n, p in self.parameters.items()}
        out["headers"] = sorted(self.headers)
        return out
