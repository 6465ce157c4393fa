"""Fetch sessions (KIP-227) on a real broker, by raw Fetch requests over TCP: a full request opens
a session, incremental requests name only what changed and get only what is new, forgotten
partitions leave the session, a waiting incremental fetch wakes for any partition of its
session, the session errors where Kafka gives them, and the cache's slots and eviction
(``max.incremental.fetch.session.cache.slots``, ``min.incremental.fetch.session.eviction.ms``)."""

from __future__ import annotations

import datetime
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.fetch.v13 import request as fetch_v13
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from tests.broker.conftest import Wire, create_topic, produce_values
from tests.broker.test_topic_ids import topic_id_of
from tests.conftest import BrokerProcess, free_port
from tests.platform.scrape import scrape

pytestmark = pytest.mark.timeout(120)

CACHE_METRICS = "kafka_server_fetch_session_cache_"
Wanted = dict[str, dict[int, int]]
"""Partitions and their fetch offsets, by topic."""


def fetch12(
    wanted: Wanted,
    *,
    session_id: int = 0,
    epoch: int = 0,
    forgotten: dict[str, list[int]] | None = None,
    replica_id: int = -1,
    wait_ms: int = 0,
) -> fetch_v12.FetchRequest:
    """A Fetch v12 (topics by name) of the session fields given."""
    return fetch_v12.FetchRequest(
        replica_id=BrokerId(replica_id),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=wait_ms)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        session_id=i32(session_id),
        session_epoch=i32(epoch),
        topics=tuple(
            fetch_v12.FetchTopic(
                topic=TopicName(topic),
                partitions=tuple(
                    fetch_v12.FetchPartition(
                        partition=i32(p), fetch_offset=i64(o), partition_max_bytes=i32(1 << 20)
                    )
                    for p, o in parts.items()
                ),
            )
            for topic, parts in wanted.items()
        ),
        forgotten_topics_data=tuple(
            fetch_v12.ForgottenTopic(topic=TopicName(t), partitions=tuple(i32(p) for p in ps))
            for t, ps in (forgotten or {}).items()
        ),
        rack_id="",
    )


