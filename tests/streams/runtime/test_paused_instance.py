"""Two processes share an application; one is paused (SIGSTOP) past its session timeout while
orders flow, the other takes over every task, then the paused one goes on (SIGCONT). Its next
commit is refused (the group moved on: an OffsetCommit with a stale generation, or under
exactly-once a ``send_offsets_to_transaction`` fenced by generation); it must drop its
uncommitted work and join the group again, not stop (Kafka Streams' ``TaskMigratedException``).
The output is what one process would have written: no update lost, and under exactly-once
(read_committed) none counted twice."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer, TopicPartition

from sluice import clients
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic, stop_process
from tests.streams.runtime.fixtures import produce, read, wait_for
from tests.streams.runtime.test_failover import (
    CUSTOMERS,
    ORDERS,
    _expected_ids,
    _expected_running_totals,
    _orders,
    _start,
)

PARTITIONS = 4
SESSION_S = 6.0
"""worker.py's ``session_timeout_ms``."""
PAUSE_S = 1.5 * SESSION_S
"""The least time instance A stays stopped (longer while B does not hold every task yet)."""
BATCH = 40
BATCH_PAUSE_S = 0.1
"""At most ~400 orders a second: they flow from before the pause until after it (~15 s)."""

BUSY = 50
"""Output records in every partition before A is stopped: both instances are processing."""

Window = tuple[str, int]


def _assignments(admin: Any, group: str, topic: str) -> list[set[int]] | None:
    """The partitions of ``topic`` that each member of ``group`` holds; None while the group
    rebalances."""
    [future] = admin.describe_consumer_groups([group], request_timeout=CLIENT_TIMEOUT).values()
    description = future.result(CLIENT_TIMEOUT)
    if description.state.name != "STABLE":
        return None
    return [
        {tp.partition for tp in m.assignment.topic_partitions if tp.topic == topic}
        for m in description.members
    ]


def _produce_paced(bootstrap: str, topic: str, stop: threading.Event, failed: list[str]) -> None:
    """Every order of ``_orders()``, BATCH at a time; what went wrong goes to ``failed``."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    try:
        for n, (key, order, timestamp) in enumerate(_orders()):
            if stop.is_set():
                failed.append(f"stopped after {n} orders")
                return
            producer.produce(topic, json.dumps(order).encode(), key.encode(), timestamp=timestamp)
            if n % BATCH == BATCH - 1:
                producer.poll(0)
                time.sleep(BATCH_PAUSE_S)
    except Exception as error:  # reported by the test
        failed.append(repr(error))
    finally:
        if producer.flush(30) != 0:
            failed.append("orders not acknowledged")


def _counted(records: list[tuple[Any, Any, int]], *, committed: bool) -> dict[Window, set[int]]:
    """The orders each window counted: its last aggregate, under exactly-once; under
    at-least-once its fullest one, since A, going on after SIGCONT, may still finish the
    batch it was in and write stale aggregates (of a window B has completed) before its commit
    fails: at-least-once does not fence that zombie's output."""
    counted: dict[Window, set[int]] = {}
    for key, value, _ in records:
        window, ids = (key["key"], key["window"]["start"]), set(value["ids"])
        if committed or len(ids) >= len(counted.get(window, ())):
            counted[window] = ids
    return counted


