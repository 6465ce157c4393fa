"""The Processor API: the unit every topology is made of.

A processor receives records one at a time in :meth:`Processor.process` and emits any number of
records downstream through its context. The DSL's operators are processors too; user processors
are added with ``KStream.process`` or :meth:`sluice.streams.Topology.add_processor`.

>>> from sluice.streams import Record
>>> class Upper(Processor):
...     def process(self, record: Record) -> None:
...         self.context.forward(record.with_value(record.value.upper()))
>>> PunctuationType.STREAM_TIME.value
'stream_time'
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING

from sluice.streams.record import Record

if TYPE_CHECKING:
    from sluice.streams.state.base import StateStore
    from sluice.streams.state.cache import RecordCache, Size

__all__ = ["Cancellable", "Processor", "ProcessorContext", "PunctuationType", "RecordMetadata"]


class PunctuationType(enum.Enum):
    """What drives a scheduled callback: the task's stream time, or the wall clock."""

    STREAM_TIME = "stream_time"
    WALL_CLOCK = "wall_clock"


STREAM_TIME = PunctuationType.STREAM_TIME
WALL_CLOCK = PunctuationType.WALL_CLOCK


class Cancellable:
    """Returned by :meth:`ProcessorContext.schedule`; ``cancel()`` stops the schedule."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        """Stop calling the punctuator."""
        self.cancelled = True


class RecordMetadata:
    """Where the record being processed came from: topic, partition and offset."""

    __slots__ = ("offset", "partition", "topic")

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset

    def __repr__(self) -> str:
        return f"{self.topic}[{self.partition}]@{self.offset}"


class ProcessorContext(ABC):
    """What a processor can do besides computing: forward, reach stores, schedule, commit."""

    application_id: str
    task_id: str

    @abstractmethod
    def forward(self, record: Record, to: str | None = None) -> None:
        """Send ``record`` to every child (or only to the child named ``to``)."""

    @abstractmethod
    def forwarder(self) -> Callable[[Record], None]:
        """The fastest callable that forwards to every child (what operators call per record)."""

    @abstractmethod
    def get_state_store(self, name: str) -> StateStore:
        """A store this processor was connected to, by name."""

    def record_cache(
        self, store: str, key_size: Size, value_size: Size, *, windowed: bool = False
    ) -> RecordCache | None:
        """A record cache for what the processor owning ``store`` forwards, flushed at every
        commit (:mod:`sluice.streams.state.cache`; ``windowed``: its keys are ``Windowed``);
        None when the task caches nothing."""
        return None

    @abstractmethod
    def schedule(
        self, interval_ms: int, kind: PunctuationType, punctuator: Callable[[int], None]
    ) -> Cancellable:
        """Call ``punctuator(timestamp)`` every ``interval_ms`` of stream or wall-clock time."""

    @abstractmethod
    def commit(self) -> None:
        """Ask for a commit as soon as the current record is done."""

    @property
    @abstractmethod
    def record_metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the input record being processed (None in punctuation)."""

    @property
    @abstractmethod
    def stream_time(self) -> int:
        """The largest timestamp the task has seen (-1 before the first record)."""

    @property
    @abstractmethod
    def wall_clock_time(self) -> int:
        """The task's clock, in ms (moved by hand in the test driver)."""


class Processor(ABC):
    """Override :meth:`process`; :meth:`init` and :meth:`close` are optional hooks."""

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        """Called once before the first record; keep the context, fetch stores, schedule."""
        self.context = context

    @abstractmethod
    def process(self, record: Record) -> None:
        """Handle one record."""

    def close(self) -> None:  # noqa: B027 - an optional hook
        """Called when the task closes (rebalance, shutdown)."""


ProcessorSupplier = Callable[[], Processor]
"""Makes a fresh processor per task."""
