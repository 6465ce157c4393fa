"""What the ``sluice groups`` commands share: the admin requests about a group, the names of
group states, and how ``reset-offsets`` reads its options and computes new offsets."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import typer
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from sluice import clients
from sluice.cli._common import Connection, describe_error, error_of, make_client, parse_pairs, warn
from sluice.exit_codes import EXIT_USAGE, CliError

Partition = tuple[str, int]

STATES = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
}
"""Kafka's names of the group states, as its tools print them."""
INACTIVE = {ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD}
"""States in which a group's offsets may be reset: no member can overwrite them."""


class GroupAdmin:
    """An admin client, its connection watcher and the group requests the commands make."""

    def __init__(self, bootstrap: str, client_config: list[str] | None, timeout: float) -> None:
        self.connection = Connection(bootstrap, timeout)
        self.timeout = timeout
        overrides = parse_pairs(client_config, "-X")
        self.client = make_client(
            clients.admin,
            bootstrap,
            {"client.id": "sluice-cli", "error_cb": self.connection.error_cb, **overrides},
        )
        self.connection.metadata(self.client)  # unreachable: a clear error before anything else

    @property
    def options(self) -> dict[str, float]:
        return {"request_timeout": self.timeout}

    def wait(self, future: concurrent.futures.Future[Any]) -> Any:
        """The result of an admin request; raises what the broker answered."""
        try:
            return future.result(timeout=self.timeout + 5)
        except concurrent.futures.TimeoutError:
            raise self.no_answer() from None
        except KafkaException as exc:
            error = error_of(exc)
            if error is not None and error.code() == KafkaError._TIMED_OUT:
                raise self.no_answer() from None
            raise

    def no_answer(self) -> CliError:
        return CliError(
            f"no answer from {self.connection.bootstrap} within {self.timeout:g}s (--timeout); "
            "does the broker have a group coordinator?"
        )

    def describe(self, group: str) -> Any | None:
        """The group's ``ConsumerGroupDescription``; ``None`` if the group does not exist."""
        try:
            futures = self.client.describe_consumer_groups([group], **self.options)
            description = self.wait(futures[group])
        except KafkaException as exc:
            error = error_of(exc)
            if error is not None and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
                return None
            raise CliError(group_error(group, exc, "describe")) from None
        except (ValueError, TypeError) as exc:
            raise CliError(f"group {group!r}: {exc}", exit_code=EXIT_USAGE) from None
        if description.state == ConsumerGroupState.DEAD:
            return None
        return description

    def committed(
        self, group: str, partitions: Iterable[Partition] | None = None
    ) -> dict[Partition, int]:
        """The group's committed offsets (of ``partitions``, or all); absent if none."""
        wanted = [TopicPartition(t, p) for t, p in partitions] if partitions is not None else None
        request = ConsumerGroupTopicPartitions(group, wanted)
        try:
            futures = self.client.list_consumer_group_offsets([request], **self.options)
            answer = self.wait(futures[group])
        except KafkaException as exc:
            raise CliError(group_error(group, exc, "fetch the offsets of")) from None
        offsets: dict[Partition, int] = {}
        for tp in answer.topic_partitions or ():
            if tp.error is not None:
                warn(f"{tp.topic}:{tp.partition}: {describe_error(tp.error)}")
            elif tp.offset >= 0:
                offsets[tp.topic, tp.partition] = tp.offset
        return offsets

    def log_offsets(self, partitions: Iterable[Partition], spec: Any) -> dict[Partition, int]:
        """ListOffsets of each partition for ``spec``; partitions the broker failed are absent."""
        request = {TopicPartition(t, p): spec for t, p in partitions}
        if not request:
            return {}
        offsets: dict[Partition, int] = {}
        for tp, future in self.client.list_offsets(request, **self.options).items():
            try:
                offsets[tp.topic, tp.partition] = self.wait(future).offset
            except KafkaException as exc:
                warn(f"{tp.topic}:{tp.partition}: cannot list offsets: {exc.args[0].str()}")
        return offsets

    def partitions_of(self, topic: str) -> list[int]:
        """The partition ids of ``topic``, or ``error: topic 'name' does not exist``."""
        metadata = self.connection.metadata(self.client, topic).topics.get(topic)
        error = metadata.error if metadata is not None else None
        if metadata is None or (error and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise CliError(f"topic {topic!r} does not exist")
        if error is not None and error.code() != KafkaError.LEADER_NOT_AVAILABLE:
            raise CliError(f"topic {topic!r}: {describe_error(error)}")
        return sorted(metadata.partitions)


def group_error(group: str, exc: Exception, doing: str) -> str:
    error = error_of(exc)
    if error is None:
        return f"cannot {doing} group {group!r}: {exc}"
    if error.code() == KafkaError.GROUP_ID_NOT_FOUND:
        return f"consumer group {group!r} does not exist"
    if error.code() == KafkaError.NON_EMPTY_GROUP:
        return (
            f"cannot {doing} group {group!r}: it has active members; stop them first "
            f"({error.name()})"
        )
    return f"cannot {doing} group {group!r}: {describe_error(error)}"


def state_name(state: Any) -> str:
    """Kafka's name of a group state (``Stable``, ``Empty``, …).

    >>> state_name(ConsumerGroupState.PREPARING_REBALANCING), state_name(None)
    ('PreparingRebalance', 'Unknown')
    """
    return STATES.get(state, "Unknown")


def partition_lags(
    committed: Mapping[Partition, int], ends: Mapping[Partition, int]
) -> dict[Partition, int]:
    """The lag of each partition with a committed offset and a known log end offset: the log
    end offset (high watermark) minus the committed offset, as ``kafka-consumer-groups.sh``.

    >>> partition_lags({("t", 0): 3, ("t", 1): 5}, {("t", 0): 10, ("u", 0): 4})
    {('t', 0): 7}
    """
    return {tp: ends[tp] - offset for tp, offset in committed.items() if tp in ends}


def format_partitions(partitions: Iterable[Partition]) -> str:
    """``orders:0,1;audit:2``: each topic with its partitions (the ``--topic`` syntax).

    >>> format_partitions([("orders", 1), ("audit", 2), ("orders", 0)])
    'audit:2;orders:0,1'
    """
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return ";".join(
        f"{topic}:{','.join(str(p) for p in sorted(ids))}"
        for topic, ids in sorted(by_topic.items())
    )


def parse_topic(text: str) -> tuple[str, list[int] | None]:
    """``orders`` → every partition; ``orders:0,2`` → partitions 0 and 2.

    >>> parse_topic("orders"), parse_topic("orders:2,0")
    (('orders', None), ('orders', [0, 2]))
    """
    topic, sep, ids = text.partition(":")
    if not topic:
        raise typer.BadParameter(f"expected TOPIC or TOPIC:P,P, got {text!r}", param_hint="--topic")
    if not sep:
        return topic, None
    try:
        partitions = sorted({int(p) for p in ids.split(",")})
    except ValueError:
        raise typer.BadParameter(
            f"expected TOPIC:P,P with partition numbers, got {text!r}", param_hint="--topic"
        ) from None
    if partitions[0] < 0:
        raise typer.BadParameter(f"negative partition in {text!r}", param_hint="--topic")
    return topic, partitions


def parse_datetime(text: str) -> int:
    """ISO 8601 → milliseconds since the epoch; without a zone, the local time is meant.

    >>> parse_datetime("2024-05-01T12:00:00Z"), parse_datetime("2024-05-01T14:00:00.250+02:00")
    (1714564800000, 1714564800250)
    """
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"expected an ISO 8601 date-time such as 2024-05-01T12:00:00 or "
            f"2024-05-01T12:00:00+02:00, got {text!r}",
            param_hint="--to-datetime",
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # a naive time is local time
    return round(moment.timestamp() * 1000)


@dataclass(frozen=True)
class ResetPlan:
    """How to compute the new offset of one partition from the log and the group."""

    mode: str
    value: int = 0

    def new_offset(
        self, tp: Partition, current: int | None, earliest: int, latest: int, at_time: int | None
    ) -> int:
        if self.mode == "earliest":
            return earliest
        if self.mode == "latest":
            return latest
        if self.mode == "offset":
            wanted = self.value
        elif self.mode == "shift":
            if current is None:
                raise CliError(
                    f"cannot shift the offset of {tp[0]}:{tp[1]}: the group has no committed "
                    "offset for it (use another mode for that partition)"
                )
            wanted = current + self.value
        else:  # datetime: the first offset at or after the time, or the end if none
            wanted = latest if at_time is None or at_time < 0 else at_time
        if wanted < earliest:
            warn(
                f"{tp[0]}:{tp[1]}: new offset {wanted} is before the earliest offset {earliest}; "
                f"using {earliest}"
            )
            return earliest
        if wanted > latest:
            warn(
                f"{tp[0]}:{tp[1]}: new offset {wanted} is after the latest offset {latest}; "
                f"using {latest}"
            )
            return latest
        return wanted
