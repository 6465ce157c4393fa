"""The audit log: logger ``sluice.audit``, one line per denied operation and per failed
authentication, at most :data:`LINES_PER_SECOND` lines per second per principal (or per host
for failed authentications); the lines held back are counted and their number is told in the
next line written for that principal.

Lines (``key=value``, values quoted with ``repr`` where they may hold spaces)::

    denied principal='User:bob' host=127.0.0.1 api=Produce operation=WRITE resource=TOPIC:'orders'
    authentication failed principal='alice' host=127.0.0.1 mechanism=PLAIN reason='...'
    ... (3 lines suppressed for this principal in the last second)

>>> audit = AuditLog(clock=lambda: 0.0, lines_per_second=1)
>>> audit.denied("User:bob", "::1", "Produce", "WRITE", "TOPIC", "t")
>>> audit.denied("User:bob", "::1", "Produce", "WRITE", "TOPIC", "t")
>>> audit.suppressed["User:bob"]
1
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Final

__all__ = ["LINES_PER_SECOND", "AuditLog", "audit_log"]

LINES_PER_SECOND: Final = 10
"""Lines written per principal per second, at most."""

log = logging.getLogger("sluice.audit")


class AuditLog:
    """Rate-limited audit lines (see the module docstring). Not thread-safe: the broker's loop."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        lines_per_second: int = LINES_PER_SECOND,
    ) -> None:
        self.clock = clock
        self.lines_per_second = lines_per_second
        self._window: dict[str, tuple[int, int]] = {}
        self.suppressed: dict[str, int] = {}
        """Lines held back, by principal, not told yet."""

    def denied(
        self, principal: str, host: str, api: str, operation: str, rtype: str, name: str
    ) -> None:
        """A request's operation on a resource was denied."""
        self._write(
            principal,
            "denied principal=%r host=%s api=%s operation=%s resource=%s:%r",
            principal, host, api, operation, rtype, name,
        )  # fmt: skip

    def authentication_failed(
        self, user: str | None, host: str, mechanism: str, reason: str
    ) -> None:
        """A SASL authentication failed (``user``: the name the client gave, when known)."""
        self._write(
            f"host:{host}",
            "authentication failed principal=%r host=%s mechanism=%s reason=%r",
            user, host, mechanism, reason,
        )  # fmt: skip

    def _write(self, key: str, message: str, *args: object) -> None:
        second = int(self.clock())
        start, count = self._window.get(key, (second, 0))
        if start != second:
            start, count = second, 0
        if count >= self.lines_per_second:
            self._window[key] = (start, count + 1)
            self.suppressed[key] = self.suppressed.get(key, 0) + 1
            return
        self._window[key] = (start, count + 1)
        held = self.suppressed.pop(key, 0)
        if held:
            message += " (%d earlier lines suppressed)"
            args = (*args, held)
        log.warning(message, *args)
        if len(self._window) > 10_000:  # many principals or hosts: forget the old windows
            self._window = {k: v for k, v in self._window.items() if v[0] == second}


audit_log: Final = AuditLog()
"""The broker's audit log."""
