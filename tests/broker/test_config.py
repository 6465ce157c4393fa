"""server.properties parsing and the topic/broker key mapping."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.broker.config import BrokerConfig, parse_listener, parse_topic_value
from sluice.errors import ConfigError


def test_broker_config_from_a_kafka_server_properties(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "broker.id=0\nlisteners=PLAINTEXT://127.0.0.1:9093\nlog.dirs=/tmp/kafka-logs\n"
        "num.partitions=4\nnum.network.threads=3\nlog.retention.hours=168\n"
        "log.segment.bytes=1073741824\nlog.retention.check.interval.ms=300000\n"
        "zookeeper.connect=localhost:2181\nlog.flush.interval.messages=10000\n"
        "log.cleanup.policy=compact\ncompression.type=zstd\n"
    )
    config = BrokerConfig.load(path)
    assert config.listener == ("127.0.0.1", 9093)
    assert config.data_dir == Path("/tmp/kafka-logs")
    assert config.num_partitions == 4
    topic = config.topic_config()
    assert topic["retention.ms"] == 168 * 3_600_000
    assert topic["flush.messages"] == 10000
    assert topic["cleanup.policy"] == ["compact"]
    assert topic["compression.type"] == "zstd"


def test_retention_ms_wins_over_minutes_and_hours() -> None:
    config = BrokerConfig.from_properties(
        {"log.retention.hours": "5", "log.retention.minutes": "7", "log.retention.ms": "1234"}
    )
    assert config.topic_config()["retention.ms"] == 1234
    config = BrokerConfig.from_properties(
        {"log.retention.hours": "5", "log.retention.minutes": "7"}
    )
    assert config.topic_config()["retention.ms"] == 7 * 60_000


def test_overrides_replace_file_values(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("listeners=PLAINTEXT://0.0.0.0:9092\nlog.dir=/a\n")
    config = BrokerConfig.load(path, {"listeners": "PLAINTEXT://127.0.0.1:1234", "log.dir": "/b"})
    assert config.listener == ("127.0.0.1", 1234)
    assert config.data_dir == Path("/b")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "num.partitions=three\n",
            "server.properties:2: num.partitions: expected int, got 'three'",
        ),
        ("auto.create.topics.enable=yes\n", "auto.create.topics.enable: must be true or false"),
        ("log.cleanup.policy=shred\n", "log.cleanup.policy: must be one of delete, compact"),
        ("num.partitions=0\n", "num.partitions: must be at least 1"),
        (
            "retention.ms=5\n",
            "retention.ms: is a topic-level key; the broker-level key is log.retention.ms",
        ),
    ],
)
def test_bad_values_name_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "server.properties"
    path.write_text("# header\n" + text)
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(path)
    assert expected.split(": ", 1)[-1] in str(info.value)
    assert f"{path}:2: " in str(info.value), str(info.value)


def test_unknown_topic_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown topic config"):
        parse_topic_value("retention.millis", "5")


def test_listener_forms() -> None:
    assert parse_listener("127.0.0.1:9092") == ("127.0.0.1", 9092)
    assert parse_listener("PLAINTEXT://[::1]:9092") == ("::1", 9092)
    with pytest.raises(ConfigError):
        parse_listener("localhost")
