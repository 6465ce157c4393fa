"""Bad input and failing user code: never silent.

A record that cannot be deserialized goes to the deserialization handler, a user function
that raises to the processing handler: ``"fail"`` (the default) stops with an error naming
``topic[partition]@offset``; ``"continue"`` logs, skips and writes the input bytes to the
dead-letter topic with headers saying where it came from and why; a function decides per error.
"""

from __future__ import annotations

import logging

import pytest

from sluice.dsl import App
from sluice.streams import DeserializationError, ProcessingError, RecordError, StreamsError


def divide(value):
    return 10 // value["n"]


def test_undeserializable_value_fails_by_default_naming_the_record(make_app, out):
    app = make_app()
    app.stream("in").to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", {"n": 1}, timestamp=1)
        with pytest.raises(DeserializationError) as caught:
            d.pipe_raw("in", b"b", b"{not json", timestamp=2)
        error = caught.value
        assert (error.topic, error.partition, error.offset) == ("in", 0, 1)
        assert str(error).startswith("in[0]@1: cannot read record: JSONDecodeError(")
        assert type(error.__cause__).__name__ == "JSONDecodeError"
        assert out(d, "out") == [("a", {"n": 1}, 1)]


def test_undeserializable_key_fails_too(make_app):
    app = make_app()
    app.stream("in").to("out")
    with (
        app.test_driver() as d,
        pytest.raises(DeserializationError, match=r"^in\[0\]@0: .*Unicode"),
    ):
        d.pipe_raw("in", b"\xff", b"1", timestamp=1)


def test_log_and_continue_writes_bad_records_to_the_dead_letter_topic(make_app, out, caplog):
    app = make_app(deserialization_exception_handler="continue", dead_letter_topic="dlq")
    app.stream("in").map_values(lambda v: v["n"]).to("out")
    with (
        caplog.at_level(logging.WARNING, logger="sluice.streams"),
        app.test_driver(wall_clock_ms=9_000) as d,
    ):
        d.pipe("in", "a", {"n": 1}, timestamp=1)
        d.pipe_raw("in", b"b", b"{oops", timestamp=2, headers=(("trace", b"t-2"),))
        d.pipe("in", "c", {"n": 3}, timestamp=3)
        assert out(d, "out") == [("a", 1, 1), ("c", 3, 3)]
        [(key, value, timestamp, headers)] = d.read_raw("dlq")
        assert (key, value, timestamp) == (b"b", b"{oops", 9_000)
        assert headers[:4] == (
            ("trace", b"t-2"),
            ("__streams.errors.topic", b"in"),
            ("__streams.errors.partition", b"0"),
            ("__streams.errors.offset", b"1"),
        )
        assert headers[4][0] == "__streams.errors.message"
        assert headers[4][1].startswith(b"cannot read record: JSONDecodeError(")
        assert len(headers) == 5
        assert d.tasks[0].dropped_records == 1
    assert [r.getMessage()[:32] for r in caplog.records] == ["skipping record: in[0]@1: cannot"]


def test_continue_without_a_dead_letter_topic_only_logs(make_app, out, caplog):
    app = make_app(deserialization_exception_handler="continue")
    app.stream("in").to("out")
    with caplog.at_level(logging.WARNING, logger="sluice.streams"), app.test_driver() as d:
        d.pipe_raw("in", b"k", b"[", timestamp=1)
        d.pipe("in", "k", 2, timestamp=2)
        assert out(d, "out") == [("k", 2, 2)]
        assert d.tasks[0].dropped_records == 1
    assert len(caplog.records) == 1
    assert "in[0]@0" in caplog.records[0].getMessage()


def test_a_raising_user_function_stops_with_the_record_position(make_app, out):
    app = make_app()
    app.stream("in").map_values(divide).to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", {"n": 2}, timestamp=1)
        with pytest.raises(ProcessingError) as caught:
            d.pipe("in", "b", {"n": 0}, timestamp=2)
        error = caught.value
        assert (error.topic, error.partition, error.offset) == ("in", 0, 1)
        assert str(error) == (
            "in[0]@1: processing failed: ZeroDivisionError('integer division or modulo by zero')"
        )
        assert isinstance(error.__cause__, ZeroDivisionError)
        assert out(d, "out") == [("a", 5, 1)]


