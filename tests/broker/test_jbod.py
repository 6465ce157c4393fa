"""Several log directories (``log.dirs``, JBOD) on one broker: where partitions go, what
DescribeLogDirs answers, and a directory that fails (Kafka's ``log_dir_failure_test``).

The failing directory is a small tmpfs (root only: skipped otherwise) that a producer fills.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.alter_replica_log_dirs.v2 import request as alter_replica_log_dirs_v2
from kio.schema.describe_log_dirs.v4 import request as describe_log_dirs_v4
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from kio.schema.produce.v9 import request as produce_v9

from sluice.broker.broker import Broker
from sluice.broker.config import BrokerConfig
from sluice.broker.log_dirs import DuplicatePartitionDirError
from tests.broker.conftest import Wire, create_topic, make_batch, read_partition
from tests.conftest import BrokerProcess

# kafka-python 3.0.12 loads its protocol schemas with the deprecated importlib.resources
# read_text/open_text, at import time and whenever a schema module loads lazily.
READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka.admin import KafkaAdminClient

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning"),
]


# --- helpers -------------------------------------------------------------------------------


def mount_tmpfs(directory: Path, size: str) -> None:
    """Mount a tmpfs of ``size`` on ``directory`` (root only: the test is skipped otherwise)."""
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root")


@pytest.fixture
def small_disk() -> Iterator[Callable[[Path, str], None]]:
    """:func:`mount_tmpfs`, unmounted at teardown."""
    mounted: list[Path] = []

    def mount(directory: Path, size: str) -> None:
        mount_tmpfs(directory, size)
        mounted.append(directory)

    yield mount
    for directory in reversed(mounted):
        subprocess.run(["umount", "-l", str(directory)], check=False)


def fill(directory: Path, leave: int) -> Path:
    """Take the free space of ``directory``'s file system down to about ``leave`` bytes."""
    filler = directory / "filler"
    stat = os.statvfs(directory)
    filler.write_bytes(b"\0" * max(stat.f_bavail * stat.f_frsize - leave, 0))
    return filler


def produce(topic: str, records: bytes, partition: int = 0) -> Any:
    return produce_v9.ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(milliseconds=5000),
        topic_data=(
            produce_v9.TopicProduceData(
                name=topic,
                partition_data=(produce_v9.PartitionProduceData(index=partition, records=records),),
            ),
        ),
    )


def produced(response: Any) -> tuple[ErrorCode, int]:
    ((part,),) = (t.partition_responses for t in response.responses)
    return part.error_code, part.base_offset


