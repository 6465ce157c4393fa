"""The sink's fused function and its process(): which way a record reaches the collector, and
the same suite over every form (pure, no broker)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaException

from sluice.serde import Serde
from sluice.streams import Record, StreamsError
from sluice.streams.fusion import Sink, SinkFailure, sources_of
from sluice.streams.topology import Topology


class Collector:
    """Records what reaches it through send() and, when it has one, raw_produce()."""

    def __init__(self, *, producer: bool) -> None:
        self.sent: list[tuple[Any, ...]] = []
        self.produced: list[tuple[Any, ...]] = []
        if producer:
            self.raw_produce = lambda *args: self.produced.append(args)

    def send(self, *record: Any) -> None:
        self.sent.append(record)

    def partitions_of(self, topic: str) -> int:
        return 4


def _emit(collector: Collector, partitioner: Any = None) -> Any:
    topology = Topology()
    topology.add_source("in", ["words"])
    topology.add_sink("out", "counts", "in", partitioner=partitioner)
    sink = Sink(topology.nodes["out"], collector)
    return sources_of(topology, ["in", "out"], {"out": sink})["words"].emit


def test_a_producer_gets_records_without_headers_straight_from_the_sink():
    collector = Collector(producer=True)
    emit = _emit(collector)
    emit("k", 1, 7, ())
    emit("k", 2, 8, (("h", b"v"),))
    assert collector.produced == [("counts", b"1", b"k", -1, None, None, 7)]
    assert collector.sent == [("counts", b"k", b"2", 8, (("h", b"v"),), None)]


def test_a_custom_partitioner_chooses_the_partition_of_every_record():
    seen = []

    def partitioner(key: Any, value: Any, partitions: int) -> int:
        seen.append((key, value, partitions))
        return value % partitions

    for producer in (True, False):
        collector = Collector(producer=producer)
        emit = _emit(collector, partitioner)
        emit("a", 5, 1, ())
        emit(None, 2, 2, ())
        assert collector.produced == []
        assert collector.sent == [
            ("counts", b"a", b"5", 1, (), 1),
            ("counts", None, b"2", 2, (), 2),
        ]
    assert seen == [("a", 5, 4), (None, 2, 4)] * 2


def test_without_a_producer_or_partitioner_records_go_to_send_with_no_partition():
    collector = Collector(producer=False)
    _emit(collector)("k", None, 3, ())
    assert collector.sent == [("counts", b"k", None, 3, (), None)]


# -- the sink's three forms: one suite over each ---------------------------------------------
# ``producer``: fused, straight to the producer's own produce (records without headers);
# ``send``: fused, through the collector's send(); ``process``: Sink.process, a Record at a time
# (what a processor that is not fused forwards to).
SINK_FORMS = ["producer", "send", "process"]


class Failing(Collector):
    """A collector whose send (and raw_produce) raise ``error``."""

    def __init__(self, error: Exception, *, producer: bool) -> None:
        super().__init__(producer=producer)
        self.error = error
        if producer:
            self.raw_produce = self._raise

    def _raise(self, *args: Any) -> None:
        raise self.error

    def send(self, *record: Any) -> None:
        self._raise()


def _sink_form(form: str, collector: Collector, value_serde: Any = None) -> Any:
    """The sink ``counts`` in ``form``, as a function of a record's fields."""
    topology = Topology()
    topology.add_source("in", ["words"])
    if value_serde is None:
        topology.add_sink("out", "counts", "in")
    else:
        topology.add_sink("out", "counts", "in", value_serde=value_serde)
    sink = Sink(topology.nodes["out"], collector)
    if form == "process":
        return lambda key, value, timestamp, headers: sink.process(
            Record(key, value, timestamp, headers)
        )
    return sources_of(topology, ["in", "out"], {"out": sink})["words"].emit


@pytest.fixture(params=SINK_FORMS)
def sink_form(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_every_sink_form_keeps_key_value_timestamp_and_headers(sink_form):
    collector = Collector(producer=sink_form == "producer")
    emit = _sink_form(sink_form, collector)
    emit("k", 1, 7, ())
    emit(None, None, 8, (("h", b"v"), ("h", None)))
    written = [(r[0], r[1], r[2], r[3], r[4]) for r in collector.sent] + [
        (r[0], r[2], r[1], r[6], ()) for r in collector.produced
    ]
    assert sorted(written, key=lambda r: r[3]) == [
        ("counts", b"k", b"1", 7, ()),
        ("counts", None, None, 8, (("h", b"v"), ("h", None))),
    ]


def test_every_sink_form_reports_a_serializer_failure_naming_the_topic(sink_form):
    def refuse(value: Any) -> bytes:
        raise ValueError("not this one")

    emit = _sink_form(sink_form, Collector(producer=True), Serde(refuse, bytes, "refusing"))
    with pytest.raises(SinkFailure) as caught:
        emit("k", 1, 7, ())
    assert str(caught.value) == "cannot serialize the record for counts: ValueError('not this one')"
    assert caught.value.topic == "counts"
    assert isinstance(caught.value.error, ValueError)
    assert caught.value.__cause__ is caught.value.error


@pytest.mark.parametrize("headers", [(), (("h", b"v"),)])
def test_every_sink_form_reports_a_refused_send_naming_the_topic(sink_form, headers):
    refused = KafkaException("Message size too large")
    emit = _sink_form(sink_form, Failing(refused, producer=sink_form == "producer"))
    with pytest.raises(SinkFailure) as caught:
        emit("k", 1, 7, headers)
    assert str(caught.value).startswith("cannot send the record for counts: ")
    assert caught.value.error is refused


def test_every_sink_form_lets_a_streams_error_through_as_it_is(sink_form):
    stuck = StreamsError("cannot send to counts: the producer queue stays full")
    emit = _sink_form(sink_form, Failing(stuck, producer=False))
    with pytest.raises(StreamsError) as caught:
        emit("k", 1, 7, ())
    assert caught.value is stuck
