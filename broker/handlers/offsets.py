"""OffsetCommit, OffsetFetch and OffsetDelete: a group's committed positions.

A commit is acknowledged only after it was appended to ``__consumer_offsets`` (in a cluster:
and replicated to the partition's in-sync replicas; a broker that does not coordinate the
group answers NOT_COORDINATOR). A fetch of a
partition without a committed offset answers offset -1 (the client then applies its
``auto.offset.reset``). With ``require_stable`` (read_committed consumers), a partition with
offsets pending in an open transaction answers UNSTABLE_OFFSET_COMMIT, and the client retries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.protocol.api_keys import OFFSET_COMMIT, OFFSET_DELETE, OFFSET_FETCH
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import allowed, allowed_operation, denied
from sluice.broker.security.acls import AclOperation, ResourceType

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        OffsetCommitRequest,
        OffsetCommitResponse,
        OffsetDeleteRequest,
        OffsetDeleteResponse,
        OffsetFetchRequest,
        OffsetFetchResponse,
    )

T = TypeVar("T")
TOPIC, GROUP, DESCRIBE = ResourceType.TOPIC, ResourceType.GROUP, AclOperation.DESCRIBE


def commit_entries(request: Any) -> list[tuple[str, int, int, int, str | None]]:
    """``(topic, partition, offset, leader_epoch, metadata)`` of an (Txn)OffsetCommit request."""
    return [
        (
            t.name,
            p.partition_index,
            p.committed_offset,
            getattr(p, "committed_leader_epoch", -1),
            p.committed_metadata,
        )
        for t in request.topics
        for p in t.partitions
    ]


def commit_response(schema: type[T], request: Any, codes: list[ErrorCode]) -> T:
    """The (Txn)OffsetCommit response: one error code per partition, in request order."""
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    results = iter(codes)
    topics = tuple(
        make(
            topic_cls,
            name=t.name,
            partitions=tuple(
                make(partition_cls, partition_index=p.partition_index, error_code=next(results))
                for p in t.partitions
            ),
        )
        for t in request.topics
    )
    return make(schema, throttle_time=0, topics=topics)


async def when_replicated(broker: Broker, group_id: str, codes: list[ErrorCode]) -> list[ErrorCode]:
    """The codes of an (Txn)OffsetCommit once its write is on the in-sync replicas of the
    group's partition: those that were NONE become the replication's error, if any."""
    if ErrorCode.none not in codes:
        return codes
    failed = await broker.groups.replicated(group_id)
    if failed is ErrorCode.none:
        return codes
    return [failed if c is ErrorCode.none else c for c in codes]


async def offset_commit(
    broker: Broker, request: OffsetCommitRequest, client: Connection
) -> OffsetCommitResponse:
    schema = response_schema(OFFSET_COMMIT, request.__version__)
    entries = commit_entries(request)
    topics_refused: set[str] = set()
    if (authorizer := broker.authorizer) is not None:
        if not allowed(authorizer, client, OFFSET_COMMIT, GROUP, request.group_id):
            return commit_response(
                schema, request, [ErrorCode.group_authorization_failed] * len(entries)
            )
        topics_refused = denied(authorizer, client, OFFSET_COMMIT, TOPIC, (e[0] for e in entries))
    refused = broker.groups.coordinator_error(request.group_id)
    if refused is not ErrorCode.none:
        return commit_response(schema, request, [refused] * len(entries))
    kept = [e for e in entries if e[0] not in topics_refused]
    codes = broker.groups.offsets(request.group_id).commit(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=getattr(request, "group_instance_id", None),
        generation=request.generation_id_or_member_epoch,
        offsets=kept,
    )
    codes = await when_replicated(broker, request.group_id, codes)
    if topics_refused:
        answered = iter(codes)
        codes = [
            ErrorCode.topic_authorization_failed if e[0] in topics_refused else next(answered)
            for e in entries
        ]
    return commit_response(schema, request, codes)


async def offset_fetch(
    broker: Broker, request: OffsetFetchRequest, client: Connection
) -> OffsetFetchResponse:
    schema = response_schema(OFFSET_FETCH, request.__version__)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    wanted: list[tuple[str, list[int]]] | None = (
        None
        if request.topics is None
        else [(t.name, list(t.partition_indexes)) for t in request.topics]
    )
    stable = getattr(request, "require_stable", False)
    refused = broker.groups.coordinator_error(request.group_id)
    authorizer = broker.authorizer
    if authorizer is not None and not allowed(
        authorizer, client, OFFSET_FETCH, GROUP, request.group_id
    ):
        refused = ErrorCode.group_authorization_failed
    if refused is not ErrorCode.none:
        return make(
            schema,
            throttle_time=0,
            error_code=refused,  # v1 has no top-level code: each partition asked gets it
            topics=tuple(
                make(
                    topic_cls,
                    name=name,
                    partitions=tuple(
                        make(
                            partition_cls,
                            partition_index=index,
                            committed_offset=-1,
                            committed_leader_epoch=-1,
                            metadata="",
                            error_code=refused,
                        )
                        for index in indexes
                    ),
                )
                for name, indexes in wanted or ()
            ),
        )
    by_topic: dict[str, list[Any]] = {}
    offsets = broker.groups.offsets(request.group_id)
    found = offsets.fetch(request.group_id, wanted)
    topics_refused: set[str] = set()
    if authorizer is not None:  # asked: answered TOPIC_AUTHORIZATION_FAILED; else left out
        asked = wanted is not None
        topics_refused = {
            t
            for t in {t for t, _, _ in found}
            if not allowed_operation(
                authorizer, client, OFFSET_FETCH, DESCRIBE, TOPIC, t, audit=asked
            )
        }
    for topic, partition, committed in found:
        if topic in topics_refused:
            if wanted is not None:
                by_topic.setdefault(topic, []).append(
                    make(
                        partition_cls,
                        partition_index=partition,
                        committed_offset=-1,
                        committed_leader_epoch=-1,
                        metadata="",
                        error_code=ErrorCode.topic_authorization_failed,
                    )
                )
            continue
        unstable = stable and offsets.has_pending(request.group_id, topic, partition)
        by_topic.setdefault(topic, []).append(
            make(
                partition_cls,
                partition_index=partition,
                committed_offset=committed.offset if committed else -1,
                committed_leader_epoch=committed.leader_epoch if committed else -1,
                metadata=committed.metadata if committed else "",
                error_code=ErrorCode.unstable_offset_commit if unstable else ErrorCode.none,
            )
        )
    topics = tuple(
        make(topic_cls, name=name, partitions=tuple(parts)) for name, parts in by_topic.items()
    )
    return make(schema, throttle_time=0, topics=topics, error_code=ErrorCode.none)


async def offset_delete(
    broker: Broker, request: OffsetDeleteRequest, client: Connection
) -> OffsetDeleteResponse:
    schema = response_schema(OFFSET_DELETE, request.__version__)
    topic_cls = nested(schema, "topics")
    partition_cls = nested(schema, "topics", "partitions")
    wanted: list[tuple[str, int]] = [
        (t.name, p.partition_index) for t in request.topics for p in t.partitions
    ]
    code = broker.groups.coordinator_error(request.group_id)
    topics_refused: set[str] = set()
    if (authorizer := broker.authorizer) is not None:
        if not allowed(authorizer, client, OFFSET_DELETE, GROUP, request.group_id):
            code = ErrorCode.group_authorization_failed
        else:
            topics_refused = denied(
                authorizer, client, OFFSET_DELETE, TOPIC, (t for t, _ in wanted)
            )
    codes: list[ErrorCode] = []
    if code is ErrorCode.none:
        code, codes = broker.groups.offsets(request.group_id).delete_offsets(
            request.group_id, [w for w in wanted if w[0] not in topics_refused]
        )
    if code is ErrorCode.none:
        code = await broker.groups.replicated(request.group_id)
    if topics_refused and code is ErrorCode.none:
        answered = iter(codes)
        codes = [
            ErrorCode.topic_authorization_failed if t in topics_refused else next(answered)
            for t, _ in wanted
        ]
    results = iter(codes)
    topics = (
        ()
        if code is not ErrorCode.none
        else tuple(
            make(
                topic_cls,
                name=t.name,
                partitions=tuple(
                    make(partition_cls, partition_index=p.partition_index, error_code=next(results))
                    for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )
    return make(schema, error_code=code, throttle_time=0, topics=topics)
