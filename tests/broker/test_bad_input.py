"""Bad input gets a clear error and loses nothing.

A real broker process gets malformed frames (random, or valid requests with bytes flipped, cut or
added), frames it must refuse (negative or oversized size, unknown API), and well-formed requests
it must answer with Kafka's error code (oversized, corrupt or doubled batches, illegal topic
names, unknown topics, bad acks, a full disk). After each, the broker is alive, a fresh
connection is served, and what was acknowledged before is still readable.
"""

from __future__ import annotations

import errno
import os
import random
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.create_topics.v5.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v4 import request as fetch_v4
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.metadata.v1 import request as metadata_v1
from kio.schema.metadata.v9 import request as metadata_v9
from kio.schema.produce.v3 import request as produce_v3
from kio.schema.produce.v9 import request as produce_v9
from kio.serial import entity_reader

from tests.broker.conftest import (
    Wire,
    create_topic,
    encode_request,
    make_batch,
    read_partition,
    watermarks,
)

pytestmark = pytest.mark.timeout(180)

SUPPORTED_KEYS = (0, 1, 2, 3, 18, 19, 20, 21, 22, 32, 33, 37, 44)


# --- requests ------------------------------------------------------------------------------


def produce(
    topic: str, records: bytes | None, *, partition: int = 0, acks: int = -1, version: int = 9
) -> Any:
    mod = produce_v9 if version == 9 else produce_v3
    return mod.ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=_ms(5000),
        topic_data=(
            mod.TopicProduceData(
                name=topic,
                partition_data=(mod.PartitionProduceData(index=partition, records=records),),
            ),
        ),
    )


def metadata(*topics: str, auto_create: bool = True) -> Any:
    return metadata_v9.MetadataRequest(
        topics=tuple(metadata_v9.MetadataRequestTopic(name=t) for t in topics),
        allow_auto_topic_creation=auto_create,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


def create_topics(*names: str, partitions: int = 1, **configs: str) -> Any:
    return CreateTopicsRequest(
        topics=tuple(
            CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=1,
                assignments=(),
                configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in configs.items()),
            )
            for name in names
        ),
        timeout=_ms(5000),
        validate_only=False,
    )


def _ms(n: int) -> Any:
    import datetime

    return datetime.timedelta(milliseconds=n)


def partition_error(response: Any) -> tuple[ErrorCode, int]:
    """(error code, base offset) of the only partition of a Produce response."""
    (topic,) = response.responses
    (part,) = topic.partition_responses
    return part.error_code, part.base_offset


# --- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def served(broker: Any) -> Any:
    """The default broker with topic ``kept`` holding three acknowledged records."""
    with Wire(broker.bootstrap) as conn:
        (result,) = conn.request(create_topics("kept")).topics
        assert result.error_code == ErrorCode.none, result
        for i in range(3):
            response = conn.request(produce("kept", make_batch([f"kept-{i}".encode()])))
            assert partition_error(response) == (ErrorCode.none, i)
    return broker


def assert_healthy(broker: Any, kept: bool = True) -> None:
    """The process runs, a fresh connection is answered, and ``kept`` still holds its records."""
    assert broker.proc.poll() is None, (
        f"broker exited with {broker.proc.returncode}:\n{broker.log_text()[-3000:]}"
    )
    with Wire(broker.bootstrap) as conn:
        versions = conn.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert versions.error_code == ErrorCode.none
        assert {k.api_key for k in versions.api_keys} >= {0, 1, 3, 18}
        meta = conn.request(metadata("kept" if kept else "healthcheck"))
        assert meta.brokers and meta.brokers[0].port == broker.port
        assert meta.topics[0].error_code == ErrorCode.none, meta.topics[0]
    if kept:
        values = [r.value for r in read_partition(broker.bootstrap, "kept")]
        assert values == [b"kept-0", b"kept-1", b"kept-2"], f"topic 'kept' now holds {values}"


# --- frames the broker must refuse by closing the connection -------------------------------


def test_negative_frame_size_closes_the_connection(served: Any) -> None:
    with Wire(served.bootstrap) as conn:
        conn.send(struct.pack(">i", -1) + b"\x00" * 64)
        assert conn.closed_by_peer(), "a negative frame size should close the connection"
    assert_healthy(served)


