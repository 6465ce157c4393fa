"""Window definitions: tumbling and hopping, sliding, session, and join windows.

Durations are milliseconds or strings such as ``"500ms"``, ``"10s"``, ``"1m"``, ``"2h"``, ``"1d"``.
Every window has a grace period: records up to ``grace`` late (in stream time) still count;
later ones are dropped. Kafka's default grace is zero for windows made with ``of``.

>>> w = TimeWindows.of("1m").grace("10s")
>>> w.size_ms, w.advance_ms, w.grace_ms
(60000, 60000, 10000)
>>> w.windows_for(61_000)
[(60000, 120000)]
>>> TimeWindows.of("10s").advance_by("5s").windows_for(12_000)
[(5000, 15000), (10000, 20000)]
>>> TimeWindows.of(10).advance_by(4).windows_for(12)   # starts are multiples of the advance
[(4, 14), (8, 18), (12, 22)]
>>> JoinWindows.of("5s").before_ms, JoinWindows.of("5s").after("1s").after_ms
(5000, 1000)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sluice.streams.errors import StreamsError

__all__ = ["JoinWindows", "SessionWindows", "SlidingWindows", "TimeWindows", "duration_ms"]

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|min|m|h|d)\s*$")

Duration = int | str


def duration_ms(duration: Duration) -> int:
    """Milliseconds of ``1000``, ``"10s"``, ``"1m"``…

    >>> duration_ms("2h"), duration_ms(250)
    (7200000, 250)
    """
    if isinstance(duration, int) and not isinstance(duration, bool):
        if duration < 0:
            raise StreamsError(f"a duration cannot be negative: {duration}")
        return duration
    if isinstance(duration, str):
        match = _DURATION.match(duration)
        if match:
            return int(match.group(1)) * _UNITS[match.group(2)]
    raise StreamsError(f"not a duration: {duration!r} (use ms as an int, or '500ms', '10s', '1m')")


@dataclass(frozen=True, slots=True)
class TimeWindows:
    """Fixed-size windows aligned to the epoch: tumbling, or hopping with ``advance_by``."""

    size_ms: int
    advance_ms: int
    grace_ms: int = 0

    @classmethod
    def of(cls, size: Duration) -> TimeWindows:
        """Tumbling windows of ``size``."""
        size_ms = duration_ms(size)
        if size_ms <= 0:
            raise StreamsError("window size must be positive")
        return cls(size_ms, size_ms)

    def advance_by(self, advance: Duration) -> TimeWindows:
        """Hopping windows that start every ``advance``."""
        advance_ms = duration_ms(advance)
        if not 0 < advance_ms <= self.size_ms:
            raise StreamsError("advance must be positive and at most the window size")
        return replace(self, advance_ms=advance_ms)

    def grace(self, grace: Duration) -> TimeWindows:
        """Accept records up to ``grace`` late."""
        return replace(self, grace_ms=duration_ms(grace))

    def windows_for(self, timestamp: int) -> list[tuple[int, int]]:
        """The ``(start, end)`` of every window containing ``timestamp``, oldest first."""
        size, advance = self.size_ms, self.advance_ms
        if size == advance:  # tumbling: the one window, without the general arithmetic
            start = timestamp - timestamp % size
            return [(start, start + size)]
        last_start = timestamp - timestamp % advance
        # window starts are multiples of ``advance``: the first one that still holds the record
        first_start = max(0, timestamp - size + advance) // advance * advance
        return [(s, s + size) for s in range(first_start, last_start + 1, advance)]

    @property
    def retention_ms(self) -> int:
        """How long a window's state is kept (size + grace)."""
        return self.size_ms + self.grace_ms


@dataclass(frozen=True, slots=True)
class SlidingWindows:
    """Windows of ``size`` that end at each record: records within ``size`` of each other meet.

    Window bounds are inclusive, ``[start, end]`` with ``end - start == size``, as Kafka's.
    """

    size_ms: int
    grace_ms: int = 0

    @classmethod
    def of(cls, size: Duration) -> SlidingWindows:
        """Sliding windows with a maximum time difference of ``size``."""
        return cls(duration_ms(size))

    def grace(self, grace: Duration) -> SlidingWindows:
        """Accept records up to ``grace`` late."""
        return replace(self, grace_ms=duration_ms(grace))

    @property
    def retention_ms(self) -> int:
        """Records are kept this long: the left window of a record needs its predecessors."""
        return 2 * self.size_ms + self.grace_ms + 1


@dataclass(frozen=True, slots=True)
class SessionWindows:
    """Sessions: records of a key less than ``gap`` apart belong to one session."""

    gap_ms: int
    grace_ms: int = 0

    @classmethod
    def with_inactivity_gap(cls, gap: Duration) -> SessionWindows:
        """Sessions closed by ``gap`` of inactivity."""
        return cls(duration_ms(gap))

    of = with_inactivity_gap

    def grace(self, grace: Duration) -> SessionWindows:
        """Accept records up to ``grace`` late."""
        return replace(self, grace_ms=duration_ms(grace))

    @property
    def retention_ms(self) -> int:
        """How long a session's state is kept after it ends: a session ending at ``e`` still
        merges with a record at ``e + gap`` until stream time passes ``e + gap + grace``."""
        return self.gap_ms + self.grace_ms + 1


@dataclass(frozen=True, slots=True)
class JoinWindows:
    """How far apart in time two records may be to join: ``before`` and ``after`` the left one."""

    before_ms: int
    after_ms: int
    grace_ms: int = 0

    @classmethod
    def of(cls, difference: Duration) -> JoinWindows:
        """Join records at most ``difference`` apart, either way."""
        ms = duration_ms(difference)
        return cls(ms, ms)

    def before(self, before: Duration) -> JoinWindows:
        """How much earlier than the left record a right record may be."""
        return replace(self, before_ms=duration_ms(before))

    def after(self, after: Duration) -> JoinWindows:
        """How much later than the left record a right record may be."""
        return replace(self, after_ms=duration_ms(after))

    def grace(self, grace: Duration) -> JoinWindows:
        """Accept records up to ``grace`` late."""
        return replace(self, grace_ms=duration_ms(grace))

    @property
    def retention_ms(self) -> int:
        """How long each side's records are buffered."""
        return self.before_ms + self.after_ms + self.grace_ms + 1
