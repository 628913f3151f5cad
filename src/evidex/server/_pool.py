"""A bounded set of open KnowledgeBase handles for the request threads of one worker process."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import HTTPException

from ..kb import KnowledgeBase
from ..knowledge import Knowledge
from ..placement import PlacedKnowledge
from ..tools import Toolbox

__all__ = ["StorePool", "as_factory"]


class StorePool:
    """A bounded set of open KnowledgeBase handles, one request per handle at a time.

    A KnowledgeBase serialises its reads on its connection's lock, so a handle serves one
    request at a time; a few handles let a slow request (an answer from a model server) not
    hold up the searches behind it. Waiting longer than ``wait_s`` for a handle is a 503. Live
    lookups are never made while a handle is held (``_answer``, ``_tools``): a slow tool
    service would otherwise hold the handles every other request of the worker needs.
    """

    def __init__(self, factory: Callable[[], Knowledge], size: int, wait_s: float = 30.0) -> None:
        self._factory = factory
        self._size = size
        self._wait_s = wait_s
        self._idle: queue.LifoQueue[Knowledge] = queue.LifoQueue()
        self._made: list[Knowledge] = []
        self._lock = threading.Lock()

    @contextmanager
    def handle(self) -> Iterator[Knowledge]:
        kb = self._take()
        try:
            yield kb
        finally:
            self._idle.put(kb)

    def _take(self) -> Knowledge:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            make = len(self._made) < self._size
            if make:
                kb = self._factory()
                self._made.append(kb)
                return kb
        try:
            return self._idle.get(timeout=self._wait_s)
        except queue.Empty:
            raise HTTPException(503, "the service is busy; try again") from None

    def close(self) -> None:
        with self._lock:
            for kb in self._made:
                kb.close()
            self._made.clear()


def as_factory(kb: Knowledge | Callable[[], Knowledge] | str | Path,
               tools: Toolbox | None = None) -> tuple[Callable[[], Knowledge], bool, Toolbox | None]:
    """(a factory of handles, whether it hands out the one handle given, the toolbox the
    handles share); handles opened from a location share ``tools``. A factory's handles share
    ``tools`` when given (None: the service cannot make lookups apart from a handle)."""
    if isinstance(kb, str | Path):
        location = kb
        shared = tools if tools is not None else Toolbox(())
        return (lambda: KnowledgeBase.open(location, tools=shared)), False, shared
    if isinstance(kb, KnowledgeBase | PlacedKnowledge):  # a handle (neither is callable)
        one = kb
        return (lambda: one), True, one.toolbox
    if callable(kb):
        return kb, False, tools
    raise TypeError("create_app needs a KnowledgeBase, a factory of them, or a store location")
