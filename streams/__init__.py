"""The Streams runtime: Processor API, topologies, tasks, state stores, the test driver.

>>> from sluice.streams import Processor, Record, Topology, TestDriver
>>> class Double(Processor):
...     def process(self, record: Record) -> None:
...         self.context.forward(record.with_value(record.value * 2))
>>> t = Topology()
>>> t.add_source("in", ["n"]); t.add_processor("double", Double, "in")
>>> t.add_sink("out", "n2", "double")
>>> with TestDriver(t) as d:
...     d.pipe("n", "k", 21)
...     d.read_output("n2")[0].value
42
"""

from sluice.streams.config import StreamsConfig
from sluice.streams.driver import TestDriver
from sluice.streams.errors import (
    DeserializationError,
    ProcessingError,
    ProductionError,
    RecordError,
    StreamsError,
    TopologyError,
)
from sluice.streams.processor import (
    STREAM_TIME,
    WALL_CLOCK,
    Cancellable,
    Processor,
    ProcessorContext,
    PunctuationType,
    RecordMetadata,
)
from sluice.streams.record import Change, Headers, Record, Windowed
from sluice.streams.runtime.streams import KafkaStreams
from sluice.streams.state import KeyValueStore, SessionStore, StateStore, StoreSpec, WindowStore
from sluice.streams.topology import TimestampExtractor, Topology

__all__ = [
    "STREAM_TIME",
    "WALL_CLOCK",
    "Cancellable",
    "Change",
    "DeserializationError",
    "Headers",
    "KafkaStreams",
    "KeyValueStore",
    "ProcessingError",
    "Processor",
    "ProcessorContext",
    "ProductionError",
    "PunctuationType",
    "Record",
    "RecordError",
    "RecordMetadata",
    "SessionStore",
    "StateStore",
    "StoreSpec",
    "StreamsConfig",
    "StreamsError",
    "TestDriver",
    "TimestampExtractor",
    "Topology",
    "TopologyError",
    "WindowStore",
    "Windowed",
]
