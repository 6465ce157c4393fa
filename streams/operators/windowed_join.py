"""Stream–stream joins within a :class:`~sluice.streams.windows.JoinWindows`.

Each side buffers its records in a window store (duplicates kept, one per record) and, for each
new record, looks up the other side's buffer for the same key within the window: a left record
at ``t`` meets right records in ``[t - before, t + after]``; a right record at ``t`` meets left
records in ``[t - after, t + before]``. A join result carries the larger of the two timestamps.

Left and outer joins emit a record without partner (``joiner(value, None)``) only once its window
has closed — when stream time passes ``t + after + grace`` (``before`` for a right record) — so
that no result is retracted (Kafka 3.1+, KIP-633). Such records wait in a shared buffer and go
out, oldest first, before the results of the record that closed their window. Unlike Kafka, a
record that arrives after its own window closed is dropped (counted in ``dropped``) rather than
joined with what the other side still buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.serde import Serde
from sluice.streams.operators.base import Operator
from sluice.streams.processor import ProcessorContext
from sluice.streams.record import Record
from sluice.streams.state.window import WindowStore
from sluice.streams.windows import JoinWindows

__all__ = ["StreamStreamJoin", "side_serde"]


def side_serde(left: Serde, right: Serde) -> Serde:
    """Values of the outer-join buffer: a byte for the side (1 left, 2 right) then the value."""

    def serialize(item: tuple[bool, Any]) -> bytes:
        is_left, value = item
        return (b"\x01" + left.serialize(value)) if is_left else (b"\x02" + right.serialize(value))

    def deserialize(data: bytes) -> tuple[bool, Any]:
        if data[0] == 1:
            return True, left.deserialize(data[1:])
        return False, right.deserialize(data[1:])

    return Serde(serialize, deserialize, f"join-side({left.name},{right.name})")


class StreamStreamJoin(Operator):
    """One side of a windowed stream–stream join; ``kind`` is inner, left or outer."""

    dropped = 0

    def __init__(
        self,
        this_store: str,
        other_store: str,
        outer_store: str | None,
        windows: JoinWindows,
        joiner: Callable[[Any, Any], Any],
        *,
        this_is_left: bool,
        kind: str,
    ) -> None:
        self.names = (this_store, other_store, outer_store)
        self.windows = windows
        self.joiner = joiner
        self.this_is_left = this_is_left
        self.kind = kind
        if this_is_left:
            self.look_before, self.look_after = windows.before_ms, windows.after_ms
        else:
            self.look_before, self.look_after = windows.after_ms, windows.before_ms
        # Without a partner, this side's record is emitted alone in a left join (left side) or
        # an outer join (both sides).
        self.emits_alone = kind == "outer" or (kind == "left" and this_is_left)

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        this, other, outer = self.names
        self.this = context.get_state_store(this)
        self.other = context.get_state_store(other)
        self.outer = None if outer is None else context.get_state_store(outer)
        assert isinstance(self.this, WindowStore) and isinstance(self.other, WindowStore)

    def _emit(self, mine: Any, other: Any, timestamp: int, record: Record) -> None:
        left, right = (mine, other) if self.this_is_left else (other, mine)
        self.forward(Record(record.key, self.joiner(left, right), timestamp, record.headers))

    def process(self, record: Record) -> None:
        key, value, t = record.key, record.value, record.timestamp
        if key is None or value is None:
            return
        stream_time = self.context.stream_time
        grace = self.windows.grace_ms
        if t + self.look_after + grace < stream_time:
            self.dropped += 1
            return
        assert isinstance(self.this, WindowStore) and isinstance(self.other, WindowStore)
        outer = self.outer
        if isinstance(outer, WindowStore):
            # Kafka's order: records left alone whose window has closed go out first
            self._emit_closed(stream_time)
        self.this.put(key, value, t, t)
        matched = False
        for other_t, other_entry in self.other.fetch_entries(
            key, t - self.look_before, t + self.look_after
        ):
            matched = True
            self._emit(value, other_entry[0], max(t, other_t), record)
            if isinstance(outer, WindowStore):
                # the partner waited alone in the outer buffer: it has a partner now
                for start, waiting in list(outer.fetch_entries(key, other_t, other_t)):
                    if waiting[0][0] is not self.this_is_left and waiting[0][1] == other_entry[0]:
                        outer.remove_entry(key, start, waiting)
        if not matched and self.emits_alone and isinstance(outer, WindowStore):
            outer.put(key, (self.this_is_left, value), t, t)

    def _emit_closed(self, stream_time: int) -> None:
        outer = self.outer
        assert isinstance(outer, WindowStore)
        windows = self.windows
        grace = windows.grace_ms
        horizon = stream_time - grace - min(windows.before_ms, windows.after_ms)
        for (key, start), _ in list(outer.fetch_all(-(2**62), horizon)):
            for _, entry in list(outer.fetch_entries(key, start, start)):
                is_left, value = entry[0]
                after = windows.after_ms if is_left else windows.before_ms
                if start + after + grace < stream_time:
                    outer.remove_entry(key, start, entry)
                    left, right = (value, None) if is_left else (None, value)
                    self.forward(Record(key, self.joiner(left, right), start))
