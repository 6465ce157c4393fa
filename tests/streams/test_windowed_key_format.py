"""Kafka's windowed key format on topics (TimeWindowedSerde / SessionWindowedSerde bytes):
golden bytes from Kafka's documented layout, round trips, and the DSL option."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.dsl import App, SessionWindows, SlidingWindows, TimeWindows, Windowed
from sluice.serde import INT64, STRING, SerdeError
from sluice.streams.errors import TopologyError
from sluice.streams.windowed_serdes import session_windowed, time_windowed

LONG_MAX = 2**63 - 1


def test_time_windowed_golden_bytes() -> None:
    # WindowKeySchema.toBinary: serialized key, then putLong(window start)
    serde = time_windowed(STRING, 60_000)
    data = serde.serialize(Windowed("user-1", 1_700_000_040_000, 1_700_000_100_000))
    assert data == b"user-1" + bytes.fromhex("0000018bcfe60440")
    assert data[-8:] == struct.pack(">q", 1_700_000_040_000)
    assert serde.deserialize(data) == Windowed("user-1", 1_700_000_040_000, 1_700_000_100_000)
    # Serdes.Long() inner key: 8 bytes of key, 8 of start
    assert time_windowed(INT64, 10).serialize(Windowed(7, 20, 30)) == bytes.fromhex(
        "00000000000000070000000000000014"
    )


def test_time_windowed_without_a_size_reads_an_open_end_as_kafka() -> None:
    serde = time_windowed(STRING)
    assert serde.deserialize(b"k" + struct.pack(">q", 5)) == Windowed("k", 5, LONG_MAX)
    assert time_windowed(STRING, 100).deserialize(b"k" + struct.pack(">q", LONG_MAX - 1)).end == (
        LONG_MAX
    )


def test_session_windowed_golden_bytes() -> None:
    # SessionKeySchema.toBinary: serialized key, then putLong(end), putLong(start)
    serde = session_windowed(STRING)
    data = serde.serialize(Windowed("u", 1_000, 4_500))
    assert data == b"u" + bytes.fromhex("000000000000119400000000000003e8")
    assert serde.deserialize(data) == Windowed("u", 1_000, 4_500)


def test_short_input_is_a_clear_error() -> None:
    with pytest.raises(SerdeError, match="at least 8 bytes"):
        time_windowed(STRING, 10).deserialize(b"\x00\x01")
    with pytest.raises(SerdeError, match="at least 16 bytes"):
        session_windowed(STRING).deserialize(b"k" + bytes(8))


@given(
    st.text(max_size=20),
    st.integers(min_value=0, max_value=2**50),
    st.integers(min_value=1, max_value=2**40),
)
def test_round_trips(key: str, start: int, size: int) -> None:
    window = Windowed(key, start, start + size)
    assert time_windowed(STRING, size).deserialize(
        time_windowed(STRING, size).serialize(window)
    ) == (window)
    assert session_windowed(STRING).deserialize(session_windowed(STRING).serialize(window)) == (
        window
    )


def test_the_dsl_writes_and_the_driver_reads_kafka_windowed_keys() -> None:
    app = App("wk", stores="memory")
    clicks = app.stream("clicks").group_by_key()
    clicks.windowed_by(TimeWindows.of("1m"), windowed_key_format="kafka").count().to_stream().to(
        "per-minute"
    )
    clicks.windowed_by(
        SessionWindows.with_inactivity_gap("10s"), windowed_key_format="kafka"
    ).count().to_stream().to("sessions")
    clicks.windowed_by(SlidingWindows.of("5s"), windowed_key_format="kafka").count().to_stream().to(
        "sliding"
    )
    with app.test_driver(statestore_cache_max_bytes=0) as d:
        d.pipe("clicks", "u1", {}, timestamp=61_000)
        d.pipe("clicks", "u1", {}, timestamp=65_000)
        raw = d.read_raw("per-minute")
        assert [k for k, *_ in raw] == [b"u1" + struct.pack(">q", 60_000)] * 2
        assert [(r.key, r.value) for r in d.read_output("per-minute")] == [
            (Windowed("u1", 60_000, 120_000), 1),
            (Windowed("u1", 60_000, 120_000), 2),
        ]
        sessions = d.read_raw("sessions")
        assert sessions[-1][0] == b"u1" + struct.pack(">qq", 65_000, 61_000)
        assert d.read_output("sessions")[-1].key == Windowed("u1", 61_000, 65_000)
        sliding = {r.key for r in d.read_output("sliding")}  # end = start + size on reading
        assert sliding == {
            Windowed("u1", 56_000, 61_000),  # the left window of each record
            Windowed("u1", 60_000, 65_000),
            Windowed("u1", 61_001, 66_001),  # the right window of the first
        }


def test_suppressed_final_results_keep_the_kafka_key_format() -> None:
    app = App("wk", stores="memory")
    (
        app.stream("clicks")
        .group_by_key()
        .windowed_by(TimeWindows.of(10), windowed_key_format="kafka")
        .count()
        .suppress_until_window_closes()
        .to_stream()
        .to("final")
    )
    with app.test_driver() as d:
        for ts in (1, 2, 12):
            d.pipe("clicks", "k", {}, timestamp=ts)
        assert d.read_raw("final") == [
            (b"k" + struct.pack(">q", 0), b"2", 2, ()),
        ]


def test_an_unknown_format_is_refused() -> None:
    app = App("wk", stores="memory")
    with pytest.raises(TopologyError, match="windowed_key_format must be 'json' or 'kafka'"):
        app.stream("clicks").group_by_key().windowed_by(
            TimeWindows.of(10),
            windowed_key_format="avro",  # type: ignore[arg-type]
        )
