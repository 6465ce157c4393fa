"""The replica fetcher (:mod:`sluice.broker.replication.fetcher`): a follower :class:`Log` in a
temporary directory follows a partition led by a real broker process.

The leader's log is written batch by batch (raw Produce requests) in two leader epochs (0, then
3: the second made as in ``tests/broker/test_leader_epochs.py``, with the broker down, through
the partition's ``leader-epoch`` file). Checked: the follower ends byte-identical to the leader
(batches, offsets, epochs, bounds), a divergent tail is truncated (each way Kafka's follower
finds one), a follower behind the leader's log start starts over there, fenced and unknown
leader epochs stop or hold the fetching, and a leader restart is survived. Every wait is
bounded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from sluice.broker.config import BrokerConfig
from sluice.broker.log import Log
from sluice.broker.log.epochs import LEADER_EPOCH, LEADER_EPOCH_CHECKPOINT, parse_checkpoint
from sluice.broker.records.batch import iter_headers, set_base_offset, set_leader_epoch
from sluice.broker.replication.fetcher import FetchState, ReplicaFetcherManager, fetcher_id
from sluice.broker.topics import Partition
from tests.broker.conftest import Wire, make_batch, produce_values
from tests.conftest import BrokerProcess, create_topic
from tests.replication.fixtures import fetch_request, produce_request

pytestmark = pytest.mark.timeout(180)

FOLLOWER_ID = 2
WAIT_S = 60.0  # generous: other tests load the machine
FAST = {
    "replica.fetch.backoff.ms": "100",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.max.bytes": "150",  # about one batch per partition and round
}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- the leader ------------------------------------------------------------------------------------


def elect(broker: BrokerProcess, topic: str, epoch: int) -> None:
    """A new leader epoch for partition 0, as a controller's election would give it."""
    assert broker.stop() == 0
    (broker.data_dir / f"{topic}-0" / LEADER_EPOCH).write_text(f"{epoch}\n")
    broker.start()


def two_epochs(broker: BrokerProcess) -> str:
    """A topic whose partition 0 holds offsets 0-3 in epoch 0 (batches of 1, 2 and 1
    records) and 4-6 in epoch 3 (batches of 2 and 1)."""
    topic = create_topic(broker.bootstrap)
    write_batches(broker, topic, [[b"a"], [b"b", b"c"], [b"d"]])
    elect(broker, topic, 3)
    write_batches(broker, topic, [[b"e", b"f"], [b"g"]])
    assert [h.base_offset for h in iter_headers(leader_bytes(broker, topic))] == [0, 1, 3, 4, 6]
    return topic


def write_batches(broker: BrokerProcess, topic: str, batches: list[list[bytes]]) -> None:
    """Each list of values as one batch, acknowledged by the leader."""
    with Wire(broker.bootstrap) as wire:
        for values in batches:
            answer = wire.request(produce_request(topic, values))
            assert answer.responses[0].partition_responses[0].error_code == 0, answer


def leader_state(broker: BrokerProcess, topic: str) -> tuple[int, int]:
    """The leader's ``(log start offset, high watermark)``."""
    with Wire(broker.bootstrap) as wire:
        answer = wire.request(fetch_request(topic, 0)).responses[0].partitions[0]
    return int(answer.log_start_offset), int(answer.high_watermark)


def leader_bytes(broker: BrokerProcess, topic: str, start: int | None = None) -> bytes:
    """Every batch of the leader's partition 0 from ``start`` (default: its log start)."""
    log_start, end = leader_state(broker, topic)
    offset = log_start if start is None else start
    chunks = []
    with Wire(broker.bootstrap) as wire:
        while offset < end:
            records = wire.request(fetch_request(topic, offset)).responses[0].partitions[0].records
            assert records, f"the leader returned nothing at offset {offset} (end {end})"
            chunks.append(records)
            offset = list(iter_headers(records))[-1].next_offset
    return b"".join(chunks)


