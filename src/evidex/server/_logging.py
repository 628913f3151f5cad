"""JSON lines on stderr for the service: one per request, one per failure.

What may appear: method, route template (``/v1/documents/{document_id}``, never the id), status,
duration, the caller's label (key name or hash prefix) and tenant, error class names and code
locations. What never appears: query or question text, passage text, document ids from paths,
credentials, exception messages (they can quote input).
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from typing import Any

__all__ = ["log_event", "log_failure", "logger", "setup_logging"]

logger = logging.getLogger("evidex.server")


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                  + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "event": record.getMessage(),
        }
        data.update(getattr(record, "fields", {}))
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def setup_logging(level: int = logging.INFO) -> None:
    if any(getattr(h, "_evidex", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter())
    handler._evidex = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={"fields": fields})


def log_failure(event: str, exc: BaseException, **fields: Any) -> None:
    """An unexpected error: its class and where it happened (file:line function), no message."""
    frames = traceback.extract_tb(exc.__traceback__)[-6:]
    where = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in frames]
    log_event(event, logging.ERROR, error=type(exc).__name__, at=where, **fields)
