"""``sluice topics``: create, list, describe, alter, delete against a real broker."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.cli.conftest import Result, Sluice


def _section(result: Result, title: str) -> list[list[str]]:
    """The rows (split on runs of 2+ spaces) of one ``describe`` section, header included."""
    lines = result.out.splitlines()
    start = lines.index(title) + 2
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def _configs(result: Result) -> dict[str, tuple[str, str]]:
    return {row[0]: (row[1], row[2]) for row in _section(result, "CONFIGS")[1:]}


def _listed(sluice: Sluice) -> set[str]:
    result = sluice("topics", "list")
    assert result.code == 0, str(result)
    assert result.out.splitlines()[0].split() == ["NAME", "PARTITIONS", "REPLICAS"]
    return {line.split()[0] for line in result.out.splitlines()[1:]}


def test_topic_lifecycle(sluice: Sluice) -> None:
    name = f"orders-{uuid.uuid4().hex[:8]}"
    created = sluice(
        "topics", "create", name, "-p", "3", "-r", "1", "--config", "retention.ms=3600000"
    )
    assert created.code == 0, str(created)
    assert created.out.strip() == f"Created topic {name}."
    assert name in _listed(sluice)
    listed = sluice("topics", "list").out.splitlines()
    assert [line.split() for line in listed if line.startswith(name)] == [[name, "3", "1"]]

    described = sluice("topics", "describe", name)
    assert described.code == 0, str(described)
    summary = dict(row for row in _section(described, "SUMMARY") if len(row) == 2)
    assert summary == {"NAME": name, "PARTITIONS": "3", "REPLICAS": "1"}
    partitions = _section(described, "PARTITIONS")
    assert partitions[0] == [
        "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "EARLIEST", "LATEST"
    ]  # fmt: skip
    assert [row[0] for row in partitions[1:]] == ["0", "1", "2"]
    for row in partitions[1:]:
        assert row[6:] == ["0", "0"], f"an empty partition's offsets, got {row}"
        assert row[3] == row[4] == f"[{row[1]}]", f"one replica, the leader, in sync: {row}"
        assert row[2] == "0" and row[5] == "[]", f"leader epoch 0, no offline replica: {row}"

    configs = _configs(described)
    assert configs["retention.ms"] == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert configs["cleanup.policy"] == ("delete", "DEFAULT_CONFIG")

    altered = sluice(
        "topics", "alter", name, "--config", "cleanup.policy=compact",
        "--delete-config", "retention.ms",
    )  # fmt: skip
    assert altered.code == 0, str(altered)
    assert "set cleanup.policy=compact" in altered.out
    configs = _configs(sluice("topics", "describe", name))
    assert configs["cleanup.policy"] == ("compact", "DYNAMIC_TOPIC_CONFIG")
    assert configs["retention.ms"][1] != "DYNAMIC_TOPIC_CONFIG", configs["retention.ms"]

    deleted = sluice("topics", "delete", name)
    assert deleted.code == 0, str(deleted)
    assert deleted.out.strip() == f"Deleted topic {name}."
    assert name not in _listed(sluice)


def test_create_existing_topic_fails_unless_if_not_exists(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    name = topic_factory()
    again = sluice("topics", "create", name)
    assert again.code == 1, str(again)
    assert again.err.strip() == f"error: topic '{name}' already exists"
    tolerated = sluice("topics", "create", name, "--if-not-exists")
    assert tolerated.code == 0, str(tolerated)


def test_create_with_an_unknown_config_key_fails(sluice: Sluice) -> None:
    name = f"bad-{uuid.uuid4().hex[:8]}"
    result = sluice("topics", "create", name, "--config", "retention.mss=1000")
    assert result.code == 1, str(result)
    assert result.err.startswith(f"error: cannot create topic '{name}': "), result.err
    assert "retention.mss" in result.err, f"the error should name the key: {result.err}"
    assert name not in _listed(sluice)


def test_create_with_an_invalid_config_value_fails(sluice: Sluice) -> None:
    result = sluice("topics", "create", f"bad-{uuid.uuid4().hex[:8]}", "-c", "retention.ms=soon")
    assert result.code == 1, str(result)
    assert "retention.ms" in result.err, result.err


def test_config_without_equals_is_a_usage_error(sluice: Sluice) -> None:
    result = sluice("topics", "create", "whatever", "--config", "retention.ms")
    assert result.code == 2, str(result)
    assert "expected KEY=VALUE" in result.err


def test_describe_a_missing_topic_fails_and_does_not_create_it(sluice: Sluice) -> None:
    name = f"missing-{uuid.uuid4().hex[:8]}"
    result = sluice("topics", "describe", name)
    assert result.code == 1, str(result)
    assert result.err.strip() == f"error: topic '{name}' does not exist"
    assert result.out == ""
    assert name not in _listed(sluice), "describing a topic must not auto-create it"


def test_alter_and_delete_a_missing_topic_fail(sluice: Sluice) -> None:
    name = f"missing-{uuid.uuid4().hex[:8]}"
    altered = sluice("topics", "alter", name, "-c", "retention.ms=1000")
    assert altered.code == 1, str(altered)
    assert altered.err.strip() == f"error: topic '{name}' does not exist"
    deleted = sluice("topics", "delete", name)
    assert deleted.code == 1, str(deleted)
    assert deleted.err.strip() == f"error: topic '{name}' does not exist"
    tolerated = sluice("topics", "delete", name, "--if-exists")
    assert tolerated.code == 0, str(tolerated)


def test_alter_needs_something_to_change(sluice: Sluice, topic_factory: Callable[..., str]) -> None:
    result = sluice("topics", "alter", topic_factory())
    assert result.code == 2, str(result)
    assert "give --config, --delete-config or --partitions" in result.err


def test_alter_adds_partitions_but_never_removes_them(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    name = topic_factory(2)
    grown = sluice("topics", "alter", name, "--partitions", "5")
    assert grown.code == 0, str(grown)
    assert grown.out.strip() == f"Altered topic {name}: partitions 2 -> 5."
    shrunk = sluice("topics", "alter", name, "--partitions", "3")
    assert shrunk.code == 1, str(shrunk)
    assert "partitions can be added, never removed" in shrunk.err
    listed = [line.split() for line in sluice("topics", "list").out.splitlines()]
    assert [name, "5", "1"] in listed


def test_describe_shows_watermarks_after_producing(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    name = topic_factory(2)
    produced = sluice("produce", name, "--partition", "1", input="a\nb\nc\n")
    assert produced.code == 0, str(produced)
    rows = _section(sluice("topics", "describe", name), "PARTITIONS")[1:]
    assert [(row[0], row[6], row[7]) for row in rows] == [("0", "0", "0"), ("1", "0", "3")]
