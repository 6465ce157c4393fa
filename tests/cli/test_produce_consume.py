"""``sluice produce`` and ``sluice consume`` round trips against a real broker."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Producer

if TYPE_CHECKING:
    from tests.cli.conftest import Sluice


def test_stdin_with_keys_round_trips(sluice: Sluice, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(1)
    lines = ["alice:1", "bob:2", "alice:3:with:colons", ":no key", "carol:"]
    produced = sluice("produce", topic, "--key-separator", ":", input="\n".join(lines) + "\n")
    assert produced.code == 0, str(produced)
    assert "produced 5 records" in produced.err, produced.err

    consumed = sluice(
        "consume", topic, "--from-beginning", "--max-messages", "5", "--format", r"%k\t%v"
    )
    assert consumed.code == 0, str(consumed)
    assert consumed.out.splitlines() == [
        "alice\t1", "bob\t2", "alice\t3:with:colons", "\tno key", "carol\t",
    ]  # fmt: skip
    assert "consumed 5 records" in consumed.err


def test_file_with_keys_keeps_each_key_on_one_partition(
    sluice: Sluice, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    topic = topic_factory(3)
    records = [(f"user-{i % 7}", f"event-{i}") for i in range(200)]
    source = tmp_path / "events.txt"
    source.write_text("".join(f"{k}\t{v}\n" for k, v in records))
    produced = sluice(
        "produce", topic, "--file", str(source), "-K", r"\t", "--acks", "1", "-z", "gzip"
    )
    assert produced.code == 0, str(produced)
    assert "produced 200 records" in produced.err, produced.err

    consumed = sluice("consume", topic, "--from-beginning", "-n", "200", "-f", "%p %k %v")
    assert consumed.code == 0, str(consumed)
    rows = [line.split(" ") for line in consumed.out.splitlines()]
    assert sorted((k, v) for _, k, v in rows) == sorted(records)
    partitions_of: dict[str, set[str]] = {}
    for partition, key, _ in rows:
        partitions_of.setdefault(key, set()).add(partition)
    assert all(len(p) == 1 for p in partitions_of.values()), partitions_of
    for partition in {p for ps in partitions_of.values() for p in ps}:  # per-partition order
        values = [int(v.split("-")[1]) for p, _, v in rows if p == partition]
        assert values == sorted(values)


def test_consume_a_partition_from_an_offset(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(2)
    lines = "".join(f"r{i}\n" for i in range(6))
    assert sluice("produce", topic, "--partition", "1", input=lines).code == 0
    assert sluice("produce", topic, "--partition", "0", input="other\n").code == 0

    consumed = sluice("consume", topic, "-p", "1", "-o", "2", "-n", "3", "-f", "%t/%p/%o %v")
    assert consumed.code == 0, str(consumed)
    assert consumed.out.splitlines() == [f"{topic}/1/{i} r{i}" for i in (2, 3, 4)]

    tail = sluice("consume", topic, "-p", "1", "-o", "-2", "-n", "2", "-f", "%o")
    assert tail.code == 0, str(tail)
    assert tail.out.splitlines() == ["4", "5"]


def test_consume_stops_at_the_end_or_after_an_idle_timeout(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(2)
    assert sluice("produce", topic, input="x\ny\nz\n").code == 0

    to_end = sluice("consume", topic, "--from-beginning", "--end")
    assert to_end.code == 0, str(to_end)
    assert sorted(to_end.out.splitlines()) == ["x", "y", "z"]

    started = time.monotonic()
    idle = sluice("consume", topic, "--timeout", "2")  # from the end: nothing new comes
    assert idle.code == 0, str(idle)
    assert idle.out == ""
    assert time.monotonic() - started < 30


def test_format_tokens(sluice: Sluice, topic_factory: Callable[..., str], bootstrap: str) -> None:
    topic = topic_factory(1)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(
        topic, b"value", b"key", timestamp=1_700_000_000_123, headers=[("h1", b"a"), ("h2", None)]
    )
    producer.produce(topic, None, None, timestamp=1_700_000_000_124)
    assert producer.flush(30) == 0
    consumed = sluice(
        "consume", topic, "--from-beginning", "-n", "2",
        "-f", r"%t|%p|%o|%T|%k|%K|%v|%S|%h|100%%\n",
    )  # fmt: skip
    assert consumed.code == 0, str(consumed)
    assert consumed.out.splitlines() == [
        f"{topic}|0|0|1700000000123|key|3|value|5|h1=a,h2|100%",
        f"{topic}|0|1|1700000000124||-1||-1||100%",
    ]


def test_produce_reports_lines_without_a_key_separator(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(1)
    produced = sluice("produce", topic, "-K", "=", input="a=1\nbroken\nb=2\n")
    assert produced.code == 1, str(produced)
    assert "error: line 2: no '=' after the key" in produced.err
    assert "produced 2 records" in produced.err and "1 failed" in produced.err
    consumed = sluice("consume", topic, "--from-beginning", "-n", "2", "-f", "%k=%v")
    assert consumed.out.splitlines() == ["a=1", "b=2"]


def test_partition_out_of_range(sluice: Sluice, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(2)
    produced = sluice("produce", topic, "--partition", "5", input="x\n")
    assert produced.code == 1, str(produced)
    assert f"error: topic '{topic}' has no partition 5" in produced.err
    consumed = sluice("consume", topic, "--partition", "5", "--timeout", "1")
    assert consumed.code == 1, str(consumed)
    assert f"error: topic '{topic}' has no partition 5" in consumed.err


def test_consume_a_missing_topic(sluice: Sluice) -> None:
    result = sluice("consume", "no-such-topic-here", "--timeout", "1")
    assert result.code == 1, str(result)
    assert result.err.strip() == "error: topic 'no-such-topic-here' does not exist"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "%x"], "unknown token %x"),
        (["--offset", "soon"], "expected an offset"),
        (["--offset", "3", "--from-beginning"], "not both"),
        (["--group", "g", "--partition", "0"], "not with --group"),
    ],
)
def test_consume_usage_errors(sluice: Sluice, args: list[str], message: str) -> None:
    result = sluice("consume", "whatever", *args)
    assert result.code == 2, str(result)
    assert message in result.err
