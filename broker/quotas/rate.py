"""Kafka's sampled rate (``SampledStat`` with ``Rate``): what the client quotas and the
replication throttles measure, and Kafka's throttle time (``QuotaUtils.throttleTime``).

The rate of a value (bytes, or handler time) is measured over ``samples`` windows of
``window_s`` seconds (``quota.window.num`` × ``quota.window.size.seconds``, 11 × 1 s by
default). The windows are aligned on the clock; the rate is the sum of the current window and
the ``samples - 1`` before it over the time they span — ``samples - 1`` windows and the elapsed
part of the current one — so that, as Kafka's ``Rate``, a new sensor lets about
``(samples - 1) × window × bound`` through at once, and then holds the average over each cycle of
``samples`` windows to the bound. The clock is injected (seconds, monotonic). Not thread-safe:
the broker's event loop only; nothing is written to disk.

>>> now = [0.0]
>>> rate = SampledRate(samples=3, window_s=1.0, clock=lambda: now[0])
>>> rate.record(1500); rate.rate()      # 1500 over the 2 s a new rate assumes
750.0
>>> throttle_s(rate.rate(), 500, rate.span())   # (750 - 500) / 500 × 2 s
1.0
>>> now[0] = 3.5; rate.rate()           # the window has expired
0.0
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

__all__ = ["SampledRate", "throttle_s"]


def throttle_s(measured: float, bound: float, span_s: float) -> float:
    """Kafka's throttle time (``QuotaUtils.throttleTime``): how long, with nothing more
    recorded, until a rate ``measured`` over ``span_s`` seconds falls to ``bound``:
    ``(measured - bound) / bound × span``; 0 when it is not above the bound.

    >>> throttle_s(150.0, 100.0, 10.0), throttle_s(80.0, 100.0, 10.0)
    (5.0, 0.0)
    """
    if measured <= bound:
        return 0.0
    return (measured - bound) / max(bound, 1e-9) * span_s


class SampledRate:
    """A rate measured over ``samples`` windows of ``window_s`` seconds (module docs)."""

    def __init__(
        self,
        *,
        samples: int = 11,
        window_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.samples = samples
        self.window_s = window_s
        self._clock = clock
        self._windows: deque[list[float]] = deque()
        """[index, total] of the windows with values, oldest first (at most ``samples``);
        window ``i`` covers the clock's ``[i × window_s, (i + 1) × window_s)``."""

    def record(self, value: float) -> None:
        """``value`` (bytes, seconds of handler time, …) happened now."""
        index = int(self._clock() // self.window_s)
        windows = self._windows
        if not windows or windows[-1][0] != index:
            windows.append([index, 0])
            while len(windows) > self.samples:
                windows.popleft()
        windows[-1][1] += value

    def unrecord(self, value: float) -> None:
        """Take back ``value`` recorded in the current window (Kafka's ``unrecordQuotaSensor``)."""
        if self._windows:
            self._windows[-1][1] = max(0.0, self._windows[-1][1] - value)

    def span(self) -> float:
        """The seconds the rate is measured over now: ``samples - 1`` windows and the elapsed
        part of the current one (Kafka's ``Rate.windowSize``)."""
        now = self._clock()
        return (self.samples - 1) * self.window_s + (now - (now // self.window_s) * self.window_s)

    def rate(self) -> float:
        """The measured rate per second: the values of the last ``samples`` windows (the
        current one included) over :meth:`span`."""
        now = self._clock()
        current = int(now // self.window_s)
        windows = self._windows
        while windows and windows[0][0] <= current - self.samples:
            windows.popleft()
        if not windows:
            return 0.0
        elapsed = self.span()
        return float(sum(w[1] for w in windows) / elapsed) if elapsed > 0 else 0.0

    def reconfigure(self, samples: int, window_s: float) -> None:
        """New windows; a new window size starts the measurement over."""
        if (samples, window_s) != (self.samples, self.window_s):
            self._windows.clear()
        self.samples, self.window_s = samples, window_s