def test_a_failure_after_a_repartition_names_the_repartition_topic(make_app):
    app = make_app()
    grouped = app.stream("in").group_by(lambda k, v: v["user"], name="by-user")
    grouped.aggregate(lambda: 0, lambda k, v, total: total + 10 // v["n"], name="totals")
    with app.test_driver() as d:
        d.pipe("in", "e1", {"user": "ann", "n": 5}, timestamp=1)
        with pytest.raises(ProcessingError, match=r"^app-by-user-repartition\[0\]@1: "):
            d.pipe("in", "e2", {"user": "ann", "n": 0}, timestamp=2)
        assert d.store("totals").get("ann") == 2


def test_processing_continue_skips_the_record_and_dead_letters_its_input(make_app, out):
    app = make_app(processing_exception_handler="continue", dead_letter_topic="dlq")
    app.stream("in").map_values(divide).to("out")
    with app.test_driver(wall_clock_ms=42) as d:
        d.pipe_many("in", [("a", {"n": 2}, 1), ("b", {"n": 0}, 2), ("c", {"n": 5}, 3)])
        assert out(d, "out") == [("a", 5, 1), ("c", 2, 3)]
        assert d.read_raw("dlq") == [
            (
                b"b",
                b'{"n":0}',
                42,
                (
                    ("__streams.errors.topic", b"in"),
                    ("__streams.errors.partition", b"0"),
                    ("__streams.errors.offset", b"1"),
                    (
                        "__streams.errors.message",
                        b"processing failed: "
                        b"ZeroDivisionError('integer division or modulo by zero')",
                    ),
                ),
            )
        ]


def test_a_handler_function_decides_per_error(make_app, out):
    handled: list[tuple[str, int, str]] = []

    def only_zero_division(error: RecordError) -> bool:
        handled.append((error.topic, error.offset, error.reason.split("(")[0]))
        return "ZeroDivisionError" in error.reason

    app = make_app(processing_exception_handler=only_zero_division)
    app.stream("in").map_values(divide).to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", {"n": 0}, timestamp=1)  # handled: go on
        d.pipe("in", "b", {"n": 1}, timestamp=2)
        with pytest.raises(ProcessingError, match=r"^in\[0\]@2: processing failed: KeyError"):
            d.pipe("in", "c", {}, timestamp=3)
        assert out(d, "out") == [("b", 10, 2)]
    assert handled == [
        ("in", 0, "processing failed: ZeroDivisionError"),
        ("in", 2, "processing failed: KeyError"),
    ]


def test_a_handler_function_sees_the_original_exception(make_app):
    causes: list[BaseException | None] = []

    def remember(error: RecordError) -> bool:
        causes.append(error.__cause__)
        return True

    app = make_app(processing_exception_handler=remember)
    app.stream("in").map_values(divide).to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", {"n": 0}, timestamp=1)
    assert [type(cause) for cause in causes] == [ZeroDivisionError]


def test_a_deserialization_handler_function_gets_the_error(make_app, out):
    seen: list[tuple[str, str, int, str]] = []

    def remember(error: RecordError) -> bool:
        seen.append((type(error).__name__, error.topic, error.offset, error.reason.split("(")[0]))
        return True

    app = make_app(deserialization_exception_handler=remember)
    app.stream("in").to("out")
    with app.test_driver() as d:
        d.pipe_raw("in", b"k", b"{", timestamp=1)
        d.pipe("in", "k", 1, timestamp=2)
        assert out(d, "out") == [("k", 1, 2)]
    assert seen == [("DeserializationError", "in", 0, "cannot read record: JSONDecodeError")]


def test_a_raising_timestamp_extractor_is_a_deserialization_error(make_app):
    app = make_app()
    app.stream("in", timestamp_extractor=lambda record, pt: record.value["at"]).to("out")
    with app.test_driver() as d, pytest.raises(DeserializationError, match="KeyError"):
        d.pipe("in", "k", {}, timestamp=1)


def test_an_unknown_handler_is_refused():
    app = App("app", stores="memory", processing_exception_handler="ignore")  # type: ignore[arg-type]
    app.stream("in").to("out")
    with pytest.raises(StreamsError, match="unknown error handler 'ignore'"):
        app.test_driver()