def delete_records(broker: BrokerProcess, topic: str, before: int) -> None:
    """DeleteRecords on the leader (through confluent-kafka's AdminClient)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, before)]).values():
        future.result(15)


def leader_epochs(broker: BrokerProcess, topic: str) -> list[tuple[int, int]]:
    path = broker.data_dir / f"{topic}-0" / LEADER_EPOCH_CHECKPOINT
    return [(e.epoch, e.start_offset) for e in parse_checkpoint(path.read_text(), path)]


# -- the follower ----------------------------------------------------------------------------------


def follower(tmp_path: Path, topic: str) -> Partition:
    """A replica hosted here, not led: a log of its own in a temporary directory."""
    log = Log.open(tmp_path / "follower" / f"{topic}-0", {"segment.bytes": 150})
    return Partition(topic, 0, log, is_leader=False)


def follower_bytes(log: Log) -> bytes:
    chunks = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 24).data)
        chunks.append(data)
        offset = list(iter_headers(data))[-1].next_offset
    return b"".join(chunks)


def epochs_of(log: Log) -> list[tuple[int, int]]:
    return [(e.epoch, e.start_offset) for e in log.leader_epochs.entries]


def manager(**config: str) -> ReplicaFetcherManager:
    return ReplicaFetcherManager(
        FOLLOWER_ID,
        BrokerConfig.from_properties({**FAST, **config}),
        now_ms,
        request_timeout_s=5.0,
    )


async def wait_until(condition: Callable[[], bool], what: Callable[[], str]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {WAIT_S}s: {what()}"
        await asyncio.sleep(0.05)


async def caught_up(broker: BrokerProcess, topic: str, partition: Partition) -> None:
    """Wait until the follower holds the leader's whole log and its high watermark."""
    start, end = await asyncio.to_thread(leader_state, broker, topic)
    log = partition.log
    await wait_until(
        lambda: log.log_end_offset == end and log.high_watermark == end,
        lambda: f"follower at {log!r} (hw {log.high_watermark}), leader at {start}..{end}",
    )


async def assert_identical(broker: BrokerProcess, topic: str, partition: Partition) -> None:
    log = partition.log
    expected = await asyncio.to_thread(leader_bytes, broker, topic)
    got = follower_bytes(log)
    assert [(h.base_offset, h.partition_leader_epoch) for h in iter_headers(got)] == [
        (h.base_offset, h.partition_leader_epoch) for h in iter_headers(expected)
    ]
    assert got == expected, "the follower's batches are the leader's, byte for byte"
    assert epochs_of(log) == leader_epochs(broker, topic)
    assert (log.log_start_offset, log.high_watermark) == await asyncio.to_thread(
        leader_state, broker, topic
    )


def stamped(values: list[bytes], base_offset: int, epoch: int) -> bytes:
    """A batch as a leader of ``epoch`` would have appended it at ``base_offset``."""
    batch = bytearray(make_batch(values))
    set_base_offset(batch, 0, base_offset)
    set_leader_epoch(batch, 0, epoch)
    return bytes(batch)


# -- tests -----------------------------------------------------------------------------------------


def follow(
    broker: BrokerProcess,
    partitions: list[Partition],
    body: Callable[[ReplicaFetcherManager], Awaitable[None]],
    *,
    epoch: int | None = 3,
    **config: str,
) -> None:
    """Run ``body`` with a fetcher (``config`` added to its broker config) following
    ``partitions`` from ``broker`` in ``epoch`` (None: not yet); then close the fetcher (no
    task may be left) and the logs."""

    async def main() -> None:
        fetcher = manager(**config)
        try:
            for partition in partitions if epoch is not None else ():
                fetcher.follow(partition, 1, ("127.0.0.1", broker.port), epoch)
            await body(fetcher)
        finally:
            await fetcher.close()
        assert asyncio.all_tasks() == {asyncio.current_task()}, "a fetcher task is left"

    try:
        asyncio.run(main())
    finally:
        for partition in partitions:
            partition.log.close()


async def identical_once_caught_up(broker: BrokerProcess, topic: str, partition: Partition) -> None:
    await caught_up(broker, topic, partition)
    await assert_identical(broker, topic, partition)


