"""The Spark source's offsets and options, without Spark: checkpoint JSON, limits, splits."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.connectors.spark._kafka_read import arrow_schema
from sluice.connectors.spark._offsets import (
    OffsetRange,
    offsets_from_json,
    offsets_to_json,
    parse_offsets_option,
    rate_limit,
    split_ranges,
)
from sluice.connectors.spark._options import SourceOptions

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9"}

partition_offsets = st.dictionaries(
    st.tuples(st.sampled_from(["a", "b", "orders"]), st.integers(0, 20)),
    st.integers(0, 10**12),
    max_size=12,
)


@given(partition_offsets)
def test_offsets_json_round_trips_with_sorted_keys(offsets: dict[tuple[str, int], int]) -> None:
    encoded = offsets_to_json(offsets)
    assert offsets_from_json(json.loads(json.dumps(encoded))) == offsets
    assert list(encoded) == sorted(encoded)
    for partitions in encoded.values():
        numbers = [int(p) for p in partitions]
        assert numbers == sorted(numbers), f"partitions not in numeric order: {list(partitions)}"
    # the same positions inserted in another order give the same text (Spark compares JSON)
    reversed_ = dict(reversed(list(offsets.items())))
    assert json.dumps(offsets_to_json(reversed_)) == json.dumps(encoded)


def test_checkpoint_json_is_spark_kafka_form() -> None:
    offsets = {("t", 10): 5, ("t", 2): 7, ("a", 0): 1}
    assert json.dumps(offsets_to_json(offsets)) == '{"a": {"0": 1}, "t": {"2": 7, "10": 5}}'


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 5000)), min_size=1, max_size=8),
    st.integers(1, 3000),
)
def test_rate_limit_never_exceeds_the_budget(pairs: list[tuple[int, int]], budget: int) -> None:
    start = {("t", i): s for i, (s, _) in enumerate(pairs)}
    latest = {("t", i): s + n for i, (s, n) in enumerate(pairs)}
    end = rate_limit(start, latest, budget)
    taken = sum(end[tp] - start[tp] for tp in start)
    backlog = sum(latest[tp] - start[tp] for tp in start)
    assert taken == min(budget, backlog), f"took {taken} of budget {budget}, backlog {backlog}"
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in start), (start, end, latest)


def test_rate_limit_shares_by_backlog_and_starts_new_partitions_at_zero() -> None:
    assert rate_limit({("t", 0): 100}, {("t", 0): 400, ("t", 1): 100}, 100) == {
        ("t", 0): 175,
        ("t", 1): 25,
    }


@given(
    st.lists(st.tuples(st.integers(0, 100), st.integers(0, 500)), min_size=1, max_size=6),
    st.integers(1, 40),
)
def test_split_ranges_covers_each_range_exactly(
    pairs: list[tuple[int, int]], min_partitions: int
) -> None:
    ranges = [OffsetRange("t", i, s, s + n) for i, (s, n) in enumerate(pairs)]
    pieces = split_ranges(ranges, min_partitions)
    for rng in ranges:
        mine = sorted((p.start, p.end) for p in pieces if p.partition == rng.partition)
        covered = [o for lo, hi in mine for o in range(lo, hi)]
        assert covered == list(range(rng.start, rng.end)), f"{rng} split into {mine}"
    total = sum(r.size for r in ranges)
    assert len(pieces) >= min(min_partitions, total), f"{len(pieces)} pieces of {ranges}"


def test_options_parse_like_sparks_kafka_source() -> None:
    opts = SourceOptions.parse(
        {
            **BOOT,
            "subscribePattern": "orders-.*",
            "startingOffsets": '{"orders-1": {"0": -2, "1": 42}}',
            "maxOffsetsPerTrigger": "500",
            "minPartitions": "4",
            "failOnDataLoss": "false",
            "kafka.isolation.level": "read_committed",
            "kafka.security.protocol": "PLAINTEXT",
        }
    )
    assert opts.subscription.pattern == "orders-.*"
    assert opts.starting.specific == {("orders-1", 0): -2, ("orders-1", 1): 42}
    assert (opts.max_offsets_per_trigger, opts.min_partitions) == (500, 4)
    assert opts.fail_on_data_loss is False
    consumer = opts.consumer_config()
    assert consumer["isolation.level"] == "read_committed"
    assert consumer["auto.offset.reset"] == "earliest"
    assert opts.admin_config() == {
        "bootstrap.servers": "127.0.0.1:9",
        "security.protocol": "PLAINTEXT",
    }
    assert SourceOptions.parse({**BOOT, "assign": '{"t": [1, 0]}'}).subscription.assign == (
        ("t", 0),
        ("t", 1),
    )
    assert SourceOptions.parse({**BOOT, "subscribe": "t"}).isolation_level == "read_uncommitted"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "t"}, "'kafka.bootstrap.servers' must be set"),
        ({**BOOT}, "exactly one of the options 'subscribe', 'subscribePattern', 'assign'"),
        ({**BOOT, "subscribe": "t", "assign": '{"t": [0]}'}, "exactly one of the options"),
        ({**BOOT, "assign": "[0, 1]"}, "'assign' must be JSON like"),
        ({**BOOT, "subscribePattern": "("}, "not a valid regex"),
        ({**BOOT, "subscribe": "t", "startingOffsets": "{oops"}, "startingOffsets must be"),
        ({**BOOT, "subscribe": "t", "startingOffsets": "first"}, "startingOffsets must be"),
        (
            {**BOOT, "subscribe": "t", "startingOffsets": '{"t": {"x": 1}}'},
            "partition 'x' of topic 't' is not a number",
        ),
        (
            {**BOOT, "subscribe": "t", "startingOffsets": '{"t": {"0": "1"}}'},
            "must map to an integer offset",
        ),
        ({**BOOT, "subscribe": "t", "endingOffsets": "latest"}, "for batch queries only"),
        ({**BOOT, "subscribe": "t", "maxOffsetsPerTrigger": "0"}, "positive integer"),
        ({**BOOT, "subscribe": "t", "failOnDataLoss": "maybe"}, "true or false"),
        ({**BOOT, "subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "'startingOffsets'"),
        ({**BOOT, "subscribe": "t", "kafka.enable.auto.commit": "true"}, "not supported"),
    ],
)
def test_bad_options_say_what_is_wrong(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        SourceOptions.parse(options)
    assert message in str(info.value), f"expected {message!r} in {info.value}"


def test_batch_queries_refuse_to_start_at_latest_or_end_at_earliest() -> None:
    with pytest.raises(ValueError, match="startingOffsets=latest is not allowed in a batch"):
        parse_offsets_option("startingOffsets", "latest", "earliest", batch=True)
    with pytest.raises(ValueError, match=r"-2 \(earliest\), which is not allowed in a batch"):
        parse_offsets_option("endingOffsets", '{"t": {"0": -2}}', "latest", batch=True)


def test_arrow_schema_is_what_spark_expects() -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    from sluice.connectors.spark.source import SluiceDataSource

    for headers in (False, True):
        source = SluiceDataSource({**BOOT, "subscribe": "t", "includeHeaders": str(headers)})
        expected = to_arrow_schema(source.schema(), timezone="UTC")
        assert arrow_schema(headers).equals(expected), f"{arrow_schema(headers)} != {expected}"