def test_frame_above_socket_request_max_bytes_closes_the_connection(
    broker_factory: Callable[..., Any],
) -> None:
    broker = broker_factory(**{"socket.request.max.bytes": "4096"})
    with Wire(broker.bootstrap) as conn:
        # The broker must refuse on the size alone, without waiting for (or buffering) the body.
        conn.send(struct.pack(">i", 4097) + b"\x00\x12\x00\x00")
        assert conn.closed_by_peer(), "a frame above socket.request.max.bytes should be refused"
    with Wire(broker.bootstrap) as conn:
        conn.send(struct.pack(">i", 2**31 - 1))
        assert conn.closed_by_peer()
    assert_healthy(broker, kept=False)


def test_unknown_api_key_closes_the_connection(served: Any) -> None:
    for api_key, version in ((999, 0), (-5, 0), (68, 0), (0, 99)):  # 68: not served (KIP-848)
        with Wire(served.bootstrap) as conn:
            conn.send(_raw_frame(api_key, version, b"\x00" * 16))
            assert conn.closed_by_peer(), f"API {api_key} v{version} should close the connection"
    assert_healthy(served)


def test_api_versions_above_max_gets_v0_unsupported_version_with_the_list(served: Any) -> None:
    with Wire(served.bootstrap) as conn:
        # A flexible-version header (v2: client id then empty tagged fields) and a v3-like body.
        conn.send(_raw_frame(18, 99, b"\x02t\x021\x00", correlation_id=4242, tagged=True))
        payload = conn.read_frame()
        assert payload is not None, "ApiVersions v99 should be answered, not refused"
        (correlation,) = struct.unpack_from(">i", payload)
        body, _ = entity_reader(ApiVersionsResponseV0)(payload, 4)
        assert correlation == 4242
        assert body.error_code == ErrorCode.unsupported_version, body.error_code
        versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        assert versions.get(18) == (0, 3) and versions.get(0) == (3, 9), versions
        # The connection stays usable: the client retries with a version from the list.
        again = conn.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert again.error_code == ErrorCode.none
    assert_healthy(served)


def _raw_frame(
    api_key: int,
    version: int,
    body: bytes,
    *,
    correlation_id: int = 1,
    client_id: bytes = b"fuzz",
    tagged: bool = False,
) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if tagged:
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


# --- well-formed requests answered with an error code --------------------------------------


def test_batch_over_max_message_bytes_is_message_too_large(served: Any) -> None:
    with Wire(served.bootstrap) as conn:
        (result,) = conn.request(create_topics("small", **{"max.message.bytes": "2000"})).topics
        assert result.error_code == ErrorCode.none, result
        ok = conn.request(produce("small", make_batch([b"x" * 1500])))
        assert partition_error(ok) == (ErrorCode.none, 0)
        too_large = conn.request(produce("small", make_batch([b"x" * 3000])))
        assert partition_error(too_large)[0] == ErrorCode.message_too_large
        # The broker-wide default applies to "kept": about 1 MiB.
        huge = conn.request(produce("kept", make_batch([os.urandom(1_100_000)])))
        assert partition_error(huge)[0] == ErrorCode.message_too_large
    assert [r.value for r in read_partition(served.bootstrap, "small")] == [b"x" * 1500]
    assert_healthy(served)


def test_flipped_byte_under_the_crc_is_corrupt_message(served: Any) -> None:
    good = make_batch([b"payload-to-damage" * 4], keys=[b"key"])
    with Wire(served.bootstrap) as conn:
        # Each region the CRC covers: attributes, timestamps, producer fields, record bytes.
        for position in (22, 30, 45, 58, len(good) - 20, len(good) - 1):
            damaged = bytearray(good)
            damaged[position] ^= 0x40
            response = conn.request(produce("kept", bytes(damaged)))
            assert partition_error(response)[0] == ErrorCode.corrupt_message, (
                f"flipped byte {position}: expected CORRUPT_MESSAGE, "
                f"got {partition_error(response)}"
            )
    assert watermarks(served.bootstrap, "kept") == (0, 3)
    assert_healthy(served)


