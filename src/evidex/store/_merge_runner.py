"""Where segment merges run: on a thread of their own (``Merger``) or inside the write call
(``InlineMerges``).

A merge changes no search result (the merged segment holds exactly the live postings of its
parts), so nothing requires the writer to wait for it: with a ``Merger`` the write commits, asks
for the merges the policy calls for, and returns; a write that completes a size tier does not
pay for folding it. The merger reads its inputs in a read transaction of its own connection
(writers and readers go on meanwhile) and commits the merged segment in a short write transaction
that first checks its inputs are still there (another process may have merged them, or
``optimize`` run).

The backend supplies ``merge_due(conn, budget)``: run every due merge on ``conn`` and return.
Failures are kept and raised by the next ``settle``, ``close`` or write (``check``), never
dropped: a failed merge loses nothing (its transaction rolls back; the policy asks for it again),
but the caller must hear that the store cannot merge.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any, Protocol

from ..model import StoreError

__all__ = ["InlineMerges", "Merger", "Merges"]


class Merges(Protocol):
    def request(self, budget: int) -> None:
        """Ask for the merges due under ``budget`` (see ``_merge_policy.merge_budget``)."""
        ...

    def settle(self) -> None:
        """Wait until no merge is running or requested; raise a failure that happened meanwhile."""
        ...

    def check(self) -> None:
        """Raise (once) the failure of a merge that ran apart from the caller."""
        ...

    def close(self) -> None: ...


class InlineMerges:
    """Merges run inside the write call that asks for them: there is never one to wait for."""

    def __init__(self, merge_due: Callable[[int], None]) -> None:
        self.request = merge_due

    def settle(self) -> None:
        return None

    def check(self) -> None:
        return None

    def close(self) -> None:
        return None


class Merger:
    """One background thread per store handle, started on the first request."""

    def __init__(self, connect: Callable[[], Any], merge_due: Callable[[Any, int], None]) -> None:
        self._connect = connect
        self._merge_due = merge_due
        self._cond = threading.Condition()
        self._budget = 0  # largest budget requested since the thread last took the work
        self._busy = False
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def request(self, budget: int) -> None:
        """Ask for the merges due under ``budget`` (see ``_segments.merge_budget``)."""
        with self._cond:
            if self._closed:
                raise StoreError("the store is closed")
            self._budget = max(self._budget, budget)
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                # (A forked child inherits the object but not the thread.)
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="evidex-merger", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def settle(self) -> None:
        """Wait until no merge is running or requested; raise a failure that happened meanwhile."""
        with self._cond:
            while (self._budget or self._busy) and self._thread is not None and self._thread.is_alive():
                self._cond.wait()
            self.check()

    def check(self) -> None:
        """Raise (once) the failure of a background merge, if one failed."""
        if self._error is not None:
            err, self._error = self._error, None
            raise StoreError(f"a background segment merge failed: {err}") from err

    def close(self) -> None:
        """Finish the requested merges (so a closed store keeps the layout its writes asked
        for), then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join()
        with self._cond:
            self.check()

    def _run(self) -> None:
        conn = self._connect()
        try:
            while True:
                with self._cond:
                    while not self._budget and not self._closed:
                        self._cond.wait()
                    if not self._budget:
                        return
                    budget, self._budget, self._busy = self._budget, 0, True
                try:
                    self._merge_due(conn, budget)
                except BaseException as exc:  # kept for the caller, see the module docstring
                    with self._cond:
                        self._error = exc
                finally:
                    with self._cond:
                        self._busy = False
                        self._cond.notify_all()
        finally:
            conn.close()