def fetch13(
    wanted: dict[uuid.UUID, dict[int, int]], *, session_id: int = 0, epoch: int = 0
) -> fetch_v13.FetchRequest:
    """A Fetch v13 (topics by id) that does not wait."""
    return fetch_v13.FetchRequest(
        replica_id=BrokerId(-1),
        max_wait=i32Timedelta.parse(datetime.timedelta(0)),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=i8(0),
        session_id=i32(session_id),
        session_epoch=i32(epoch),
        topics=tuple(
            fetch_v13.FetchTopic(
                topic_id=topic_id,
                partitions=tuple(
                    fetch_v13.FetchPartition(
                        partition=i32(p), fetch_offset=i64(o), partition_max_bytes=i32(1 << 20)
                    )
                    for p, o in parts.items()
                ),
            )
            for topic_id, parts in wanted.items()
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def answered(response: Any) -> dict[tuple[Any, int], Any]:
    """The partitions of a response, by (topic name or id, partition)."""
    out = {}
    for topic in response.responses:
        key = getattr(topic, "topic", None) or getattr(topic, "topic_id", None)
        for p in topic.partitions:
            out[(key, int(p.partition_index))] = p
    return out


def fresh_topic(bootstrap: str, partitions: int = 2) -> str:
    name = f"sessions-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, name, partitions)
    return name


def test_a_full_request_opens_a_session_and_incremental_ones_get_only_what_changed(
    shared_broker: BrokerProcess,
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = fresh_topic(bootstrap)
    produce_values(bootstrap, topic, [b"a", b"b"], partition=0)
    with Wire(bootstrap) as conn:
        full = conn.request(fetch12({topic: {0: 0, 1: 0}}))
        assert full.error_code == ErrorCode.none
        assert full.session_id != 0, "a full request with epoch 0 opens a session"
        parts = answered(full)
        assert set(parts) == {(topic, 0), (topic, 1)}, "a full response lists every partition"
        assert parts[(topic, 0)].high_watermark == 2 and parts[(topic, 0)].records
        session = full.session_id

        # Incremental, epoch 1: partition 0 moves on to offset 2; nothing is new anywhere.
        quiet = conn.request(fetch12({topic: {0: 2}}, session_id=session, epoch=1))
        assert quiet.error_code == ErrorCode.none and quiet.session_id == session
        assert answered(quiet) == {}, "nothing changed: no partition is answered"

        # New records in partition 1, which the request does not name: answered all the same.
        produce_values(bootstrap, topic, [b"c"], partition=1)
        news = conn.request(fetch12({}, session_id=session, epoch=2))
        parts = answered(news)
        assert set(parts) == {(topic, 1)}, "only the partition with news is answered"
        assert parts[(topic, 1)].high_watermark == 1 and parts[(topic, 1)].records

        # Partition 0's cached position (2) holds: its new record comes without naming it.
        produce_values(bootstrap, topic, [b"d"], partition=0)
        more = conn.request(fetch12({topic: {1: 1}}, session_id=session, epoch=3))
        parts = answered(more)
        assert set(parts) == {(topic, 0)}
        assert parts[(topic, 0)].high_watermark == 3 and parts[(topic, 0)].records


def test_partitions_are_added_and_forgotten_incrementally(shared_broker: BrokerProcess) -> None:
    bootstrap = shared_broker.bootstrap
    first, second = fresh_topic(bootstrap, 1), fresh_topic(bootstrap, 1)
    produce_values(bootstrap, second, [b"x"])
    with Wire(bootstrap) as conn:
        session = conn.request(fetch12({first: {0: 0}})).session_id
        assert session != 0
        added = conn.request(fetch12({second: {0: 0}}, session_id=session, epoch=1))
        assert set(answered(added)) == {(second, 0)}, "an added partition is always answered"
        assert answered(added)[(second, 0)].records

        forgot = conn.request(
            fetch12({second: {0: 1}}, session_id=session, epoch=2, forgotten={first: [0]})
        )
        assert answered(forgot) == {}
        produce_values(bootstrap, first, [b"y"])
        after = conn.request(fetch12({}, session_id=session, epoch=3))
        assert answered(after) == {}, "a forgotten partition is no longer read"

        # Forgetting the last partition closes the session: the response has no session id.
        closed = conn.request(fetch12({}, session_id=session, epoch=4, forgotten={second: [0]}))
        assert closed.error_code == ErrorCode.none and closed.session_id == 0
        gone = conn.request(fetch12({}, session_id=session, epoch=5))
        assert gone.error_code == ErrorCode.fetch_session_id_not_found


def test_a_waiting_incremental_fetch_wakes_for_a_partition_it_does_not_name(
    shared_broker: BrokerProcess,
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = fresh_topic(bootstrap)
    with Wire(bootstrap, timeout=30) as conn:
        session = conn.request(fetch12({topic: {0: 0, 1: 0}})).session_id
        producer = threading.Timer(
            0.5, produce_values, (bootstrap, topic, [b"late"]), {"partition": 1}
        )
        producer.start()
        try:
            started = time.monotonic()
            woke = conn.request(fetch12({}, session_id=session, epoch=1, wait_ms=20_000))
        finally:
            producer.join(30)
        assert time.monotonic() - started < 20, "the fetch waited its whole max_wait"
        parts = answered(woke)
        assert set(parts) == {(topic, 1)} and parts[(topic, 1)].records


def test_session_errors(shared_broker: BrokerProcess) -> None:
    bootstrap = shared_broker.bootstrap
    topic = fresh_topic(bootstrap, 1)
    with Wire(bootstrap) as conn:
        missing = conn.request(fetch12({topic: {0: 0}}, session_id=12345, epoch=1))
        assert missing.error_code == ErrorCode.fetch_session_id_not_found
        assert missing.session_id == 0 and not missing.responses

        session = conn.request(fetch12({topic: {0: 0}})).session_id
        wrong = conn.request(fetch12({}, session_id=session, epoch=2))
        assert wrong.error_code == ErrorCode.invalid_fetch_session_epoch and not wrong.responses
        # The refused request did not move the session on: epoch 1 is still the next one.
        assert conn.request(fetch12({}, session_id=session, epoch=1)).error_code == ErrorCode.none
        # Epoch 2 a second time (a resent request): refused.
        assert conn.request(fetch12({}, session_id=session, epoch=2)).error_code == ErrorCode.none
        again = conn.request(fetch12({}, session_id=session, epoch=2))
        assert again.error_code == ErrorCode.invalid_fetch_session_epoch

        # A session of topic names used by a request of topic ids (v13), and the other way.
        by_id = conn.request(fetch13({}, session_id=session, epoch=3))
        assert by_id.error_code == ErrorCode.fetch_session_topic_id_error
        topic_id = topic_id_of(bootstrap, topic)
        id_session = conn.request(fetch13({topic_id: {0: 0}})).session_id
        assert id_session != 0
        by_name = conn.request(fetch12({}, session_id=id_session, epoch=1))
        assert by_name.error_code == ErrorCode.fetch_session_topic_id_error
        fine = conn.request(fetch13({}, session_id=id_session, epoch=1))
        assert fine.error_code == ErrorCode.none and fine.session_id == id_session


def test_epoch_minus_one_is_sessionless_and_a_full_request_closes_the_session_it_names(
    shared_broker: BrokerProcess,
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = fresh_topic(bootstrap, 1)
    with Wire(bootstrap) as conn:
        sessionless = conn.request(fetch12({topic: {0: 0}}, epoch=-1))
        assert sessionless.error_code == ErrorCode.none and sessionless.session_id == 0
        assert set(answered(sessionless)) == {(topic, 0)}

        first = conn.request(fetch12({topic: {0: 0}})).session_id
        closing = conn.request(fetch12({topic: {0: 0}}, session_id=first, epoch=-1))
        assert closing.session_id == 0
        assert (
            conn.request(fetch12({}, session_id=first, epoch=1)).error_code
            == ErrorCode.fetch_session_id_not_found
        )

        second = conn.request(fetch12({topic: {0: 0}})).session_id
        third = conn.request(fetch12({topic: {0: 0}}, session_id=second, epoch=0)).session_id
        assert third not in (0, second)
        assert (
            conn.request(fetch12({}, session_id=second, epoch=1)).error_code
            == ErrorCode.fetch_session_id_not_found
        ), "a full request closes the session it names and opens another"
        assert conn.request(fetch12({}, session_id=third, epoch=1)).error_code == ErrorCode.none


def open_session(conn: Wire, wanted: Wanted, replica_id: int = -1) -> int:
    response = conn.request(fetch12(wanted, replica_id=replica_id))
    assert response.error_code == ErrorCode.none
    return int(response.session_id)


def still_open(conn: Wire, session: int, epoch: int = 1) -> bool:
    code = conn.request(fetch12({}, session_id=session, epoch=epoch)).error_code
    assert code in (ErrorCode.none, ErrorCode.fetch_session_id_not_found), code
    return code == ErrorCode.none


def test_the_cache_keeps_followers_sessions_apart_from_consumers(tmp_path: Path) -> None:
    """One slot: a consumer's young session is not evicted by another consumer's, but is by a
    follower's (privileged), which no consumer then evicts; the metrics count them."""
    port = free_port()
    broker = BrokerProcess(
        tmp_path / "data",
        {"max.incremental.fetch.session.cache.slots": "1"},
        tmp_path / "broker.log",
        args=("--metrics-listen", f"127.0.0.1:{port}"),
    )
    try:
        broker.start()
        topic = fresh_topic(broker.bootstrap)
        with Wire(broker.bootstrap) as conn:
            consumer = open_session(conn, {topic: {0: 0, 1: 0}})
            assert consumer != 0
            assert open_session(conn, {topic: {0: 0, 1: 0}}) == 0, "no slot, none evictable"
            assert still_open(conn, consumer)
            follower = open_session(conn, {topic: {0: 0}}, replica_id=7)
            assert follower != 0, "a follower's session evicts a consumer's"
            assert not still_open(conn, consumer, epoch=2)
            assert open_session(conn, {topic: {0: 0, 1: 0}}) == 0
            assert still_open(conn, follower)
            scraped = scrape(port)
        assert scraped.get(f"{CACHE_METRICS}num_incremental_fetch_sessions") == 1
        assert scraped.get(f"{CACHE_METRICS}num_incremental_fetch_partitions_cached") == 1
        assert scraped.get(f"{CACHE_METRICS}incremental_fetch_session_evictions_total") == 1
    finally:
        try:
            broker.stop()
        finally:
            broker.kill()


def test_no_slots_means_no_sessions_and_a_stale_session_is_evicted(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    none = broker_factory(**{"max.incremental.fetch.session.cache.slots": "0"})
    topic = fresh_topic(none.bootstrap, 1)
    with Wire(none.bootstrap) as conn:
        assert open_session(conn, {topic: {0: 0}}) == 0
        assert open_session(conn, {topic: {0: 0}}, replica_id=1) == 0

    stale = broker_factory(
        **{
            "max.incremental.fetch.session.cache.slots": "1",
            "min.incremental.fetch.session.eviction.ms": "200",
        }
    )
    topic = fresh_topic(stale.bootstrap, 1)
    with Wire(stale.bootstrap) as conn:
        first = open_session(conn, {topic: {0: 0}}, replica_id=1)
        assert open_session(conn, {topic: {0: 0}}) == 0, "a young follower's session stays"
        time.sleep(0.5)
        second = open_session(conn, {topic: {0: 0}})
        assert second != 0, "a session unused for the eviction time is evicted"
        assert not still_open(conn, first)
        assert still_open(conn, second)