def test_the_follower_ends_byte_identical_to_the_leader(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = two_epochs(broker)
    partition = follower(tmp_path, topic)

    async def body(fetcher: ReplicaFetcherManager) -> None:
        await identical_once_caught_up(broker, topic, partition)
        assert partition.log.segment_count > 1
        assert fetcher.state(partition) is FetchState.FETCHING
        # it goes on following: new records, then the leader's new log start
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, [b"h", b"i"])
        await caught_up(broker, topic, partition)
        await asyncio.to_thread(delete_records, broker, topic, 3)
        await wait_until(
            lambda: partition.log.log_start_offset == 3,
            lambda: f"follower {partition.log!r} kept its log start",
        )
        await assert_identical(broker, topic, partition)
        # unfollowed: no longer changes
        fetcher.unfollow(partition)
        assert fetcher.state(partition) is None
        end = partition.log.log_end_offset
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, [b"j"])
        await asyncio.sleep(0.5)
        assert partition.log.log_end_offset == end

    follow(broker, [partition], body)


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ("older-epoch", "diverges from the leader's after epoch 0 at 4: truncated from offset 5"),
        ("epoch-past-its-end", "diverges from the leader's after epoch 0 at 4"),
        ("newer-epoch", "ends past the leader's end 7: truncated from offset 9 to 7"),
    ],
)
def test_a_divergent_tail_is_truncated(
    broker: BrokerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture, tail: str, message: str
) -> None:
    """The follower's log: some of the leader's batches, then a tail the leader never had —
    stamped with an epoch the leader skipped (1), with epoch 0 past where the leader's epoch 0
    ends (4), or with an epoch newer than the leader's (7)."""
    topic = two_epochs(broker)
    partition = follower(tmp_path, topic)
    log = partition.log
    leader = leader_bytes(broker, topic)
    headers = list(iter_headers(leader))
    if tail == "older-epoch":
        log.append_as_follower(leader[: headers[2].position], now_ms=now_ms())  # offsets 0-2
        log.append_as_follower(stamped([b"x", b"y"], 3, 1), now_ms=now_ms())  # 3-4
    elif tail == "epoch-past-its-end":
        log.append_as_follower(leader[: headers[3].position], now_ms=now_ms())  # 0-3
        log.append_as_follower(stamped([b"x"], 4, 0), now_ms=now_ms())  # 4
    else:
        log.append_as_follower(leader, now_ms=now_ms())  # 0-6
        log.append_as_follower(stamped([b"x", b"y"], 7, 7), now_ms=now_ms())  # 7-8
    caplog.set_level(logging.INFO, logger="sluice.broker.replication.fetcher")

    follow(broker, [partition], lambda _: identical_once_caught_up(broker, topic, partition))
    truncations = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert len(truncations) == 1 and message in truncations[0], truncations


@pytest.mark.parametrize("start", [4, 5], ids=["at-a-batch", "inside-a-batch"])
def test_a_follower_behind_the_leaders_log_start_starts_over_there(
    broker: BrokerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture, start: int
) -> None:
    """The leader's log starts at 4 (its batch 4-5 starts there), or at 5 (inside it: the
    follower's empty log then starts over at the batch, 4, as Kafka's does)."""
    topic = two_epochs(broker)
    delete_records(broker, topic, start)
    partition = follower(tmp_path, topic)
    partition.log.append_as_follower(stamped([b"old"], 0, 0), now_ms=now_ms())  # ends at 1 < 4
    caplog.set_level(logging.INFO, logger="sluice.broker.replication.fetcher")

    follow(broker, [partition], lambda _: identical_once_caught_up(broker, topic, partition))
    assert partition.log.log_start_offset == start
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"started over at {start}" in m for m in messages), messages
    assert any("empty log started over at 4" in m for m in messages) == (start == 5), messages


