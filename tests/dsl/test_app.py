"""``App``'s settings: the state directory of each ``sluice up`` instance, Kafka's dotted names."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.dsl import App
from sluice.streams import StreamsError


def test_the_state_dir_defaults_to_one_per_sluice_up_instance(monkeypatch):
    monkeypatch.delenv("SLUICE_INSTANCE", raising=False)
    assert App("app").config.state_dir == Path(".sluice/streams")
    monkeypatch.setenv("SLUICE_INSTANCE", "1")
    assert App("app").config.state_dir == Path(".sluice/streams/instance-1")
    assert App("app", state_dir="/data/app").config.state_dir == Path("/data/app")
    assert App("app", **{"state.dir": "/data/b"}).config.state_dir == Path("/data/b")


def test_settings_take_python_and_kafka_names_alike():
    config = App(
        "app",
        num_standby_replicas=1,
        **{"replication.factor": 3, "max.poll.records": 50, "session.timeout.ms": 6000},
    ).config
    assert (
        config.num_standby_replicas,
        config.replication_factor,
        config.max_poll_records,
        config.session_timeout_ms,
    ) == (1, 3, 50, 6000)


def test_the_application_id_is_not_a_setting():
    with pytest.raises(StreamsError, match="application_id is App's first argument"):
        App("app", **{"application.id": "other"})


def test_a_deployments_settings_win_over_the_apps_own(monkeypatch):
    monkeypatch.setenv(
        "SLUICE_STREAMS_CONFIG",
        '{"errors.deadletterqueue.topic.name": "orders-dlq", "commit.interval.ms": "500",'
        ' "processing.exception.handler": "log_and_continue", "state.dir": "/data/x"}',
    )
    config = App("app", commit_interval_ms=1000).config
    assert (
        config.dead_letter_topic,
        config.commit_interval_ms,
        config.processing_exception_handler,
        config.state_dir,
    ) == ("orders-dlq", 500, "log_and_continue", Path("/data/x"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "SLUICE_STREAMS_CONFIG is not JSON"),
        ('{"commit.interval.ms": 5}', "must be a JSON object of strings"),
        ('{"commit.interval.ms": "soon"}', "commit_interval_ms must be a whole number"),
        ('{"consumer_config": "x"}', "consumer_config cannot be given as text"),
        ('{"no.such.setting": "1"}', "unknown Streams setting 'no.such.setting'"),
    ],
)
def test_a_bad_deployment_setting_is_refused_by_name(monkeypatch, text, message):
    monkeypatch.setenv("SLUICE_STREAMS_CONFIG", text)
    with pytest.raises(StreamsError, match=message):
        App("app")
