"""The Streams examples (``examples/wordcount``, ``shop_revenue``, ``stream_join``), each twice:
through the broker-free test driver, with expected output worked out by hand, and against the
real broker, built by the same ``build()`` and run in-process with ``start()``/``close()``.

Example modules are loaded from their files (they are scripts, not a package).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from confluent_kafka import Producer

from sluice.dsl import App, Windowed
from sluice.streams import TestDriver
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import produce, read, wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(relative: str) -> ModuleType:
    """The module of ``examples/<relative>``, imported from its file."""
    path = EXAMPLES / relative
    name = "example_" + relative.removesuffix(".py").replace("/", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wordcount = load("wordcount/app.py")
shop = load("shop_revenue/app.py")
shop_sample = load("shop_revenue/produce_sample.py")
stream_join = load("stream_join/app.py")


def out(driver: TestDriver, topic: str) -> list[tuple[Any, Any, int]]:
    """What the driver's sinks wrote to ``topic`` since the last read, as plain tuples."""
    return [(r.key, r.value, r.timestamp) for r in driver.read_output(topic)]


def app_id(example: str) -> str:
    return f"{example}-{uuid.uuid4().hex[:8]}"


# -- word count ------------------------------------------------------------------------------

LINES = ["the quick brown fox", "jumps over the lazy dog", "The dog sleeps, the fox runs"]
FINAL_COUNTS = {
    "the": 4,
    "quick": 1,
    "brown": 1,
    "fox": 2,
    "jumps": 1,
    "over": 1,
    "lazy": 1,
    "dog": 2,
    "sleeps": 1,
    "runs": 1,
}


def test_wordcount_with_the_test_driver() -> None:
    app = wordcount.build("localhost:9092", stores="memory")
    with app.test_driver() as d:
        d.pipe("streams-plaintext-input", None, LINES[0], timestamp=1_000)
        assert out(d, "streams-wordcount-output") == [
            ("the", 1, 1_000),
            ("quick", 1, 1_000),
            ("brown", 1, 1_000),
            ("fox", 1, 1_000),
        ]
        d.pipe("streams-plaintext-input", None, LINES[1], timestamp=2_000)
        d.pipe("streams-plaintext-input", "k", LINES[2], timestamp=3_000)
        assert out(d, "streams-wordcount-output") == [
            ("jumps", 1, 2_000),
            ("over", 1, 2_000),
            ("the", 2, 2_000),
            ("lazy", 1, 2_000),
            ("dog", 1, 2_000),
            ("the", 3, 3_000),
            ("dog", 2, 3_000),
            ("sleeps", 1, 3_000),
            ("the", 4, 3_000),
            ("fox", 2, 3_000),
            ("runs", 1, 3_000),
        ]
        assert dict(d.store("counts").all()) == FINAL_COUNTS
        # each word reached the counter through the repartition topic, keyed by itself
        assert len(d.read_raw("streams-wordcount-words-repartition")) == 15


