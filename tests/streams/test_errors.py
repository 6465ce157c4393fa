"""Bad input and failing user code, in the test driver: never silent, handled as Kafka Streams does.

A record that cannot be deserialized goes to the deserialization handler, a user function that
raises to the processing handler (KIP-1033), an output record that cannot be serialized or sent
to the production handler: ``log_and_fail`` (the default) stops with an error naming
``topic[partition]@offset``; ``log_and_continue`` logs, counts, skips and writes the input as
read to the dead-letter topic (KIP-1034) with Kafka's ``__streams.errors.*`` headers; a function
or an object with ``handle`` decides per error.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sluice.dsl import App
from sluice.streams import (
    DeserializationError,
    ProcessingError,
    ProductionError,
    RecordError,
    StreamsError,
)

CONTEXT = (
    "__streams.errors.exception",
    "__streams.errors.message",
    "__streams.errors.stacktrace",
    "__streams.errors.topic",
    "__streams.errors.partition",
    "__streams.errors.offset",
)


def divide(value):
    return 10 // value["n"]


def context_of(headers: Any) -> dict[str, str]:
    """The dead-letter context headers (decoded); asserts that there is each of them once."""
    names = [name for name, _ in headers if name.startswith("__streams.errors.")]
    assert names == list(CONTEXT), names
    return {name: value.decode() for name, value in headers if name in CONTEXT}


# -- the three poison records of the issue, under each handler setting ---------------------
POISON = {
    # name: (raw value, expected error class, exception header, message header)
    "bad-json": (b"{not json", DeserializationError, "orjson.JSONDecodeError", "unexpected"),
    "missing-field": (b'{"m": 1}', ProcessingError, "KeyError", "'n'"),
    "failing-function": (
        b'{"n": 0}',
        ProcessingError,
        "ZeroDivisionError",
        "integer division or modulo by zero",
    ),
}
GOOD = b'{"n": 5}'


def app_with(make_app, **settings: Any) -> App:
    app = make_app(**settings)
    app.stream("in").map_values(divide).to("out")
    return app


@pytest.mark.parametrize("poison", sorted(POISON))
@pytest.mark.parametrize(
    "handlers",
    [
        {},
        {"deserialization_exception_handler": "log_and_fail"},
        {"processing_exception_handler": "fail"},
        {
            "default.deserialization.exception.handler": "LogAndFailExceptionHandler",
            "processing.exception.handler": "org.apache.kafka.streams.errors."
            "LogAndFailProcessingExceptionHandler",
        },
    ],
    ids=["default", "log_and_fail", "fail", "kafka-classes"],
)
def test_log_and_fail_stops_on_a_poison_record_naming_it(make_app, out, poison, handlers):
    raw, kind, exception, _ = POISON[poison]
    app = app_with(make_app, dead_letter_topic="dlq", **handlers)
    with app.test_driver() as d:
        d.pipe_raw("in", b"ok", GOOD, timestamp=1)
        with pytest.raises(kind) as caught:
            d.pipe_raw("in", b"bad", raw, timestamp=2)
        error = caught.value
        assert (error.topic, error.partition, error.offset) == ("in", 0, 1)
        assert str(error).startswith("in[0]@1: ")
        assert exception.rpartition(".")[2] in str(error)
        assert error.__cause__ is error.exception
        assert out(d, "out") == [("ok", 2, 1)]
        assert d.read_raw("dlq") == []  # a stopped app dead-letters nothing: it meets it again
        assert d.tasks[0].dropped_records == 0


def _continue_function(error: RecordError) -> bool:
    return True


class _ContinueObject:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def handle(self, error: RecordError) -> str:
        self.seen.append(type(error).__name__)
        return "continue"


@pytest.mark.parametrize("poison", sorted(POISON))
@pytest.mark.parametrize(
    "handlers",
    [
        {
            "deserialization_exception_handler": "log_and_continue",
            "processing_exception_handler": "log_and_continue",
        },
        {
            "deserialization_exception_handler": "continue",
            "processing_exception_handler": "continue",
        },
        {
            "default.deserialization.exception.handler": "LogAndContinueExceptionHandler",
            "processing.exception.handler": "LogAndContinueProcessingExceptionHandler",
        },
        {
            "deserialization_exception_handler": _continue_function,
            "processing_exception_handler": _ContinueObject(),
        },
    ],
    ids=["log_and_continue", "continue", "kafka-classes", "function-and-object"],
)
def test_log_and_continue_dead_letters_a_poison_record_and_goes_on(
    make_app, out, caplog, poison, handlers
):
    raw, kind, exception, message = POISON[poison]
    app = app_with(make_app, **{"errors.deadletterqueue.topic.name": "dlq"}, **handlers)
    with (
        caplog.at_level(logging.WARNING, logger="sluice.streams"),
        app.test_driver(wall_clock_ms=9_000) as d,
    ):
        d.pipe_raw("in", b"ok", GOOD, timestamp=1)
        d.pipe_raw("in", b"bad", raw, timestamp=2, headers=(("trace", b"t-2"),))
        d.pipe_raw("in", b"after", b'{"n": 2}', timestamp=3)
        assert out(d, "out") == [("ok", 2, 1), ("after", 5, 3)]
        [(key, value, timestamp, headers)] = d.read_raw("dlq")
        assert (key, value, timestamp) == (b"bad", raw, 2)  # as read; the record's own time
        assert headers[0] == ("trace", b"t-2")  # its own headers come first
        context = context_of(headers[1:])
        assert context["__streams.errors.exception"] == exception
        assert context["__streams.errors.message"].startswith(message)
        assert context["__streams.errors.stacktrace"].startswith("Traceback (most recent call")
        assert (
            context["__streams.errors.stacktrace"]
            .rstrip()
            .endswith(f"{exception.rpartition('.')[2]}: {context['__streams.errors.message']}")
        )
        assert (
            context["__streams.errors.topic"],
            context["__streams.errors.partition"],
            context["__streams.errors.offset"],
        ) == ("in", "0", "1")
        assert d.tasks[0].dropped_records == 1
        assert d.tasks[0].dropped == 1
    [warning] = caplog.records
    reason = "cannot read record" if kind is DeserializationError else "processing failed"
    assert warning.getMessage().startswith(f"skipping record: in[0]@1: {reason}: ")


def test_continue_without_a_dead_letter_topic_only_logs(make_app, out, caplog):
    app = make_app(deserialization_exception_handler="continue")
    app.stream("in").to("out")
    with caplog.at_level(logging.WARNING, logger="sluice.streams"), app.test_driver() as d:
        d.pipe_raw("in", b"k", b"[", timestamp=1)
        d.pipe("in", "k", 2, timestamp=2)
        assert out(d, "out") == [("k", 2, 2)]
        assert d.tasks[0].dropped_records == 1
        assert d.read_raw("dlq") == []
    assert len(caplog.records) == 1
    assert "in[0]@0" in caplog.records[0].getMessage()


def test_undeserializable_key_fails_too(make_app):
    app = make_app()
    app.stream("in").to("out")
    with (
        app.test_driver() as d,
        pytest.raises(DeserializationError, match=r"^in\[0\]@0: .*Unicode"),
    ):
        d.pipe_raw("in", b"\xff", b"1", timestamp=1)


def test_a_failure_after_a_repartition_names_the_repartition_topic(make_app):
    app = make_app()
    grouped = app.stream("in").group_by(lambda k, v: v["user"], name="by-user")
    grouped.aggregate(lambda: 0, lambda k, v, total: total + 10 // v["n"], name="totals")
    with app.test_driver() as d:
        d.pipe("in", "e1", {"user": "ann", "n": 5}, timestamp=1)
        with pytest.raises(ProcessingError, match=r"^app-by-user-repartition\[0\]@1: "):
            d.pipe("in", "e2", {"user": "ann", "n": 0}, timestamp=2)
        assert d.store("totals").get("ann") == 2


def test_a_handler_function_decides_per_error_and_sees_the_record(make_app, out):
    handled: list[tuple[Any, ...]] = []

    def only_zero_division(error: RecordError) -> bool:
        handled.append(
            (
                error.topic,
                error.partition,
                error.offset,
                error.timestamp,
                error.raw_key,
                error.raw_value,
                error.task_id,
                type(error.exception).__name__,
            )
        )
        return isinstance(error.exception, ZeroDivisionError)

    app = make_app(processing_exception_handler=only_zero_division)
    app.stream("in").map_values(divide).to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", {"n": 0}, timestamp=1)  # handled: go on
        d.pipe("in", "b", {"n": 1}, timestamp=2)
        with pytest.raises(ProcessingError, match=r"^in\[0\]@2: processing failed: KeyError"):
            d.pipe("in", "c", {}, timestamp=3)
        assert out(d, "out") == [("b", 10, 2)]
    assert handled == [
        ("in", 0, 0, 1, b"a", b'{"n":0}', "0_0", "ZeroDivisionError"),
        ("in", 0, 2, 3, b"c", b"{}", "0_0", "KeyError"),
    ]


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


def test_a_handler_that_answers_neither_yes_nor_no_stops_the_app(make_app):
    app = make_app(processing_exception_handler=lambda error: None)
    app.stream("in").map_values(divide).to("out")
    with (
        app.test_driver() as d,
        pytest.raises(
            StreamsError,
            match=r"^the processing exception handler answered None on in\[0\]@0: it must "
            r"return True \(continue\) or False \(fail\)$",
        ),
    ):
        d.pipe("in", "a", {"n": 0}, timestamp=1)


def test_a_raising_handler_stops_the_app_naming_the_record(make_app):
    def broken(error: RecordError) -> bool:
        raise RuntimeError("handler bug")

    app = make_app(deserialization_exception_handler=broken)
    app.stream("in").to("out")
    with app.test_driver() as d, pytest.raises(StreamsError) as caught:
        d.pipe_raw("in", b"k", b"{", timestamp=1)
    assert str(caught.value).startswith(
        "the deserialization exception handler raised RuntimeError('handler bug') on in[0]@0 "
    )
    assert isinstance(caught.value.__cause__, RuntimeError)


# -- production errors ------------------------------------------------------------------
def unserializable(value: Any) -> Any:
    return {value["n"]} if value["n"] == 0 else value["n"]  # a set: JSON cannot write it


def test_an_unserializable_output_record_fails_by_default_naming_the_input(make_app, out):
    app = make_app(dead_letter_topic="dlq")
    app.stream("in").map_values(unserializable).to("out")
    with app.test_driver() as d:
        d.pipe("in", "a", {"n": 1}, timestamp=1)
        with pytest.raises(ProductionError) as caught:
            d.pipe("in", "b", {"n": 0}, timestamp=2)
        assert str(caught.value) == (
            "in[0]@1: cannot serialize the record for out: "
            "TypeError('Type is not JSON serializable: set')"
        )
        assert isinstance(caught.value.exception, TypeError)
        assert out(d, "out") == [("a", 1, 1)]
        assert d.read_raw("dlq") == []


@pytest.mark.parametrize(
    "handler", ["log_and_continue", "continue", _continue_function], ids=["name", "short", "fn"]
)
def test_production_continue_skips_and_dead_letters_the_input(make_app, out, handler):
    app = make_app(**{"production.exception.handler": handler, "dead_letter_topic": "dlq"})
    app.stream("in").map_values(unserializable).to("out")
    with app.test_driver() as d:
        d.pipe_many("in", [("a", {"n": 1}, 1), ("b", {"n": 0}, 2), ("c", {"n": 3}, 3)])
        assert out(d, "out") == [("a", 1, 1), ("c", 3, 3)]
        [(key, value, timestamp, headers)] = d.read_raw("dlq")
        assert (key, value, timestamp) == (b"b", b'{"n":0}', 2)
        context = context_of(headers)
        assert context["__streams.errors.exception"] == "TypeError"
        assert context["__streams.errors.offset"] == "1"
        assert d.tasks[0].dropped_records == 1


def test_default_production_exception_handler_is_log_and_fail(make_app):
    app = make_app(**{"default.production.exception.handler": "DefaultProductionExceptionHandler"})
    app.stream("in").map_values(unserializable).to("out")
    with app.test_driver() as d, pytest.raises(ProductionError, match=r"^in\[0\]@0: "):
        d.pipe("in", "b", {"n": 0}, timestamp=1)


# -- configuration ----------------------------------------------------------------------
def test_an_unknown_handler_is_refused_when_the_app_is_made():
    with pytest.raises(StreamsError) as caught:
        App("app", stores="memory", processing_exception_handler="ignore")
    assert str(caught.value) == (
        "unknown processing exception handler 'ignore': use 'log_and_fail', 'log_and_continue', "
        "LogAndFailProcessingExceptionHandler, LogAndContinueProcessingExceptionHandler, or a "
        "function handler(error) -> bool"
    )


def test_a_handler_class_of_another_kind_is_refused():
    with pytest.raises(StreamsError, match="unknown deserialization exception handler"):
        App("app", deserialization_exception_handler="LogAndContinueProcessingExceptionHandler")


def test_a_handler_that_is_neither_a_name_nor_callable_is_refused():
    with pytest.raises(StreamsError, match=r"must be a name, a function .* not 42"):
        App("app", production_exception_handler=42)


def test_an_unknown_dotted_setting_is_refused():
    with pytest.raises(StreamsError, match=r"^unknown Streams setting 'errors\.tolerance'"):
        App("app", **{"errors.tolerance": "all"})


def test_a_setting_given_under_both_names_is_refused():
    with pytest.raises(
        StreamsError,
        match=r"^dead_letter_topic is given twice: as 'dead_letter_topic' and as "
        r"'errors\.deadletterqueue\.topic\.name'$",
    ):
        App("app", dead_letter_topic="a", **{"errors.deadletterqueue.topic.name": "b"})


def test_kafka_names_reach_the_config():
    app = App(
        "app",
        **{
            "processing.guarantee": "exactly_once_v2",
            "commit.interval.ms": 250,
            "deserialization.exception.handler": "LogAndContinueExceptionHandler",
            "errors.deadletterqueue.topic.name": "app-dlq",
        },
    )
    config = app.config
    assert (
        config.processing_guarantee,
        config.commit_interval_ms,
        config.deserialization_exception_handler,
        config.dead_letter_topic,
    ) == ("exactly_once_v2", 250, "LogAndContinueExceptionHandler", "app-dlq")