def fetch_error(conn: Wire, topic: str, partition: int = 0) -> ErrorCode:
    response = conn.request(
        fetch_v12.FetchRequest(
            max_wait=datetime.timedelta(milliseconds=100),
            min_bytes=1,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=(
                fetch_v12.FetchTopic(
                    topic=topic,
                    partitions=(
                        fetch_v12.FetchPartition(
                            partition=partition,
                            fetch_offset=0,
                            partition_max_bytes=4096,
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        )
    )
    ((part,),) = (t.partitions for t in response.responses)
    return ErrorCode(part.error_code)


def list_offsets_error(conn: Wire, topic: str) -> ErrorCode:
    response = conn.request(
        list_offsets_v7.ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                list_offsets_v7.ListOffsetsTopic(
                    name=topic,
                    partitions=(
                        list_offsets_v7.ListOffsetsPartition(partition_index=0, timestamp=-1),
                    ),
                ),
            ),
        )
    )
    ((part,),) = (t.partitions for t in response.topics)
    return ErrorCode(part.error_code)


def describe_log_dirs(conn: Wire) -> dict[str, tuple[ErrorCode, dict[tuple[str, int], int]]]:
    """Per log directory: its error and the size of each partition in it."""
    response = conn.request(describe_log_dirs_v4.DescribeLogDirsRequest(topics=None))
    return {
        r.log_dir: (
            ErrorCode(r.error_code),
            {(t.name, p.partition_index): p.partition_size for t in r.topics for p in t.partitions},
        )
        for r in response.results
    }


def jbod_broker(tmp_path: Path, dirs: list[Path], **config: str) -> BrokerProcess:
    return BrokerProcess(
        dirs[0], dict(config), tmp_path / "broker.log", more_log_dirs=tuple(dirs[1:])
    )


# --- placement -----------------------------------------------------------------------------


def test_partitions_spread_over_dirs_and_are_found_again(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    config = BrokerConfig.from_properties({"log.dirs": ",".join(map(str, dirs))})
    broker = Broker(config)
    broker.open()
    topic = broker.topics.create("spread", 4, {})
    placed = {i: p.log.directory.parent for i, p in topic.partitions.items()}
    assert placed == {0: dirs[0], 1: dirs[1], 2: dirs[0], 3: dirs[1]}, placed
    more = broker.topics.create("more", 1, {})  # a tie: the first directory
    assert more.partitions[0].log.directory.parent == dirs[0]
    other = broker.topics.create("other", 1, {})  # now b holds fewer
    assert other.partitions[0].log.directory.parent == dirs[1]
    asyncio.run(broker.close())

    for directory in dirs:  # one meta.properties per directory, the same ids
        text = (directory / "meta.properties").read_text()
        assert f"cluster.id={broker.cluster_id}" in text and "node.id=0" in text, text
    assert (dirs[0] / "__topics").is_dir() and not (dirs[1] / "__topics").exists()

    again = Broker(config)
    again.open()
    found = {i: p.log.directory.parent for i, p in again.topics.topics["spread"].partitions.items()}
    assert found == placed, f"restart found {found}, expected {placed}"
    assert again.cluster_id == broker.cluster_id
    asyncio.run(again.close())

    shutil.copytree(dirs[0] / "spread-0", dirs[1] / "spread-0")
    with pytest.raises(DuplicatePartitionDirError, match="spread-0"):
        Broker(config).open()


def test_describe_log_dirs_one_result_per_dir(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker = jbod_broker(tmp_path, dirs).start()
    try:
        create_topic(broker.bootstrap, "sized", partitions=2)
        with Wire(broker.bootstrap) as conn:
            assert produced(conn.request(produce("sized", make_batch([b"x" * 1000]), 1)))[0] == 0
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            (answer,) = admin.describe_log_dirs()
        finally:
            admin.close()
        assert answer["broker"] == 0, answer
        results = {r["log_dir"]: r for r in answer["log_dirs"]}
        assert set(results) == {str(d) for d in dirs}, results
        sizes = {
            d: {
                (t["name"], p["partition_index"]): p["partition_size"]
                for t in results[str(d)]["topics"]
                for p in t["partitions"]
            }
            for d in dirs
        }
        assert sizes[dirs[0]] == {("sized", 0): 0}, sizes
        assert sizes[dirs[1]][("sized", 1)] > 1000, sizes
        for result in results.values():
            assert result["error_code"] == 0 and result["total_bytes"] > 0, result
            assert 0 <= result["usable_bytes"] <= result["total_bytes"], result
    finally:
        broker.stop()


# --- a failing directory -------------------------------------------------------------------


def test_full_dir_goes_offline_and_the_other_keeps_serving(
    tmp_path: Path, small_disk: Callable[[Path, str], None]
) -> None:
    healthy, small = tmp_path / "healthy", tmp_path / "small"
    small_disk(small, "2m")
    broker = jbod_broker(tmp_path, [healthy, small]).start()
    try:
        create_topic(broker.bootstrap, "kept")  # a tie: the first directory
        create_topic(broker.bootstrap, "full", config={"segment.bytes": "1048576"})
        assert (healthy / "kept-0").is_dir() and (small / "full-0").is_dir()
        filler = fill(small, 600_000)

        acked: list[bytes] = []
        with Wire(broker.bootstrap) as conn:
            for i in range(100):
                value = f"{i:06d}".encode() + os.urandom(50_000)
                code, offset = produced(conn.request(produce("full", make_batch([value]))))
                if code != ErrorCode.none:
                    break
                assert offset == len(acked), f"acknowledged {offset}, expected {len(acked)}"
                acked.append(value)
            assert code == ErrorCode.kafka_storage_error, f"got {code} after {len(acked)}"
            assert acked, "the disk filled before anything was written: proves nothing"
            # the directory is offline now: both APIs answer KAFKA_STORAGE_ERROR on it...
            again = produced(conn.request(produce("full", make_batch([b"more"]))))
            assert again[0] == ErrorCode.kafka_storage_error, again
            assert fetch_error(conn, "full") == ErrorCode.kafka_storage_error
            assert list_offsets_error(conn, "full") == ErrorCode.kafka_storage_error
            # ...the other directory's partitions keep serving
            for i in range(3):
                assert produced(conn.request(produce("kept", make_batch([b"k"])))) == (0, i)
            assert fetch_error(conn, "kept") == ErrorCode.none
            assert list_offsets_error(conn, "kept") == ErrorCode.none
            described = describe_log_dirs(conn)
        assert described[str(small)] == (ErrorCode.kafka_storage_error, {}), described
        assert described[str(healthy)][0] == ErrorCode.none, described
        assert ("kept", 0) in described[str(healthy)][1], described
        assert broker.proc is not None and broker.proc.poll() is None, broker.log_text()[-3000:]
        assert "is offline" in broker.log_text()
        assert [r.value for r in read_partition(broker.bootstrap, "kept")] == [b"k"] * 3
    finally:
        broker.stop()

    # healthy again (space freed) and restarted: every acknowledged record is there
    filler.unlink()
    broker.start()
    try:
        assert [r.value for r in read_partition(broker.bootstrap, "full")] == acked
        with Wire(broker.bootstrap) as conn:
            code, offset = produced(conn.request(produce("full", make_batch([b"after"]))))
        assert (code, offset) == (ErrorCode.none, len(acked))
    finally:
        broker.stop()


def test_broker_stops_when_its_only_dir_fails(
    tmp_path: Path, small_disk: Callable[[Path, str], None]
) -> None:
    data = tmp_path / "data"
    small_disk(data, "2m")
    broker = jbod_broker(tmp_path, [data]).start()
    create_topic(broker.bootstrap, "full", config={"segment.bytes": "1048576"})
    filler = fill(data, 400_000)
    acked: list[bytes] = []
    with Wire(broker.bootstrap) as conn:
        for i in range(100):
            value = f"{i:06d}".encode() + os.urandom(50_000)
            code, _ = produced(conn.request(produce("full", make_batch([value]))))
            if code != ErrorCode.none:
                break
            acked.append(value)
    assert code == ErrorCode.kafka_storage_error, f"got {code} after {len(acked)}"
    assert broker.proc is not None
    deadline = time.monotonic() + 20
    while broker.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert broker.proc.poll() not in (None, 0), "the broker should stop with an error"
    assert "every log directory is offline" in broker.log_text(), broker.log_text()[-3000:]

    filler.unlink()
    broker.start()
    try:
        assert [r.value for r in read_partition(broker.bootstrap, "full")] == acked
    finally:
        broker.stop()


def test_a_partition_in_two_dirs_stops_the_start_with_both_paths(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker = jbod_broker(tmp_path, dirs).start()
    create_topic(broker.bootstrap, "twice")
    broker.stop()
    shutil.copytree(dirs[0] / "twice-0", dirs[1] / "twice-0")
    with pytest.raises(Exception):  # noqa: B017 - wait_for_port raises on an early exit
        broker.start()
    assert broker.proc is not None and broker.proc.wait(20) == 1
    text = broker.log_text()
    assert "duplicate log directories for partition twice-0" in text, text[-2000:]
    assert str(dirs[0] / "twice-0") in text and str(dirs[1] / "twice-0") in text, text[-2000:]
    assert "Traceback" not in text, text[-3000:]


# --- moving a replica between directories (AlterReplicaLogDirs) ----------------------------


def alter_replica_log_dirs(conn: Wire, moves: dict[str, list[tuple[str, int]]]) -> dict[Any, Any]:
    """``{path: [(topic, partition), ...]}`` → ``{(topic, partition): error}``."""
    request = alter_replica_log_dirs_v2.AlterReplicaLogDirsRequest(
        dirs=tuple(
            alter_replica_log_dirs_v2.AlterReplicaLogDir(
                path=path,
                topics=tuple(
                    alter_replica_log_dirs_v2.AlterReplicaLogDirTopic(
                        name=topic, partitions=tuple(p for t, p in wanted if t == topic)
                    )
                    for topic in sorted({t for t, _ in wanted})
                ),
            )
            for path, wanted in moves.items()
        )
    )
    response = conn.request(request)
    return {
        (r.topic_name, p.partition_index): ErrorCode(p.error_code)
        for r in response.results
        for p in r.partitions
    }


def future_replicas(conn: Wire) -> dict[tuple[str, str, int], int]:
    """``(log dir, topic, partition)`` → offset lag of each future replica DescribeLogDirs shows."""
    response = conn.request(describe_log_dirs_v4.DescribeLogDirsRequest(topics=None))
    return {
        (r.log_dir, t.name, p.partition_index): p.offset_lag
        for r in response.results
        for t in r.topics
        for p in t.partitions
        if p.is_future_key
    }


def test_alter_replica_log_dirs_moves_a_replica_while_it_is_written(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    broker = jbod_broker(tmp_path, dirs, **{"log.segment.bytes": "4000000"}).start()
    try:
        create_topic(broker.bootstrap, "moving")
        assert (dirs[0] / "moving-0").is_dir()
        # 30 MB before the move: the copy takes many rounds, requests are served in between
        sizes = [75_000] * 400 + [2_000] * 200
        values = [f"{i:05d}".encode() + os.urandom(size) for i, size in enumerate(sizes)]
        with Wire(broker.bootstrap) as conn:
            for i, value in enumerate(values[:400]):
                assert produced(conn.request(produce("moving", make_batch([value])))) == (0, i)
            answer = alter_replica_log_dirs(conn, {str(dirs[1]): [("moving", 0), ("later", 0)]})
            assert answer == {
                ("moving", 0): ErrorCode.none,
                ("later", 0): ErrorCode.replica_not_available,
            }, answer
            futures = future_replicas(conn)
            assert futures.get((str(dirs[1]), "moving", 0), 0) > 0, futures
            for i, value in enumerate(values[400:], start=400):  # written during the move
                assert produced(conn.request(produce("moving", make_batch([value])))) == (0, i)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                described = describe_log_dirs(conn)
                if ("moving", 0) not in described[str(dirs[0])][1]:
                    break
                time.sleep(0.1)
            assert ("moving", 0) in described[str(dirs[1])][1], described
            assert ("moving", 0) not in described[str(dirs[0])][1], described
            # an unknown directory
            missing = alter_replica_log_dirs(conn, {str(tmp_path / "nowhere"): [("moving", 0)]})
            assert missing == {("moving", 0): ErrorCode.log_dir_not_found}, missing
        assert not (dirs[0] / "moving-0").exists() and (dirs[1] / "moving-0").is_dir()
        assert not list(dirs[1].glob("*-future")), list(dirs[1].iterdir())
        assert [r.value for r in read_partition(broker.bootstrap, "moving")] == values
        # the remembered directory: "later" is created there although "a" holds fewer
        create_topic(broker.bootstrap, "later")
        assert (dirs[1] / "later-0").is_dir(), list(dirs[1].iterdir())
    finally:
        broker.stop()
    broker.start()  # the moved replica is found in its new directory after a restart
    try:
        assert [r.value for r in read_partition(broker.bootstrap, "moving")] == values
        with Wire(broker.bootstrap) as conn:
            assert produced(conn.request(produce("moving", make_batch([b"after"])))) == (0, 600)
    finally:
        broker.stop()
