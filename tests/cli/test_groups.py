"""``sluice groups`` and ``sluice consume --group`` against the real broker and real consumers.

Offsets are committed and records produced with confluent-kafka directly, so that every lag
the CLI prints can be checked exactly. Live members are confluent-kafka consumers in threads
that never commit (``enable.auto.commit=false``): the offsets stay those the test set.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

if TYPE_CHECKING:
    from tests.cli.conftest import Result, Sluice

Run = Callable[..., "Result"]
WAIT = 60.0
"""Bound of every wait for the group to settle."""


def _group() -> str:
    return f"g-{uuid.uuid4().hex[:10]}"


def _produce(
    bootstrap: str, topic: str, per_partition: dict[int, int], timestamps: list[int] | None = None
) -> None:
    """``per_partition[p]`` records into partition p; record i gets ``timestamps[i]`` if given."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    failed: list[Any] = []
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(
                topic,
                f"r{i}".encode(),
                partition=partition,
                on_delivery=lambda err, _msg: failed.append(err) if err else None,
                timestamp=timestamps[i] if timestamps else 0,  # 0: now
            )
    assert producer.flush(30) == 0, "records still in flight after 30s"
    assert not failed, failed


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` without joining it (allowed while it has no members)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        answer = consumer.commit(offsets=tps, asynchronous=False)
        assert answer is not None
        assert all(tp.error is None for tp in answer), answer
    finally:
        consumer.close()


def _committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group)
    answer = admin.list_consumer_group_offsets([request], request_timeout=10)[group].result(20)
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or ()}


def _wait_until(condition: Callable[[], Any], what: Callable[[], str]) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {WAIT:g}s: {what()}")


@contextmanager
def _members(bootstrap: str, group: str, topic: str, partitions: int) -> Iterator[list[str]]:
    """Two consumers in ``group`` until the block ends; yields their client ids once the group
    is Stable with every partition assigned. They read but never commit."""
    stop = threading.Event()
    errors: list[BaseException] = []
    client_ids = ["member-0", "member-1"]

    def member(client_id: str) -> None:
        try:
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": group,
                    "client.id": client_id,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                }
            )
            consumer.subscribe([topic])
            while not stop.is_set():
                consumer.poll(0.1)
            consumer.close()  # leaves the group
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=member, args=(c,), daemon=True) for c in client_ids]
    for thread in threads:
        thread.start()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    last: list[Any] = [None]

    def settled() -> bool:
        description = admin.describe_consumer_groups([group], request_timeout=5)[group].result(10)
        last[0] = description
        assigned = [tp for m in description.members for tp in m.assignment.topic_partitions]
        return (
            description.state == ConsumerGroupState.STABLE
            and len(description.members) == 2
            and len(assigned) == partitions
        )

    try:
        _wait_until(settled, lambda: f"group {group} stable with 2 members: {vars(last[0])}")
        yield client_ids
    finally:
        stop.set()
        for thread in threads:
            thread.join(WAIT)
        assert not errors, errors


def _rows(result: Result, title: str | None = None) -> list[list[str]]:
    """The rows of a table (of one ``describe`` section), header included, split on 2+ spaces."""
    lines = result.out.splitlines()
    if title is not None:
        lines = lines[lines.index(title) + 2 :]
    rows = []
    for line in lines:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def _summary(result: Result) -> dict[str, str]:
    return {row[0]: row[1] if len(row) > 1 else "" for row in _rows(result, "SUMMARY")}


def _offsets(result: Result) -> dict[tuple[str, int], list[str]]:
    rows = _rows(result, "OFFSETS")
    assert rows[0] == [
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID",
    ]  # fmt: skip
    return {(row[0], int(row[1])): row[2:] for row in rows[1:]}


def _reset(result: Result) -> dict[tuple[str, int], tuple[str, str]]:
    rows = _rows(result)
    assert rows[0] == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"], result.out
    return {(row[0], int(row[1])): (row[2], row[3]) for row in rows[1:]}


def _listed(sluice: Sluice) -> dict[str, list[str]]:
    result = sluice("groups", "list")
    assert result.code == 0, str(result)
    rows = _rows(result)
    assert rows[0] == ["GROUP", "STATE", "PROTOCOL-TYPE"], result.out
    return {row[0]: row[1:] for row in rows[1:]}


def test_list_and_describe_a_live_group_with_exact_lag(
    sluice: Sluice, bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(4)
    group = _group()
    _produce(bootstrap, topic, {0: 10, 1: 7, 2: 5})  # partition 3 stays empty
    _commit(bootstrap, group, {(topic, 0): 4, (topic, 1): 7, (topic, 3): 0})  # 2: never

    with _members(bootstrap, group, topic, partitions=4) as client_ids:
        assert _listed(sluice).get(group) == ["Stable", "consumer"]

        described = sluice("groups", "describe", group)
        assert described.code == 0, str(described)
        summary = _summary(described)
        assert summary["GROUP"] == group
        assert summary["STATE"] == "Stable"
        assert summary["ASSIGNOR"] == "range"  # librdkafka's default: range,roundrobin
        assert summary["MEMBERS"] == "2"
        assert summary["TOTAL-LAG"] == str(6 + 0 + 0), summary
        assert re.fullmatch(r"\d+ \(127\.0\.0\.1:\d+\)", summary["COORDINATOR"]), summary

        members = _rows(described, "MEMBERS")
        assert members[0] == ["MEMBER-ID", "CLIENT-ID", "HOST", "INSTANCE-ID", "PARTITIONS"]
        assert [row[1] for row in members[1:]] == client_ids
        owner: dict[tuple[str, int], str] = {}
        for member_id, client_id, host, instance, partitions in members[1:]:
            assert member_id.startswith(client_id), member_id
            assert "127.0.0.1" in host and instance == "-", members
            name, _, ids = partitions.partition(":")
            assert name == topic, partitions
            owner.update({(topic, int(p)): member_id for p in ids.split(",")})
        assert sorted(owner) == [(topic, p) for p in range(4)], owner

        offsets = _offsets(described)
        assert {tp: row[:3] for tp, row in offsets.items()} == {
            (topic, 0): ["4", "10", "6"],
            (topic, 1): ["7", "7", "0"],
            (topic, 2): ["-", "5", "-"],  # assigned, never committed
            (topic, 3): ["0", "0", "0"],
        }
        assert {tp: row[3] for tp, row in offsets.items()} == owner

        # While the group has members, its offsets cannot be reset nor the group deleted.
        refused = sluice("groups", "reset-offsets", group, "-t", topic, "--to-earliest")
        assert refused.code == 1, str(refused)
        assert refused.err.strip() == (
            f"error: assignments can only be reset if the group {group!r} is inactive, but the "
            "current state is Stable (2 members); stop its consumers first"
        )
        deleted = sluice("groups", "delete", group)
        assert deleted.code == 1, str(deleted)
        assert deleted.err.strip() == (
            f"error: cannot delete group {group!r}: it has active members; stop them first "
            "(NON_EMPTY_GROUP)"
        )

    assert _committed(bootstrap, group) == {(topic, 0): 4, (topic, 1): 7, (topic, 3): 0}
    after = sluice("groups", "describe", group)
    assert after.code == 0, str(after)
    assert _summary(after)["STATE"] == "Empty"
    assert _summary(after)["MEMBERS"] == "0"
    assert _rows(after, "MEMBERS")[1:] == []
    assert {tp: row for tp, row in _offsets(after).items()} == {
        (topic, 0): ["4", "10", "6", "-"],
        (topic, 1): ["7", "7", "0", "-"],
        (topic, 3): ["0", "0", "0", "-"],
    }
    assert _listed(sluice).get(group) == ["Empty", "consumer"]


def test_reset_offsets_in_every_mode(
    sluice: Sluice, bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(2)
    group = _group()
    # Ten records a minute apart, an hour ago (recent enough for any retention).
    base = (int(time.time()) // 60 - 60) * 60_000
    stamps = [base + i * 60_000 for i in range(10)]
    _produce(bootstrap, topic, {0: 10, 1: 10}, timestamps=stamps)
    _commit(bootstrap, group, {(topic, 0): 5, (topic, 1): 5})

    def reset(*args: str) -> Result:
        result = sluice("groups", "reset-offsets", group, *args)
        assert result.code == 0, str(result)
        return result

    def current() -> dict[int, int]:
        return {p: o for (t, p), o in _committed(bootstrap, group).items() if t == topic}

    dry = reset("-t", topic, "--to-earliest", "--dry-run")
    assert _reset(dry) == {(topic, 0): ("5", "0"), (topic, 1): ("5", "0")}
    assert "dry run" in dry.err, dry.err
    assert current() == {0: 5, 1: 5}, "--dry-run changed the offsets"

    assert _reset(reset("-t", topic, "--to-earliest")) == {
        (topic, 0): ("5", "0"), (topic, 1): ("5", "0"),
    }  # fmt: skip
    assert current() == {0: 0, 1: 0}

    reset("-t", topic, "--to-latest")
    assert current() == {0: 10, 1: 10}

    reset("-t", topic, "--to-offset", "3")
    assert current() == {0: 3, 1: 3}

    beyond = reset("-t", f"{topic}:1", "--to-offset", "99")  # clamped to the log end
    assert _reset(beyond) == {(topic, 1): ("3", "10")}
    assert f"{topic}:1: new offset 99 is after the latest offset 10; using 10" in beyond.err
    assert current() == {0: 3, 1: 10}

    reset("-t", topic, "--shift-by", "-2")
    assert current() == {0: 1, 1: 8}
    reset("-t", f"{topic}:0", "--shift-by", "-50")  # clamped to the log start
    assert current() == {0: 0, 1: 8}
    reset("--all-topics", "--shift-by", "4")
    assert current() == {0: 4, 1: 10}

    # The first record at or after the time: 12:06:30 → record 7 (12:07), with a zone …
    moment = datetime.fromtimestamp((stamps[6] + 30_000) / 1000, tz=UTC)
    at = reset("-t", topic, "--to-datetime", moment.isoformat())
    assert _reset(at) == {(topic, 0): ("4", "7"), (topic, 1): ("10", "7")}
    # … or exactly a record's time, as local time without a zone, or as UTC with Z.
    naive = datetime.fromtimestamp(stamps[2] / 1000).replace(tzinfo=None).isoformat()
    reset("-t", topic, "--to-datetime", naive)
    assert current() == {0: 2, 1: 2}
    utc = datetime.fromtimestamp(stamps[5] / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    reset("-t", f"{topic}:1", "--to-datetime", utc)
    assert current() == {0: 2, 1: 5}
    reset("-t", topic, "--to-datetime", "2999-01-01T00:00:00+00:00")  # after every record
    assert current() == {0: 10, 1: 10}


def test_reset_offsets_errors(
    sluice: Sluice, bootstrap: str, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(2)
    group = _group()
    _produce(bootstrap, topic, {0: 3})
    _commit(bootstrap, group, {(topic, 0): 1})

    cases = {
        ("-t", f"{topic}:1", "--shift-by", "1"): (
            f"error: cannot shift the offset of {topic}:1: the group has no committed offset "
            "for it (use another mode for that partition)"
        ),
        ("-t", f"{topic}:0,7", "--to-earliest"): f"error: topic {topic!r} has no partition 7 "
        "(it has 2)",
        ("-t", "no-such-topic", "--to-earliest"): "error: topic 'no-such-topic' does not exist",
    }
    for args, message in cases.items():
        result = sluice("groups", "reset-offsets", group, *args)
        assert (result.code, result.err.strip()) == (1, message), str(result)
    assert _committed(bootstrap, group) == {(topic, 0): 1}

    unknown = sluice("groups", "reset-offsets", _group(), "--all-topics", "--to-earliest")
    assert unknown.code == 1, str(unknown)
    assert "has no committed offsets to reset" in unknown.err

    # A group that does not exist yet gets its offsets, as with Kafka's tool.
    fresh = _group()
    created = sluice("groups", "reset-offsets", fresh, "-t", f"{topic}:0", "--to-offset", "2")
    assert created.code == 0, str(created)
    assert _reset(created) == {(topic, 0): ("-", "2")}
    assert _committed(bootstrap, fresh) == {(topic, 0): 2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-t", "t"], "give exactly one of --to-earliest"),
        (["-t", "t", "--to-earliest", "--to-latest"], "give exactly one of --to-earliest"),
        (["--to-latest"], "give --topic (repeatable) or --all-topics"),
        (["-t", "t", "--all-topics", "--to-latest"], "give --topic (repeatable) or --all-topics"),
        (["-t", "t", "--to-datetime", "yesterday"], "expected an ISO 8601 date-time"),
        (["-t", "t:x", "--to-latest"], "expected TOPIC:P,P with partition numbers"),
        (["-t", "t", "--to-offset", "-1"], "--to-offset"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_reset_offsets_usage_errors(run: Run, args: list[str], message: str) -> None:
    result = run("groups", "reset-offsets", "g", *args, "-b", "127.0.0.1:1")
    assert result.code == 2, str(result)
    assert message in re.sub(r"\s*│\s*", " ", result.err), result.err


def test_delete_a_group(sluice: Sluice, bootstrap: str, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(1)
    group = _group()
    _produce(bootstrap, topic, {0: 2})
    _commit(bootstrap, group, {(topic, 0): 2})
    assert group in _listed(sluice)

    deleted = sluice("groups", "delete", group)
    assert deleted.code == 0, str(deleted)
    assert deleted.out.strip() == f"Deleted consumer group {group}."
    assert group not in _listed(sluice)
    assert _committed(bootstrap, group) == {}

    again = sluice("groups", "delete", group)
    assert again.code == 1, str(again)
    assert again.err.strip() == f"error: consumer group {group!r} does not exist"


def test_describe_an_unknown_group(sluice: Sluice) -> None:
    result = sluice("groups", "describe", "no-such-group")
    assert result.code == 1, str(result)
    assert result.err.strip() == "error: consumer group 'no-such-group' does not exist"
    assert result.out == ""


@pytest.mark.parametrize("args", [["list"], ["describe", "g"], ["delete", "g"]], ids=" ".join)
def test_unreachable_broker(run: Run, args: list[str]) -> None:
    result = run("groups", *args, "-b", "127.0.0.1:1", timeout=30)
    assert result.code == 1, str(result)
    assert result.err.startswith("error: cannot reach a broker at 127.0.0.1:1"), result.err


def test_consume_with_a_group_commits_what_was_printed(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(1)
    group = _group()
    lines = "".join(f"r{i}\n" for i in range(10))
    assert sluice("produce", topic, input=lines).code == 0

    first = sluice("consume", topic, "-g", group, "--from-beginning", "-n", "4")
    assert first.code == 0, str(first)
    assert first.out.splitlines() == ["r0", "r1", "r2", "r3"]
    described = sluice("groups", "describe", group)
    assert described.code == 0, str(described)
    assert _offsets(described) == {(topic, 0): ["4", "10", "6", "-"]}

    # The same group resumes after the committed offset; --from-beginning only applies to a
    # group without one (Kafka's auto.offset.reset).
    rest = sluice("consume", topic, "-g", group, "--from-beginning", "-n", "6", "-f", "%o %v")
    assert rest.code == 0, str(rest)
    assert rest.out.splitlines() == [f"{i} r{i}" for i in range(4, 10)]
    assert _offsets(sluice("groups", "describe", group)) == {(topic, 0): ["10", "10", "0", "-"]}