def produce_lines(bootstrap: str, topic: str, lines: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for line in lines:
        producer.produce(topic, line.encode())
    assert producer.flush(30) == 0


def test_wordcount_against_the_broker(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = shared_broker.bootstrap
    lines, counts = create_topic(bootstrap, 2), create_topic(bootstrap, 2)
    app = wordcount.build(
        bootstrap,
        application_id=app_id("wordcount"),
        input_topic=lines,
        output_topic=counts,
        state_dir=tmp_path,
        commit_interval_ms=200,
    )
    produce_lines(bootstrap, lines, LINES)
    app.start()
    try:
        records = read(bootstrap, counts, until=lambda rs: len(rs) >= 15)
        assert len(records) == 15
        assert {key: value for key, value, _ in records} == FINAL_COUNTS
        wait_for(lambda: app.store("counts").get("the") == 4, "the store to count 'the' 4 times")
        assert sorted(app.store("counts").range("dog", "fox")) == [("dog", 2), ("fox", 2)]
    finally:
        app.close()


def test_wordcount_script_runs_until_sigterm(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    """``python examples/wordcount/app.py BOOTSTRAP``, as its README says, with its own topics."""
    bootstrap = shared_broker.bootstrap
    create_topic(bootstrap, 2, "streams-plaintext-input")
    create_topic(bootstrap, 2, "streams-wordcount-output")
    log_path = tmp_path / "wordcount.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(EXAMPLES / "wordcount" / "app.py"), bootstrap],
            cwd=tmp_path,  # its state goes to ./.sluice/streams
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "SLUICE_BOOTSTRAP": "127.0.0.1:1"},  # the argument wins
        )
    try:
        produce_lines(bootstrap, "streams-plaintext-input", ["to be or not to be"])
        records = read(bootstrap, "streams-wordcount-output", until=lambda rs: len(rs) >= 6)
        assert {key: value for key, value, _ in records} == {"to": 2, "be": 2, "or": 1, "not": 1}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    text = log_path.read_text()
    assert code == 0, text
    assert "tasks 0_0, 0_1, 1_0, 1_1" in text, text  # the log line the README shows
    assert (tmp_path / ".sluice" / "streams" / "streams-wordcount").is_dir()


# -- shop revenue ----------------------------------------------------------------------------

BASE = 1_700_000_040_000  # a whole minute: windows start at BASE, BASE + 60 s, BASE + 120 s
MINUTE = 60_000


def window(tier: str, minute: int, base: int = BASE) -> Windowed:
    return Windowed(tier, base + minute * MINUTE, base + (minute + 1) * MINUTE)


def test_shop_revenue_with_the_test_driver() -> None:
    app = shop.build("localhost:9092", stores="memory")
    with app.test_driver() as d:
        for key, value, timestamp in shop_sample.customer_rows(BASE):
            d.pipe("customers", key, value, timestamp=timestamp)
        emitted = {}
        for key, value, timestamp in shop_sample.order_rows(BASE):
            d.pipe("orders", key, value, timestamp=timestamp)
            emitted[value["id"]] = out(d, "revenue-by-tier")
        # Nothing leaves a window before it closes: stream time at its end + 10 s grace.
        assert {order: records for order, records in emitted.items() if records} == {
            # o11 at 90 s closes minute 0 (60 s + 10 s); o10 (erin, 3.0 at 55 s, 10 s late) counted
            "o11": [
                (window("gold", 0), 50.0, BASE + 20_000),  # alice 30 + carol 20
                (window("silver", 0), 23.0, BASE + 58_000),  # bob 12.5 + erin 7.5 + erin 3
                (window("bronze", 0), 8.0, BASE + 40_000),  # dave 8 (his -5 refund filtered)
            ],
            # o15 at 131 s closes minute 1 (120 s + 10 s); o14 (alice at 50 s) came too late
            "o15": [
                (window("gold", 1), 25.0, BASE + 90_000),  # alice 10 + carol 15
                (window("silver", 1), 4.5, BASE + 65_000),  # bob 4.5
                (window("bronze", 1), 2.0, BASE + 118_000),  # dave 2
            ],
        }
        # minute 2 is still open; the store holds the windows of the last size + grace
        assert list(d.store("revenue").fetch_range("gold", 0, 2**62)) == [
            (BASE + MINUTE, 25.0),
            (BASE + 2 * MINUTE, 25.0),
        ]
        assert d.store("revenue").fetch("silver", BASE + 2 * MINUTE) == 6.0
        assert d.store("customers").get("zoe") is None


def test_shop_revenue_against_the_broker(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = shared_broker.bootstrap
    suffix = uuid.uuid4().hex[:8]
    orders, customers, output = f"orders-{suffix}", f"customers-{suffix}", f"revenue-{suffix}"
    base = shop_sample.default_base_ms()
    # the sample script creates the topics (one partition each) and writes customers, orders
    args = ["--orders", orders, "--customers", customers, "--output", output]
    shop_sample.main([bootstrap, *args, "--base-ms", str(base)])
    app = shop.build(
        bootstrap,
        application_id=app_id("shop"),
        orders_topic=orders,
        customers_topic=customers,
        output_topic=output,
        state_dir=tmp_path,
        commit_interval_ms=200,
    )
    app.start()
    try:
        records = read(bootstrap, output, until=lambda rs: len(rs) >= 6)
        start = {minute: base + minute * MINUTE for minute in range(3)}
        assert [(k["key"], k["window"]["start"], v, ts) for k, v, ts in records] == [
            ("gold", start[0], 50.0, base + 20_000),
            ("silver", start[0], 23.0, base + 58_000),
            ("bronze", start[0], 8.0, base + 40_000),
            ("gold", start[1], 25.0, base + 90_000),
            ("silver", start[1], 4.5, base + 65_000),
            ("bronze", start[1], 2.0, base + 118_000),
        ]
        assert all(k["window"]["end"] == k["window"]["start"] + MINUTE for k, _, _ in records)
        revenue = app.store("revenue")
        wait_for(lambda: len(revenue.fetch("gold")) == 2, "the revenue store to hold gold")
        assert revenue.fetch("gold") == [(start[1], 25.0), (start[2], 25.0)]
        assert revenue.fetch("silver", start[2], start[2]) == [(start[2], 6.0)]
        assert app.store("customers").get("dave") == {"name": "Dave", "tier": "bronze"}
    finally:
        app.close()


# -- stream-stream join ----------------------------------------------------------------------


def impression(ad: str, user: str) -> dict[str, str]:
    return {"ad": ad, "user": user}


def clicked(ad: str, user: str, target: str | None) -> dict[str, Any]:
    return {"ad": ad, "user": user, "clicked": target is not None, "target": target}


def test_stream_join_with_the_test_driver() -> None:
    app = stream_join.build("localhost:9092", stores="memory")
    steps = [
        ("ad-impressions", "imp-1", impression("ad-7", "alice"), 1_000),
        ("ad-impressions", "imp-2", impression("ad-3", "bob"), 2_000),
        ("ad-clicks", "imp-1", {"target": "/shoes"}, 4_000),  # 3 s after imp-1: joined
        ("ad-clicks", "imp-3", {"target": "/hats"}, 5_000),  # before its impression
        ("ad-impressions", "imp-3", impression("ad-9", "carol"), 6_000),  # the click: too early
        ("ad-clicks", "imp-2", {"target": "/socks"}, 14_000),  # 12 s after imp-2: too late
        ("ad-clicks", "imp-1", {"target": "/cart"}, 9_000),  # 5 s out of order: within grace
        ("ad-impressions", "imp-4", impression("ad-7", "dave"), 20_000),
        ("ad-clicks", "imp-4", {"target": "/shoes"}, 3_000),  # 17 s behind stream time: dropped
        ("ad-impressions", "imp-5", impression("ad-3", "erin"), 40_000),
    ]
    with app.test_driver() as d:
        got = []
        for topic, key, value, timestamp in steps:
            d.pipe(topic, key, value, timestamp=timestamp)
            got.append((key, timestamp, out(d, "ad-impression-outcomes")))
    assert got == [
        ("imp-1", 1_000, []),
        ("imp-2", 2_000, []),
        ("imp-1", 4_000, [("imp-1", clicked("ad-7", "alice", "/shoes"), 4_000)]),
        ("imp-3", 5_000, []),
        ("imp-3", 6_000, []),
        ("imp-2", 14_000, []),
        ("imp-1", 9_000, [("imp-1", clicked("ad-7", "alice", "/cart"), 9_000)]),
        # stream time 20 s > 2 s + 10 s + 5 s: imp-2's window has closed, it goes out alone
        ("imp-4", 20_000, [("imp-2", clicked("ad-3", "bob", None), 2_000)]),
        ("imp-4", 3_000, []),
        # stream time 40 s closes imp-3's window (21 s) and imp-4's (35 s); imp-5 waits
        (
            "imp-5",
            40_000,
            [
                ("imp-3", clicked("ad-9", "carol", None), 6_000),
                ("imp-4", clicked("ad-7", "dave", None), 20_000),
            ],
        ),
    ]


def test_stream_join_against_the_broker(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = shared_broker.bootstrap
    impressions, clicks, output = (create_topic(bootstrap, 2) for _ in range(3))
    app = stream_join.build(
        bootstrap,
        application_id=app_id("join"),
        impressions_topic=impressions,
        clicks_topic=clicks,
        output_topic=output,
        state_dir=tmp_path,
        commit_interval_ms=200,
    )

    def partition(key: str | None) -> int:  # the same on both topics: co-partitioned
        assert key is not None
        return int(key.removeprefix("imp-")) % 2

    t = (int(time.time()) - 120) * 1000
    # Phase 1 spans 2.5 s, less than the grace: the result does not depend on which partition
    # or topic the tasks read first, and no window closes.
    produce(
        bootstrap,
        impressions,
        [
            ("imp-1", impression("ad-7", "alice"), t),
            ("imp-2", impression("ad-3", "bob"), t + 500),
            ("imp-3", impression("ad-9", "carol"), t + 1_000),
            ("imp-4", impression("ad-7", "dave"), t + 1_500),
        ],
        partition=partition,
    )
    produce(
        bootstrap,
        clicks,
        [
            ("imp-1", {"target": "/shoes"}, t + 2_000),
            ("imp-4", {"target": "/cart"}, t + 2_500),
            ("imp-3", {"target": "/hats"}, t + 800),  # before imp-3: not its click
        ],
        partition=partition,
    )
    app.start()
    try:
        first = read(bootstrap, output, until=lambda rs: len(rs) >= 2)
        assert sorted(first, key=str) == [
            ("imp-1", clicked("ad-7", "alice", "/shoes"), t + 2_000),
            ("imp-4", clicked("ad-7", "dave", "/cart"), t + 2_500),
        ]
        # Phase 2: a later impression on each partition moves both tasks' stream time past
        # the windows of imp-2 and imp-3, which go out without a click.
        produce(
            bootstrap,
            impressions,
            [
                ("imp-10", impression("ad-1", "frank"), t + 30_000),
                ("imp-11", impression("ad-1", "grace"), t + 30_000),
            ],
            partition=partition,
        )
        records = read(bootstrap, output, until=lambda rs: len(rs) >= 4)
        assert sorted(records, key=str) == [
            ("imp-1", clicked("ad-7", "alice", "/shoes"), t + 2_000),
            ("imp-2", clicked("ad-3", "bob", None), t + 500),
            ("imp-3", clicked("ad-9", "carol", None), t + 1_000),
            ("imp-4", clicked("ad-7", "dave", "/cart"), t + 2_500),
        ]
    finally:
        app.close()


@pytest.mark.parametrize("module", [wordcount, shop, stream_join], ids=lambda m: m.__name__)
def test_build_returns_an_app_that_describes_its_topology(module: ModuleType) -> None:
    app = module.build("localhost:9092", stores="memory")
    assert isinstance(app, App)
    assert app.describe().startswith("Sub-topology 0")
