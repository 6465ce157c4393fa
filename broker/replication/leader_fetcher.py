"""One leader's fetcher: the asyncio task that copies, over one connection, every partition this
broker follows from that leader (Kafka's ``ReplicaFetcherThread``). :mod:`.fetcher` describes
the protocol it speaks and what it does with each answer; its manager,
:class:`~sluice.broker.replication.fetcher.ReplicaFetcherManager`, gives it its partitions."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.list_offsets.v7 import request as list_offsets_v7
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from sluice.broker.config import BrokerConfig
from sluice.broker.log import Log
from sluice.broker.log.errors import LogError
from sluice.broker.records.batch import InvalidBatchError, read_header
from sluice.broker.replication.client import BrokerClient, BrokerConnectionError
from sluice.broker.replication.session_handler import (
    FetchPosition,
    FetchSessionHandler,
    SessionRequest,
)
from sluice.broker.topics import Partition
from sluice.errors import CorruptRecordError, StorageError

log = logging.getLogger("sluice.broker.replication.fetcher")
"""The replica fetcher's logger, one name for both modules of it (what operators filter on)."""

Clock = Callable[[], int]
"""Wall-clock milliseconds (the broker's clock): the time of appends."""

LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
REQUEST_TIMEOUT_S = 30.0
"""How long a request may go unanswered beyond its own wait (Kafka's
``replica.socket.timeout.ms`` default)."""

PartitionKey = tuple[str, int]


class FetchState(Enum):
    """Where the fetching of one partition stands."""

    FETCHING = "fetching"
    BACKING_OFF = "backing off"
    """An error answered: fetched again after ``replica.fetch.backoff.ms``."""
    FENCED = "fenced"
    """FENCED_LEADER_EPOCH: not fetched until re-pointed (:meth:`ReplicaFetcherManager.follow`)."""
    FAILED = "failed"
    """The disk failed: not fetched until re-pointed."""


@dataclass(eq=False)
class Followed:
    """One partition as its fetcher knows it (replaced on every re-pointing, so that an answer
    to a Fetch sent before can be recognised and dropped)."""

    partition: Partition
    leader_epoch: int
    state: FetchState = FetchState.FETCHING
    retry_at: float = 0.0
    """Loop time after which a partition backing off is fetched again."""
    reason: str = ""
    """What the last state change was about (logged once)."""
    in_sync: bool = False
    """Whether the log reached the leader's high watermark at the last answer (Kafka's
    ``PartitionFetchState.isReplicaInSync``): a replica in sync is never throttled."""

    @property
    def name(self) -> str:
        return f"{self.partition.topic}-{self.partition.index}"

    @property
    def log(self) -> Log:
        return self.partition.log


@dataclass
class FetcherSettings:
    """The fetch keys of the broker config, in the units used here."""

    wait_max_ms: int
    min_bytes: int
    response_max_bytes: int
    partition_max_bytes: int
    backoff_s: float

    @classmethod
    def of(cls, config: BrokerConfig) -> FetcherSettings:
        return cls(
            int(config["replica.fetch.wait.max.ms"]),
            int(config["replica.fetch.min.bytes"]),
            int(config["replica.fetch.response.max.bytes"]),
            int(config["replica.fetch.max.bytes"]),
            int(config["replica.fetch.backoff.ms"]) / 1000,
        )


if TYPE_CHECKING:
    from sluice.broker.replication.fetcher import ReplicaFetcherManager

__all__ = [
    "REQUEST_TIMEOUT_S",
    "FetchState",
    "FetcherSettings",
    "Followed",
    "LeaderFetcher",
    "PartitionKey",
]