@pytest.mark.parametrize("name", ["bad topic", "a/b", "..", "topic!", "x" * 250, "ünï"])
def test_illegal_topic_name_is_invalid_topic_exception(served: Any, name: str) -> None:
    with Wire(served.bootstrap) as conn:
        (meta,) = conn.request(metadata(name, auto_create=True)).topics
        assert meta.error_code == ErrorCode.invalid_topic_exception, (name, meta.error_code)
        old_meta = conn.request(
            metadata_v1.MetadataRequest(topics=(metadata_v1.MetadataRequestTopic(name=name),))
        )
        assert old_meta.topics[0].error_code == ErrorCode.invalid_topic_exception
        (created,) = conn.request(create_topics(name)).topics
        assert created.error_code == ErrorCode.invalid_topic_exception, (name, created)
        assert created.error_message, "the refusal should say what is wrong with the name"
        listing = conn.request(
            metadata_v9.MetadataRequest(
                topics=None,
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
        )
        assert {t.name for t in listing.topics} == {"kept"}
    assert_healthy(served)


def test_produce_to_unknown_topic_or_partition(served: Any) -> None:
    with Wire(served.bootstrap) as conn:
        unknown = conn.request(produce("never-created", make_batch([b"lost"])))
        assert partition_error(unknown)[0] == ErrorCode.unknown_topic_or_partition
        beyond = conn.request(produce("kept", make_batch([b"lost"]), partition=7))
        assert partition_error(beyond)[0] == ErrorCode.unknown_topic_or_partition
        (meta,) = conn.request(metadata("never-created", auto_create=False)).topics
        assert meta.error_code == ErrorCode.unknown_topic_or_partition, "produce created a topic"
    assert_healthy(served)


@pytest.mark.parametrize("acks", [5, 2, -2])
def test_bad_acks_is_invalid_required_acks(served: Any, acks: int) -> None:
    with Wire(served.bootstrap) as conn:
        response = conn.request(produce("kept", make_batch([b"lost"]), acks=acks))
        assert partition_error(response)[0] == ErrorCode.invalid_required_acks
    assert watermarks(served.bootstrap, "kept") == (0, 3)
    assert_healthy(served)


def test_two_batches_in_one_partition_is_invalid_record(served: Any) -> None:
    doubled = make_batch([b"lost-1"]) + make_batch([b"lost-2"])
    with Wire(served.bootstrap) as conn:
        for version in (9, 3):
            response = conn.request(produce("kept", doubled, version=version))
            assert partition_error(response)[0] == ErrorCode.invalid_record, version
    assert watermarks(served.bootstrap, "kept") == (0, 3)
    assert_healthy(served)


def test_record_without_key_on_compacted_topic_is_invalid_record(served: Any) -> None:
    """Compaction keeps the latest record per key; a keyless record would be dropped silently
    by the cleaner after it was acknowledged, so Kafka refuses it at produce time."""
    with Wire(served.bootstrap) as conn:
        (result,) = conn.request(create_topics("keyed", **{"cleanup.policy": "compact"})).topics
        assert result.error_code == ErrorCode.none, result
        ok = conn.request(produce("keyed", make_batch([b"v"], keys=[b"k"])))
        assert partition_error(ok) == (ErrorCode.none, 0)
        for compression in (0, 1):
            keyless = make_batch([b"v2", b"v3"], keys=[b"k", None], compression=compression)
            response = conn.request(produce("keyed", keyless))
            assert partition_error(response)[0] == ErrorCode.invalid_record, (
                f"a keyless record on a compacted topic (compression {compression}) "
                f"got {partition_error(response)}"
            )
    assert [(r.key, r.value) for r in read_partition(served.bootstrap, "keyed")] == [(b"k", b"v")]
    assert_healthy(served)


# --- fuzzing ---------------------------------------------------------------------------------


def _valid_frames() -> list[tuple[str, bytes]]:
    batch = make_batch([b"fuzz-value"] * 3, keys=[b"k1", b"k2", None], compression=1)
    fetch12 = fetch_v12.FetchRequest(
        max_wait=_ms(100),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            fetch_v12.FetchTopic(
                topic="kept",
                partitions=(
                    fetch_v12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=4096),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    fetch4 = fetch_v4.FetchRequest(
        max_wait=_ms(100),
        min_bytes=1,
        topics=(
            fetch_v4.FetchTopic(
                topic="kept",
                partitions=(
                    fetch_v4.FetchPartition(partition=0, fetch_offset=1, partition_max_bytes=4096),
                ),
            ),
        ),
    )
    requests = {
        "produce v9": produce("fuzz", batch),
        "produce v3": produce("fuzz", make_batch([b"v"]), version=3, acks=1),
        "fetch v12": fetch12,
        "fetch v4": fetch4,
        "metadata v9": metadata("fuzz", "kept"),
        "metadata v1": metadata_v1.MetadataRequest(
            topics=(metadata_v1.MetadataRequestTopic(name="fuzz"),)
        ),
        "api versions v3": ApiVersionsRequest(
            client_software_name="fuzz", client_software_version="1"
        ),
        "create topics v5": create_topics("fuzz-created", partitions=2, **{"retention.ms": "1000"}),
    }
    return [(name, encode_request(body, 7)) for name, body in requests.items()]


VALID_FRAMES = _valid_frames()


@st.composite
def mutated_frames(draw: st.DrawFn) -> bytes:
    _, frame = draw(st.sampled_from(VALID_FRAMES))
    payload = bytearray(frame[4:])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "truncate", "extend", "insert", "delete"]))
        at = draw(st.integers(0, max(len(payload) - 1, 0)))
        if kind == "flip" and payload:
            payload[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and payload:
            payload[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif kind == "truncate":
            del payload[at:]
        elif kind == "extend":
            payload += draw(st.binary(min_size=1, max_size=64))
        elif kind == "insert":
            payload[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del payload[at : at + draw(st.integers(1, 8))]
    size = draw(
        st.one_of(
            st.just(len(payload)),  # mostly a consistent size prefix: the body reaches the parser
            st.just(len(payload)),
            st.just(len(frame) - 4),  # the original size: too few or too many bytes follow
            st.integers(-(2**31), 2**31 - 1),
        )
    )
    return struct.pack(">i", size) + bytes(payload)


random_frames = st.one_of(
    st.binary(max_size=300),
    st.builds(
        _raw_frame,
        st.sampled_from(SUPPORTED_KEYS),
        st.integers(-1, 15),
        st.binary(max_size=200),
    ),
    st.binary(max_size=200).map(lambda body: struct.pack(">i", len(body)) + body),
)


def send_bad(bootstrap: str, frame: bytes) -> str:
    """Send ``frame``, then EOF; return how the broker reacted ("closed" or "open")."""
    with Wire(bootstrap, timeout=5) as conn:
        try:
            conn.send(frame)
            conn.sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            return "closed"
        except OSError as exc:
            # The broker refuses a bad size before reading what follows, and a close with
            # unread bytes is a reset (as with Kafka): shutdown() then finds no connection.
            if exc.errno != errno.ENOTCONN:
                raise
            return "closed"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                payload = conn.read_frame()
            except (TimeoutError, AssertionError):
                return "open"
            if payload is None:
                return "closed"
        return "open"


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frame=st.one_of(mutated_frames(), random_frames))
def test_fuzzed_frames_never_take_the_broker_down(served: Any, frame: bytes) -> None:
    outcome = send_bad(served.bootstrap, frame)
    api_key = struct.unpack_from(">h", frame, 4)[0] if len(frame) >= 6 else None
    if api_key != 1:  # only a Fetch may legitimately wait (long poll) before answering
        assert outcome == "closed", (
            f"after EOF the broker should answer and close, it kept the connection: {frame!r}"
        )
    assert served.proc.poll() is None, served.log_text()[-3000:]
    with Wire(served.bootstrap) as conn:
        versions = conn.request(
            ApiVersionsRequest(client_software_name="t", client_software_version="1")
        )
        assert versions.error_code == ErrorCode.none
        (meta,) = conn.request(metadata("kept", auto_create=False)).topics
        assert meta.error_code == ErrorCode.none and len(meta.partitions) == 1


def test_many_bad_connections_do_not_leak_memory(served: Any) -> None:
    rng = random.Random(20240601)
    process = psutil.Process(served.pid)

    def barrage(count: int) -> None:
        for i in range(count):
            _, frame = VALID_FRAMES[i % len(VALID_FRAMES)]
            data = bytearray(frame)
            match i % 5:
                case 0:
                    data = bytearray(rng.randbytes(rng.randint(0, 300)))
                case 1:
                    data[rng.randrange(4, len(data))] ^= 0xFF
                case 2:
                    del data[rng.randrange(5, len(data)) :]
                case 3:
                    data[:4] = struct.pack(">i", 50_000_000)  # claims 50 MB, sends little
                case 4:
                    data[4:6] = struct.pack(">h", rng.randint(100, 30000))
            send_bad(served.bootstrap, bytes(data))

    barrage(100)  # warm-up: code paths and caches loaded
    before = process.memory_info().rss
    barrage(400)
    after = process.memory_info().rss
    growth = (after - before) / 2**20
    assert growth < 50, f"broker RSS grew by {growth:.1f} MiB over 400 bad connections"
    assert_healthy(served)


# --- a full disk -----------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[Path, str], None]]:
    """Mount a tmpfs of a given size on a directory (root only); unmounted at teardown."""
    mounted: list[Path] = []

    def mount(directory: Path, size: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); needs root")
        mounted.append(directory)

    yield mount
    for directory in reversed(mounted):
        subprocess.run(["umount", "-l", str(directory)], check=False)


def test_full_disk_is_storage_error_then_the_broker_stops(
    broker_factory: Callable[..., Any], small_disk: Callable[[Path, str], None]
) -> None:
    """A full disk fails the write: the produce is refused (KAFKA_STORAGE_ERROR), the log
    directory goes offline and, being the broker's only one, the broker stops (Kafka's
    ``LogDirFailureChannel``; several directories: tests/broker/test_jbod.py). Nothing
    acknowledged is lost: with space freed, a restart serves every acknowledged record."""
    broker = broker_factory()
    broker.stop()
    small_disk(broker.data_dir, "4m")  # a fresh, empty data directory of 4 MiB
    broker.start()
    create_topic(broker.bootstrap, "disk", config={"segment.bytes": "1048576"})
    filler = broker.data_dir / "filler"
    stat = os.statvfs(broker.data_dir)
    free = stat.f_bavail * stat.f_frsize
    filler.write_bytes(b"\0" * max(free - 1_500_000, 0))

    acked: list[bytes] = []
    refused: ErrorCode | None = None
    with Wire(broker.bootstrap) as conn:
        for i in range(200):
            value = f"{i:06d}".encode() + os.urandom(50_000)
            code, offset = partition_error(conn.request(produce("disk", make_batch([value]))))
            if code != ErrorCode.none:
                refused = code
                break
            assert offset == len(acked), f"acknowledged offset {offset}, expected {len(acked)}"
            acked.append(value)
    assert refused == ErrorCode.kafka_storage_error, (
        f"expected KAFKA_STORAGE_ERROR once the disk is full, got {refused} "
        f"after {len(acked)} records"
    )
    assert acked, "the disk filled before anything was written: the test proves nothing"
    try:
        code = broker.proc.wait(20)
    except subprocess.TimeoutExpired:
        raise AssertionError("the broker should stop: its only log directory is offline") from None
    assert code != 0, f"expected a failed exit, got {code}"
    assert "every log directory is offline" in broker.log_text(), broker.log_text()[-3000:]

    filler.unlink()
    broker.start()
    try:
        assert [r.value for r in read_partition(broker.bootstrap, "disk")] == acked
        assert watermarks(broker.bootstrap, "disk") == (0, len(acked))
        with Wire(broker.bootstrap) as conn:
            code, offset = partition_error(conn.request(produce("disk", make_batch([b"after"]))))
        assert (code, offset) == (ErrorCode.none, len(acked)), "produce after a restart"
    finally:
        broker.stop()