def test_a_fenced_epoch_stops_and_an_unknown_one_holds_until_re_pointed(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = two_epochs(broker)
    partition = follower(tmp_path, topic)
    address = ("127.0.0.1", broker.port)

    async def in_state(fetcher: ReplicaFetcherManager, state: FetchState) -> None:
        await wait_until(
            lambda: fetcher.state(partition) is state,
            lambda: f"state {fetcher.state(partition)}, expected {state}",
        )

    async def body(fetcher: ReplicaFetcherManager) -> None:
        fetcher.follow(partition, 1, address, 2)  # older than the leader's 3
        await in_state(fetcher, FetchState.FENCED)
        fetcher.follow(partition, 1, address, 5)  # newer: the leader has not learnt of it
        await in_state(fetcher, FetchState.BACKING_OFF)
        await asyncio.sleep(0.5)  # several retries
        assert partition.log.log_end_offset == 0, "nothing fetched in a wrong epoch"
        assert fetcher.state(partition) is FetchState.BACKING_OFF
        fetcher.follow(partition, 1, address, 3)
        await identical_once_caught_up(broker, topic, partition)

    follow(broker, [partition], body, epoch=None)


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_the_fetcher_survives_a_leader_restart(
    broker: BrokerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    topic = two_epochs(broker)
    partition = follower(tmp_path, topic)
    caplog.set_level(logging.INFO, logger="sluice.broker.replication.fetcher")

    async def body(fetcher: ReplicaFetcherManager) -> None:
        await caught_up(broker, topic, partition)
        await asyncio.to_thread(broker.stop if how == "stop" else broker.kill)
        await asyncio.sleep(1.0)  # several reconnection attempts, 100 ms apart
        await asyncio.to_thread(broker.start)
        await asyncio.to_thread(produce_values, broker.bootstrap, topic, [b"after"])
        await identical_once_caught_up(broker, topic, partition)
        assert fetcher.state(partition) is FetchState.FETCHING

    follow(broker, [partition], body)
    messages = [r.getMessage() for r in caplog.records]
    lost = [m for m in messages if "replica fetcher lost" in m]
    again = [m for m in messages if "connected to leader 1" in m]
    # once per outage, not per attempt (about ten); a second outage if the reconnection
    # reached the stopping broker before it closed its listener
    assert 1 <= len(lost) <= 2, f"expected the lost connection logged once, got {lost}"
    assert len(again) == len(lost), f"each outage ends once: {lost} {again}"


def test_followed_partitions_share_one_fetcher_per_leader(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    topics = [create_topic(broker.bootstrap) for _ in range(3)]
    for index, topic in enumerate(topics):
        produce_values(broker.bootstrap, topic, [b"v%d" % i for i in range(index + 2)])
    partitions = [follower(tmp_path, topic) for topic in topics]

    async def body(fetcher: ReplicaFetcherManager) -> None:
        me = asyncio.current_task()
        names = {t.get_name() for t in asyncio.all_tasks() if t is not me}
        assert names == {"ReplicaFetcher-0-1"}, names
        for topic, partition in zip(topics, partitions, strict=True):
            await identical_once_caught_up(broker, topic, partition)

    follow(broker, partitions, body, epoch=0)


def test_num_replica_fetchers_spreads_partitions_by_kafkas_hash_and_resizes(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    topics = [create_topic(broker.bootstrap) for _ in range(6)]
    for topic in topics:
        produce_values(broker.bootstrap, topic, [topic.encode(), b"x"])
    partitions = [follower(tmp_path, topic) for topic in topics]

    def fetcher_tasks() -> set[str]:
        return {t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith("Replica")}

    async def body(fetcher: ReplicaFetcherManager) -> None:
        expected = {f"ReplicaFetcher-{fetcher_id(t, 0, 3)}-1" for t in topics}
        assert len(expected) > 1, "the topics' names all hash to one fetcher: rename some"
        assert fetcher_tasks() == expected
        for topic, partition in zip(topics, partitions, strict=True):
            await identical_once_caught_up(broker, topic, partition)
        # a dynamic change to one fetcher moves every partition to it, and they go on
        fetcher.reconfigure(BrokerConfig.from_properties({**FAST, "num.replica.fetchers": "1"}))
        await wait_until(
            lambda: fetcher_tasks() == {"ReplicaFetcher-0-1"},
            lambda: f"fetchers {sorted(fetcher_tasks())}",
        )
        for topic in topics:
            await asyncio.to_thread(produce_values, broker.bootstrap, topic, [b"more"])
        for topic, partition in zip(topics, partitions, strict=True):
            await identical_once_caught_up(broker, topic, partition)
            assert fetcher.state(partition) is FetchState.FETCHING

    follow(broker, partitions, body, epoch=0, **{"num.replica.fetchers": "3"})