@pytest.mark.slow
@pytest.mark.parametrize(
    "guarantee",
    [
        "exactly_once_v2",
        "at_least_once",
    ],
)
def test_paused_instance_joins_again_and_nothing_is_lost(
    shared_broker: BrokerProcess, tmp_path: Path, guarantee: str
) -> None:
    bootstrap = shared_broker.bootstrap
    orders, customers, enriched, totals = (create_topic(bootstrap, PARTITIONS) for _ in range(4))
    produce(
        bootstrap,
        customers,
        [(f"c{i}", {"tier": "gold" if i % 2 else "silver"}, 1) for i in range(CUSTOMERS)],
    )
    app_id = f"paused-{uuid.uuid4().hex[:8]}"
    admin = clients.admin(bootstrap)
    expected = _expected_ids()
    committed = guarantee == "exactly_once_v2"
    workers: list[subprocess.Popen[bytes]] = []
    stop = threading.Event()
    failed: list[str] = []
    loader = threading.Thread(target=_produce_paced, args=(bootstrap, orders, stop, failed))
    try:
        for n in range(2):
            args = [bootstrap, app_id, guarantee, str(tmp_path / f"state{n}"), orders, customers]
            workers.append(_start([*args, enriched, totals], tmp_path / f"worker{n}.log"))
        a, b = workers

        def spread() -> bool:
            members = _assignments(admin, app_id, orders)
            return members is not None and len(members) == 2 and all(members)

        wait_for(spread, "both instances to hold tasks", timeout=45)
        loader.start()
        # A is stopped while it is busy: every task writes output (A has orders in a
        # transaction not committed yet, under exactly-once)
        watermarks = clients.consumer(bootstrap)
        try:

            def every_task_writes() -> bool:
                return all(
                    watermarks.get_watermark_offsets(
                        TopicPartition(enriched, p), timeout=CLIENT_TIMEOUT
                    )[1]
                    >= BUSY
                    for p in range(PARTITIONS)
                )

            wait_for(every_task_writes, "both instances to process orders", timeout=30)
        finally:
            watermarks.close()
        a.send_signal(signal.SIGSTOP)
        stopped = time.monotonic()

        def b_holds_everything() -> bool:
            members = _assignments(admin, app_id, orders)
            return members == [set(range(PARTITIONS))]

        wait_for(b_holds_everything, "B to hold every task while A is stopped", timeout=30)
        time.sleep(max(0.0, stopped + PAUSE_S - time.monotonic()))
        a.send_signal(signal.SIGCONT)

        def a_is_back() -> bool:
            assert a.poll() is None, f"A exited with {a.returncode} after SIGCONT"
            members = _assignments(admin, app_id, orders)
            return members is not None and len(members) == 2

        wait_for(a_is_back, "A to join the group again", timeout=40)
        loader.join(60)
        assert not loader.is_alive() and not failed, f"producing the orders: {failed}"

        def complete(records: list[tuple[Any, Any, int]]) -> bool:
            counted = _counted(records, committed=committed)
            return all(counted.get(w, set()) >= ids for w, ids in expected.items())

        def missing(records: list[tuple[Any, Any, int]]) -> str:
            counted = _counted(records, committed=committed)
            gaps = {w: ids - counted.get(w, set()) for w, ids in expected.items()}
            return f"missing: {[(w, sorted(g)) for w, g in sorted(gaps.items()) if g][:8]}"

        output = read(
            bootstrap, totals, until=complete, committed_only=committed, timeout=60, explain=missing
        )
        joined = read(
            bootstrap,
            enriched,
            until=lambda rs: len({v["id"] for _, v, _ in rs}) >= ORDERS,
            committed_only=committed,
        )
        # A kept running and is still a member (not stopped in ERROR, out of the group)
        assert b.poll() is None, f"B exited with {b.returncode}"
        wait_for(a_is_back, "A to be a member at the end", timeout=30)
    finally:
        stop.set()
        if loader.is_alive():
            loader.join(40)
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGCONT)  # a stopped process would not see SIGTERM
            stop_process(worker)
    ids = [value["id"] for _, value, _ in joined]
    assert set(ids) == set(range(ORDERS)), "an order was lost"
    counted = _counted(output, committed=committed)
    for window, window_ids in expected.items():
        # no lost update: the window counted every order of it
        assert counted[window] == window_ids, (window, sorted(window_ids - counted[window]))
    if committed:
        by_window: dict[Window, list[dict[str, Any]]] = defaultdict(list)
        for key, value, _ in output:
            by_window[(key["key"], key["window"]["start"])].append(value)
        # and none counted twice: the committed output is one process's
        assert len(ids) == ORDERS, f"{len(ids) - ORDERS} orders joined twice under exactly-once"
        twice = {
            w: v[-1]["ids"]
            for w, v in by_window.items()
            if len(set(v[-1]["ids"])) < len(v[-1]["ids"])
        }
        assert not twice, f"orders counted twice: {list(twice.items())[:2]}"
        sums = _expected_running_totals()
        got = {w: [v["sum"] for v in values] for w, values in by_window.items()}
        wrong = {w: (got.get(w), s) for w, s in sums.items() if got.get(w) != s}
        assert not wrong, f"running totals differ from one process's: {list(wrong.items())[:2]}"


@pytest.mark.slow
def test_an_idle_instance_dropped_by_the_group_rebuilds_its_tasks(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    """Instance A is paused before it processed anything since its assignment, so after SIGCONT
    it has nothing to commit and its commit succeeds; but the group dropped it meanwhile and B
    processed its partitions. Its tasks must be rebuilt from their changelogs, not resumed
    (Kafka's ``onPartitionsLost``): resumed, their stores lacked B's updates and the windows'
    counts came out short, silently, under exactly-once."""
    bootstrap = shared_broker.bootstrap
    orders, customers, enriched, totals = (create_topic(bootstrap, PARTITIONS) for _ in range(4))
    produce(bootstrap, customers, [(f"c{i}", {"tier": "x"}, 1) for i in range(CUSTOMERS)])
    app_id = f"idle-{uuid.uuid4().hex[:8]}"
    admin = clients.admin(bootstrap)
    all_orders = _orders()
    third = ORDERS // 3
    args = ["exactly_once_v2", orders, customers, enriched, totals]
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for n in range(2):
            state = str(tmp_path / f"state{n}")
            workers.append(
                _start([bootstrap, app_id, args[0], state, *args[1:]], tmp_path / f"worker{n}.log")
            )
        a = workers[0]

        def spread() -> bool:
            held = _assignments(admin, app_id, orders)
            return held is not None and len(held) == 2 and all(held)

        wait_for(spread, "both instances hold tasks", 45)
        a.send_signal(signal.SIGSTOP)
        produce(bootstrap, orders, all_orders[: 2 * third])
        wait_for(
            lambda: _assignments(admin, app_id, orders) == [set(range(PARTITIONS))],
            "B holds every task",
            30,
        )
        read(bootstrap, enriched, until=lambda rs: len(rs) >= 2 * third, committed_only=True)
        a.send_signal(signal.SIGCONT)

        def both_again() -> bool:
            held = _assignments(admin, app_id, orders)
            return held is not None and len(held) == 2

        wait_for(both_again, "A in the group again", 40)
        produce(bootstrap, orders, all_orders[2 * third :])
        expected = _expected_ids()

        def complete(records: list[tuple[Any, Any, int]]) -> bool:
            counted = _counted(records, committed=True)
            return all(counted.get(w, set()) >= ids for w, ids in expected.items())

        out = read(bootstrap, totals, until=complete, committed_only=True, timeout=60)
        counted = _counted(out, committed=True)
        assert {w: counted.get(w, set()) for w in expected} == expected
        assert a.poll() is None, "A stopped"
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGCONT)
            stop_process(worker)