class LeaderFetcher:
    """The task fetching every partition one leader leads for us (Kafka's fetcher thread)."""

    def __init__(
        self,
        manager: ReplicaFetcherManager,
        leader_id: int,
        address: tuple[str, int],
        fetcher_id: int = 0,
    ) -> None:
        self.manager = manager
        self.leader_id = leader_id
        self.address = address
        self.fetcher_id = fetcher_id
        """Which of the leader's ``num.replica.fetchers`` fetchers this is."""
        self.partitions: dict[PartitionKey, Followed] = {}
        self._client: BrokerClient | None = None
        self._disconnected = ""
        """Why the last connection failed ("": connected, or not tried yet)."""
        self.session = FetchSessionHandler()
        """The fetch session with the leader (KIP-227)."""
        self._changed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"ReplicaFetcher-{fetcher_id}-{leader_id}"
        )

    @property
    def _where(self) -> str:
        return f"leader {self.leader_id} ({self.address[0]}:{self.address[1]})"

    # -- changes from the manager ---------------------------------------------------------------

    def add(self, partition: Partition, leader_epoch: int) -> None:
        key = (partition.topic, partition.index)
        current = self.partitions.get(key)
        if (
            current is not None
            and current.partition is partition
            and current.leader_epoch == leader_epoch
            and current.state in (FetchState.FETCHING, FetchState.BACKING_OFF)
        ):
            return
        followed = self.partitions[key] = Followed(partition, leader_epoch)
        log.info(
            "%s: following %s in leader epoch %d from offset %d",
            followed.name,
            self._where,
            leader_epoch,
            partition.log.log_end_offset,
        )
        self._changed.set()

    def remove(self, key: PartitionKey) -> None:
        followed = self.partitions.pop(key, None)
        if followed is not None:
            log.info("%s: no longer following %s", followed.name, self._where)

    def repoint(self, address: tuple[str, int]) -> None:
        """The leader is now at ``address``: the next round connects there."""
        log.info("%s moved to %s:%d", self._where, *address)
        self.address = address
        self.session = FetchSessionHandler()  # another process: its sessions are not ours
        if self._client is not None:
            self._client.close()
            self._client = None
        self._changed.set()

    def stop(self) -> None:
        self._task.cancel()

    async def wait_stopped(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    # -- the loop ----------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                settings = FetcherSettings.of(self.manager.config)
                try:
                    await self._round(settings)
                except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
                    raise
                except Exception:  # a bug must not stop replication of every partition
                    log.exception("replica fetcher for %s failed; going on", self._where)
                    await asyncio.sleep(settings.backoff_s)
        finally:
            if self._client is not None:
                await self._client.wait_closed()
                self._client = None

    async def _round(self, settings: FetcherSettings) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        throttles = self.manager.throttles
        ready = [
            f
            for f in self.partitions.values()
            if (
                f.state is FetchState.FETCHING
                or (f.state is FetchState.BACKING_OFF and f.retry_at <= now)
            )
            and not throttles.follower_holds_back(f.partition, f.in_sync)
        ]
        if not ready:
            retries = [
                f.retry_at for f in self.partitions.values() if f.state is FetchState.BACKING_OFF
            ]
            wait = min(retries) - now if retries else settings.backoff_s
            held_back = throttles.follower.delay_s()  # > 0: partitions wait for the quota
            if held_back > 0:
                wait = min(wait, held_back)
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), max(wait, 0.001))
            return
        client = await self._connected(settings)
        if client is None:
            return
        sent = {(f.partition.topic, f.partition.index): (f, f.log.log_end_offset) for f in ready}
        session = self.session.build({key: _position(f, settings) for key, (f, _) in sent.items()})
        request = self._fetch_request(session, sent, settings)
        try:
            response = await client.call(
                request, timeout_s=self.manager.request_timeout_s + settings.wait_max_ms / 1000
            )
        except BrokerConnectionError as exc:
            self._connection_failed(exc)
            await asyncio.sleep(settings.backoff_s)
            return
        except BaseException:  # cancelled mid-request: the answer will not be taken in
            self.session.reset()
            raise
        before = self.session.session_id
        if not self.session.handle_response(
            session, int(response.error_code), int(response.session_id)
        ):
            log.info(
                "fetch session %d with %s: %s; starting over with a full fetch",
                session.session_id,
                self._where,
                ErrorCode(response.error_code).name,
            )
            return
        if self.session.session_id != before and self.session.session_id:
            log.info(
                "fetch session %d with %s: %d partitions",
                self.session.session_id,
                self._where,
                len(session.send),
            )
        out_of_range: list[Followed] = []
        for topic in response.responses:
            for answer in topic.partitions:
                followed, offset = sent.get((topic.topic, answer.partition_index), (None, -1))
                if followed is None or not self._current(followed, offset):
                    continue
                code = answer.error_code
                if code == ErrorCode.offset_out_of_range:
                    out_of_range.append(followed)
                else:
                    self._apply(followed, answer, code, settings)
        if out_of_range:
            await self._out_of_range(client, out_of_range, settings)

    async def _connected(self, settings: FetcherSettings) -> BrokerClient | None:
        """The connection to the leader, opened if needed (None: it failed; backed off)."""
        if self._client is not None and not self._client.closed:
            return self._client
        host, port = self.address
        try:
            self._client = await BrokerClient.connect(
                host,
                port,
                client_id=f"sluice-replica-fetcher-{self.manager.broker_id}-{self.fetcher_id}",
                timeout_s=self.manager.request_timeout_s,
                security=self.manager.security,
            )
        except BrokerConnectionError as exc:
            self._connection_failed(exc)
            await asyncio.sleep(settings.backoff_s)
            return None
        if self._disconnected:
            log.info("replica fetcher connected to %s again", self._where)
            self._disconnected = ""
        return self._client

    def _connection_failed(self, exc: BrokerConnectionError) -> None:
        self.session.reset()
        if self._client is not None:
            self._client.close()
            self._client = None
        if not self._disconnected:
            log.warning(
                "replica fetcher lost %s: %s; retrying every %g s",
                self._where,
                exc.reason,
                FetcherSettings.of(self.manager.config).backoff_s,
            )
        self._disconnected = exc.reason

    def _current(self, followed: Followed, offset: int) -> bool:
        """Whether an answer to a fetch of ``followed`` from ``offset`` still applies."""
        key = (followed.partition.topic, followed.partition.index)
        return (
            self.partitions.get(key) is followed
            and followed.state in (FetchState.FETCHING, FetchState.BACKING_OFF)
            and followed.log.log_end_offset == offset
        )

    def _fetch_request(
        self,
        session: SessionRequest,
        sent: dict[PartitionKey, tuple[Followed, int]],
        settings: FetcherSettings,
    ) -> Any:
        """The replica Fetch of ``session``: the partitions it names (all of them in a full
        request, the added and changed ones in an incremental one) and those it forgets."""
        topics: dict[str, list[fetch_v12.FetchPartition]] = {}
        for (topic, index), position in session.send.items():
            leader_epoch, offset, last_fetched, log_start, max_bytes = position
            topics.setdefault(topic, []).append(
                fetch_v12.FetchPartition(
                    partition=i32(index),
                    current_leader_epoch=i32(leader_epoch),
                    fetch_offset=i64(offset),
                    last_fetched_epoch=i32(last_fetched),
                    log_start_offset=i64(log_start),
                    partition_max_bytes=i32(max_bytes),
                )
            )
        forgotten: dict[str, list[i32]] = {}
        for topic, index in session.forget:
            forgotten.setdefault(topic, []).append(i32(index))
        return fetch_v12.FetchRequest(
            replica_id=BrokerId(self.manager.broker_id),
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=settings.wait_max_ms)),
            min_bytes=i32(settings.min_bytes),
            max_bytes=i32(settings.response_max_bytes),
            isolation_level=i8(0),
            session_id=i32(session.session_id),
            session_epoch=i32(session.epoch),
            topics=tuple(
                fetch_v12.FetchTopic(topic=TopicName(name), partitions=tuple(partitions))
                for name, partitions in topics.items()
            ),
            forgotten_topics_data=tuple(
                fetch_v12.ForgottenTopic(topic=TopicName(name), partitions=tuple(indexes))
                for name, indexes in forgotten.items()
            ),
            rack_id="",
        )

    # -- what an answer does -------------------------------------------------------------------

    def _apply(
        self, followed: Followed, answer: Any, code: ErrorCode, settings: FetcherSettings
    ) -> None:
        if code == ErrorCode.fenced_leader_epoch:
            self._set(followed, FetchState.FENCED, f"leader epoch {followed.leader_epoch} fenced")
            return
        if code != ErrorCode.none:
            self._back_off(followed, code.name, settings)
            return
        plog = followed.log
        try:
            diverging = answer.diverging_epoch
            if diverging.epoch != -1 or diverging.end_offset != -1:
                self._truncate_diverging(followed, int(diverging.epoch), int(diverging.end_offset))
                return
            if answer.records:
                self._start_at_first_batch(followed, answer.records)
                plog.append_as_follower(answer.records, now_ms=self.manager.clock())
                self.manager.throttles.received(followed.partition, len(answer.records))
            plog.set_high_watermark(min(int(answer.high_watermark), plog.log_end_offset))
            followed.in_sync = plog.log_end_offset >= int(answer.high_watermark)
            leader_start = int(answer.log_start_offset)
            if leader_start > plog.log_start_offset:
                plog.delete_records_before(
                    min(leader_start, plog.high_watermark), now_ms=self.manager.clock()
                )
        except (CorruptRecordError, LogError, InvalidBatchError) as exc:
            self._back_off(followed, f"records refused: {exc}", settings)
            return
        except StorageError as exc:
            self._set(followed, FetchState.FAILED, f"disk error: {exc}", level=logging.ERROR)
            self._storage_failed(followed, exc)
            return
        self._set(followed, FetchState.FETCHING, "")

    def _storage_failed(self, followed: Followed, exc: StorageError) -> None:
        """Tell the manager's listener (the log directory goes offline), after this round."""
        listener = self.manager.on_storage_error
        if listener is not None:
            asyncio.get_running_loop().call_soon(listener, followed.partition, str(exc))

    def _start_at_first_batch(self, followed: Followed, records: bytes) -> None:
        """An empty log whose start falls inside the leader's first batch (the leader's log
        start, moved by DeleteRecords, is inside that batch) starts over at that batch, as
        Kafka's ``Partition.appendRecordsToFollowerOrFutureReplica`` does."""
        plog = followed.log
        end = plog.log_end_offset
        first = read_header(records)
        if end == plog.log_start_offset and first.base_offset < end <= first.last_offset:
            plog.truncate_fully_and_start_at(first.base_offset)
            log.info(
                "%s: the leader's first batch holds offsets %d..%d: empty log started over at %d",
                followed.name,
                first.base_offset,
                first.last_offset,
                first.base_offset,
            )

    def _truncate_diverging(self, followed: Followed, epoch: int, end_offset: int) -> None:
        """Kafka's ``getOffsetTruncationState`` for a leader's ``diverging_epoch``."""
        plog = followed.log
        end = plog.log_end_offset
        if end_offset < 0:
            target = end
        elif epoch < 0:
            target = min(end_offset, end)
        else:
            ours, our_end = plog.end_offset_for_epoch(epoch)
            if our_end < 0:  # no epoch at or below it here
                target = min(end_offset, end)
            elif ours != epoch:  # not ours: cut to the end of our epoch below it, ask again
                target = min(our_end, end)
            else:
                target = min(our_end, end_offset, end)
        self._truncate(
            followed, target, f"diverges from the leader's after epoch {epoch} at {end_offset}"
        )

    def _truncate(self, followed: Followed, target: int, why: str) -> None:
        plog = followed.log
        before = plog.log_end_offset
        if target < plog.log_start_offset:
            plog.truncate_fully_and_start_at(target)
        else:
            plog.truncate_to(target)
        log.info(
            "%s: log %s: truncated from offset %d to %d",
            followed.name,
            why,
            before,
            plog.log_end_offset,
        )

    async def _out_of_range(
        self, client: BrokerClient, partitions: list[Followed], settings: FetcherSettings
    ) -> None:
        """OFFSET_OUT_OF_RANGE: where the leader's log is decides (Kafka's
        ``fetchOffsetAndTruncate``)."""
        try:
            latest = await self._list_offsets(client, partitions, LATEST_TIMESTAMP)
            behind = [f for f in partitions if f in latest and latest[f] >= f.log.log_end_offset]
            earliest = await self._list_offsets(client, behind, EARLIEST_TIMESTAMP)
        except BrokerConnectionError as exc:
            self._connection_failed(exc)
            return
        for followed in partitions:
            if self.partitions.get((followed.partition.topic, followed.partition.index)) is not (
                followed
            ):
                continue
            plog = followed.log
            try:
                if followed in latest and latest[followed] < plog.log_end_offset:
                    self._truncate(
                        followed, latest[followed], f"ends past the leader's end {latest[followed]}"
                    )
                elif followed in earliest and plog.log_end_offset < earliest[followed]:
                    before = plog.log_end_offset
                    plog.truncate_fully_and_start_at(earliest[followed])
                    log.info(
                        "%s: log ended at %d, below the leader's log start: started over at %d",
                        followed.name,
                        before,
                        earliest[followed],
                    )
                else:
                    self._back_off(followed, "OFFSET_OUT_OF_RANGE", settings)
            except LogError as exc:
                self._back_off(followed, f"truncation refused: {exc}", settings)
            except StorageError as exc:
                self._set(followed, FetchState.FAILED, f"disk error: {exc}", level=logging.ERROR)
                self._storage_failed(followed, exc)

    async def _list_offsets(
        self, client: BrokerClient, partitions: list[Followed], timestamp: int
    ) -> dict[Followed, int]:
        """The leader's offset at ``timestamp`` (latest or earliest) of each partition it
        answers without an error (the others back off)."""
        if not partitions:
            return {}
        topics: dict[str, list[list_offsets_v7.ListOffsetsPartition]] = {}
        for followed in partitions:
            topics.setdefault(followed.partition.topic, []).append(
                list_offsets_v7.ListOffsetsPartition(
                    partition_index=i32(followed.partition.index),
                    current_leader_epoch=i32(followed.leader_epoch),
                    timestamp=i64(timestamp),
                )
            )
        request = list_offsets_v7.ListOffsetsRequest(
            replica_id=BrokerId(self.manager.broker_id),
            isolation_level=i8(0),
            topics=tuple(
                list_offsets_v7.ListOffsetsTopic(name=TopicName(name), partitions=tuple(parts))
                for name, parts in topics.items()
            ),
        )
        response = await client.call(request, timeout_s=self.manager.request_timeout_s)
        by_key = {(f.partition.topic, f.partition.index): f for f in partitions}
        found: dict[Followed, int] = {}
        settings = FetcherSettings.of(self.manager.config)
        for topic in response.topics:
            for answer in topic.partitions:
                asked = by_key.get((topic.name, answer.partition_index))
                if asked is None:
                    continue
                followed = asked
                if answer.error_code == ErrorCode.fenced_leader_epoch:
                    self._set(followed, FetchState.FENCED, "leader epoch fenced")
                elif answer.error_code != ErrorCode.none:
                    self._back_off(followed, answer.error_code.name, settings)
                else:
                    found[followed] = int(answer.offset)
        return found

    # -- state changes, logged once ------------------------------------------------------------

    def _back_off(self, followed: Followed, reason: str, settings: FetcherSettings) -> None:
        followed.retry_at = asyncio.get_running_loop().time() + settings.backoff_s
        self._set(followed, FetchState.BACKING_OFF, reason, level=logging.WARNING)

    def _set(
        self, followed: Followed, state: FetchState, reason: str, *, level: int = logging.INFO
    ) -> None:
        if followed.state is state and followed.reason == reason:
            return
        if state is FetchState.FETCHING:
            log.info("%s: fetching from %s again", followed.name, self._where)
        elif state is FetchState.BACKING_OFF:
            log.log(level, "%s: %s answered %s; retrying", followed.name, self._where, reason)
        else:
            log.log(
                level,
                "%s: %s; not fetched from %s until re-pointed",
                followed.name,
                reason,
                self._where,
            )
        followed.state, followed.reason = state, reason


def _position(followed: Followed, settings: FetcherSettings) -> FetchPosition:
    """What a replica Fetch asks of ``followed``: where its log ends, and so on."""
    plog = followed.log
    latest = plog.leader_epochs.latest_epoch
    return (
        followed.leader_epoch,
        plog.log_end_offset,
        -1 if latest is None else latest,
        plog.log_start_offset,
        settings.partition_max_bytes,
    )
