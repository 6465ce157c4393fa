"""A history checker for fault tests, in the spirit of Jepsen's Kafka queue checks.

A fault test records what its real clients did while brokers were killed, paused or cut off:
every value a producer *sent*, what the broker *acknowledged* (partition and offset), which
sends *failed* and whether the failure was definite (the record cannot be in the log: Kafka's
errors before the append, such as ``NOT_ENOUGH_REPLICAS``) or not (a timeout, a lost
connection, ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``: it may be there), and every record each
consumer *polled*, in order, with its partition and offset. Values are unique per test, so a
value names one send. :func:`check` then finds, as Jepsen's ``kafka`` workload does:

=======================  ======================================================================
``lost``                 an acknowledged value that no poll read (the test drains every
                         partition at the end, so a value never read is gone)
``duplicated``           a value read at two different positions (a producer retry written
                         twice: an error wherever idempotence or exactly-once is promised)
``inconsistent``         one position read with two values, or read with another value than
                         the one acknowledged there (two leaders wrote one offset)
``failed_but_read``      a value whose send failed definitely, read all the same
``nonmonotonic``         a consumer whose polls of a partition went back or stood still
                         (without a seek it recorded: a rebalance, an assignment)
``skipped``              a consumer that went from offset a to b, jumping over an offset that
                         some other read shows holds a value (markers and aborted records
                         are never read, so they are never "skipped")
=======================  ======================================================================

>>> h = History()
>>> for n in range(3):
...     h.sent(n)
>>> h.acked(0, 0, 10); h.acked(1, 0, 11); h.failed(2, definite=False)
>>> h.polled("c1", 0, 10, 0); h.polled("c1", 0, 11, 1)
>>> report = check(h)
>>> report.ok, report.lost
(True, [])
>>> h.acked(3, 0, 12)
>>> check(h).lost, check(h).ok
([3], False)
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

__all__ = ["History", "Report", "check"]

ANOMALIES = ("lost", "duplicated", "inconsistent", "failed_but_read", "nonmonotonic", "skipped")
"""The fields of :class:`Report` that name anomalies."""

Position = tuple[int, int]
"""(partition, offset) of a record; the topic is the test's."""


@dataclass
class History:
    """What the clients of one fault test did; thread-safe enough for appends from the
    producers' delivery callbacks (list appends are atomic in CPython)."""

    sends: list[Any] = field(default_factory=list)
    acks: dict[Any, Position] = field(default_factory=dict)
    failures: dict[Any, bool] = field(default_factory=dict)
    """value -> whether the failure was definite."""
    polls: list[tuple[str, int, int, Any]] = field(default_factory=list)
    """(consumer, partition, offset, value) in the order each consumer read them."""
    seeks: list[tuple[str, int, int]] = field(default_factory=list)
    """(consumer, partition, index into polls): the consumer's position was moved there
    (assignment, rebalance, seek), so a poll after it may go back."""

    def sent(self, value: Any) -> None:
        """A producer handed ``value`` to its client."""
        self.sends.append(value)

    def acked(self, value: Any, partition: int, offset: int) -> None:
        """The broker acknowledged ``value`` at ``(partition, offset)``."""
        self.acks[value] = (partition, offset)

    def failed(self, value: Any, *, definite: bool) -> None:
        """The send of ``value`` failed; ``definite``: it cannot be in the log."""
        self.failures[value] = definite

    def polled(self, consumer: str, partition: int, offset: int, value: Any) -> None:
        """Consumer ``consumer`` read ``value`` at ``(partition, offset)``."""
        self.polls.append((consumer, partition, offset, value))

    def moved(self, consumer: str, partition: int) -> None:
        """Consumer ``consumer``'s position in ``partition`` was reset (assignment, seek)."""
        self.seeks.append((consumer, partition, len(self.polls)))


@dataclass
class Report:
    """The anomalies :func:`check` found; :attr:`ok` when there are none."""

    lost: list[Any] = field(default_factory=list)
    duplicated: dict[Any, list[Position]] = field(default_factory=dict)
    inconsistent: dict[Position, list[Any]] = field(default_factory=dict)
    failed_but_read: list[Any] = field(default_factory=list)
    nonmonotonic: list[tuple[str, int, int, int]] = field(default_factory=list)
    """(consumer, partition, offset before, offset after)."""
    skipped: list[tuple[str, int, int, int]] = field(default_factory=list)
    """(consumer, partition, offset before, offset after) with a read value in between."""
    acknowledged: int = 0
    read: int = 0

    @property
    def ok(self) -> bool:
        """Whether no anomaly was found."""
        return not any(getattr(self, name) for name in ANOMALIES)

    def ok_but_duplicates(self) -> bool:
        """No anomaly but duplicates: what at-least-once (a non-idempotent producer) allows."""
        return not any(getattr(self, name) for name in ANOMALIES if name != "duplicated")

    def __str__(self) -> str:
        found = {name: getattr(self, name) for name in ANOMALIES if getattr(self, name)}
        head = f"{self.acknowledged} acknowledged, {self.read} distinct values read"
        if not found:
            return f"{head}: no anomaly"
        lines = [f"{head}; anomalies:"]
        for name, items in found.items():
            shown = list(items.items() if isinstance(items, dict) else items)
            more = f" … ({len(shown)} in all)" if len(shown) > 10 else ""
            lines.append(f"  {name}: {shown[:10]}{more}")
        return "\n".join(lines)


def check(history: History) -> Report:
    """Every anomaly of ``history``; see the module docstring."""
    report = Report(acknowledged=len(history.acks))
    positions: dict[Any, set[Position]] = defaultdict(set)
    values_at: dict[Position, set[Any]] = defaultdict(set)
    for _, partition, offset, value in history.polls:
        positions[value].add((partition, offset))
        values_at[(partition, offset)].add(value)
    for value, position in history.acks.items():
        values_at[position].add(value)  # an ack says what is there, as a read does
    report.read = len(positions)
    report.lost = [value for value in history.acks if value not in positions]
    report.duplicated = {
        value: sorted(where) for value, where in positions.items() if len(where) > 1
    }
    report.inconsistent = {
        position: sorted(values, key=repr)
        for position, values in sorted(values_at.items())
        if len(values) > 1
    }
    report.failed_but_read = [
        value for value, definite in history.failures.items() if definite and value in positions
    ]
    occupied: dict[int, list[int]] = defaultdict(list)
    for partition, offset in sorted(values_at):
        occupied[partition].append(offset)
    _check_order(history, occupied, report)
    return report


def _check_order(history: History, occupied: dict[int, list[int]], report: Report) -> None:
    """Each consumer's successive reads of a partition: forward, and over no read value."""
    resets: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for consumer, partition, index in history.seeks:
        resets[index].add((consumer, partition))
    last: dict[tuple[str, int], int] = {}
    for index, (consumer, partition, offset, _) in enumerate(history.polls):
        for key in resets.get(index, ()):
            last.pop(key, None)
        key = (consumer, partition)
        before = last.get(key)
        last[key] = offset
        if before is None:
            continue
        if offset <= before:
            report.nonmonotonic.append((consumer, partition, before, offset))
        elif offset > before + 1 and _holds_value(occupied[partition], before, offset):
            report.skipped.append((consumer, partition, before, offset))


def _holds_value(offsets: list[int], after: int, before: int) -> bool:
    """Whether a read value sits strictly between offsets ``after`` and ``before``."""
    i = bisect_right(offsets, after)
    return i < len(offsets) and offsets[i] < before
