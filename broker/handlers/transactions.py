"""AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, DescribeTransactions and
ListTransactions; the decisions are the transaction coordinator's
(:mod:`sluice.broker.txn.coordinator`).

A TxnOffsetCommit is accepted from the current producer of an open transaction; its offsets are
stored by the group coordinator as pending and become committed with the transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.handlers.offsets import commit_entries, commit_response, when_replicated
from sluice.broker.protocol.api_keys import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    DESCRIBE_TRANSACTIONS,
    END_TXN,
    LIST_TRANSACTIONS,
    TXN_OFFSET_COMMIT,
)
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import allowed, allowed_operation, denied
from sluice.broker.security.acls import AclOperation, ResourceType

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
TXN_ID = ResourceType.TRANSACTIONAL_ID

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        AddOffsetsToTxnRequest,
        AddOffsetsToTxnResponse,
        AddPartitionsToTxnRequest,
        AddPartitionsToTxnResponse,
        DescribeTransactionsRequest,
        DescribeTransactionsResponse,
        EndTxnRequest,
        EndTxnResponse,
        ListTransactionsRequest,
        ListTransactionsResponse,
        TxnOffsetCommitRequest,
        TxnOffsetCommitResponse,
    )


async def add_partitions_to_txn(
    broker: Broker, request: AddPartitionsToTxnRequest, client: Connection
) -> AddPartitionsToTxnResponse:
    # v0-3 (the versions served) name their fields `v3_and_below_*` in kio's schemas
    schema = response_schema(ADD_PARTITIONS_TO_TXN, request.__version__)
    topics = request.v3_and_below_topics
    txn_id = request.v3_and_below_transactional_id
    wanted: list[tuple[str, int]] = [(t.name, p) for t in topics for p in t.partitions]
    refused = broker.transactions.coordinator_error(txn_id)
    codes: dict[tuple[str, int], ErrorCode]
    topics_refused: set[str] = set()
    if (authorizer := broker.authorizer) is not None:
        if not allowed(authorizer, client, ADD_PARTITIONS_TO_TXN, TXN_ID, txn_id):
            refused = ErrorCode.transactional_id_authorization_failed
        else:
            topics_refused = denied(
                authorizer, client, ADD_PARTITIONS_TO_TXN, TOPIC, (t for t, _ in wanted)
            )
    if refused is not ErrorCode.none:
        codes = dict.fromkeys(wanted, refused)
    elif topics_refused:  # Kafka's: the refused ones fail, the others are not added
        codes = {
            w: ErrorCode.topic_authorization_failed
            if w[0] in topics_refused
            else ErrorCode.operation_not_attempted
            for w in wanted
        }
    else:
        codes = broker.transactions.add_partitions(
            txn_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            wanted,
        )
        if ErrorCode.none in codes.values():
            failed = await broker.transactions.replicated(txn_id)
            if failed is not ErrorCode.none:
                codes = dict.fromkeys(wanted, failed)
    topic_cls = nested(schema, "results_by_topic_v3_and_below")
    partition_cls = nested(schema, "results_by_topic_v3_and_below", "results_by_partition")
    results = tuple(
        make(
            topic_cls,
            name=t.name,
            results_by_partition=tuple(
                make(partition_cls, partition_index=p, partition_error_code=codes[(t.name, p)])
                for p in t.partitions
            ),
        )
        for t in topics
    )
    return make(schema, throttle_time=0, results_by_topic_v3_and_below=results)


async def add_offsets_to_txn(
    broker: Broker, request: AddOffsetsToTxnRequest, client: Connection
) -> AddOffsetsToTxnResponse:
    schema = response_schema(ADD_OFFSETS_TO_TXN, request.__version__)
    txn_id = request.transactional_id
    code = broker.transactions.coordinator_error(txn_id)
    if (authorizer := broker.authorizer) is not None:
        if not allowed(authorizer, client, ADD_OFFSETS_TO_TXN, TXN_ID, txn_id):
            code = ErrorCode.transactional_id_authorization_failed
        elif not allowed(authorizer, client, ADD_OFFSETS_TO_TXN, GROUP, request.group_id):
            code = ErrorCode.group_authorization_failed
    if code is ErrorCode.none:
        code = broker.transactions.add_offsets(
            txn_id, request.producer_id, request.producer_epoch, request.group_id
        )
    if code is ErrorCode.none:
        code = await broker.transactions.replicated(txn_id)
    return make(schema, throttle_time=0, error_code=code)


async def end_txn(broker: Broker, request: EndTxnRequest, client: Connection) -> EndTxnResponse:
    schema = response_schema(END_TXN, request.__version__)
    authorizer = broker.authorizer
    if authorizer is not None and not allowed(
        authorizer, client, END_TXN, TXN_ID, request.transactional_id
    ):
        return make(
            schema, throttle_time=0, error_code=ErrorCode.transactional_id_authorization_failed
        )
    code = await broker.transactions.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch, request.committed
    )
    return make(schema, throttle_time=0, error_code=code)


async def txn_offset_commit(
    broker: Broker, request: TxnOffsetCommitRequest, client: Connection
) -> TxnOffsetCommitResponse:
    entries = commit_entries(request)
    # the group's coordinator answers (Kafka checks the producer there, from its own state)
    check = broker.groups.coordinator_error(request.group_id)
    topics_refused: set[str] = set()
    if (authorizer := broker.authorizer) is not None:
        if not allowed(authorizer, client, TXN_OFFSET_COMMIT, TXN_ID, request.transactional_id):
            check = ErrorCode.transactional_id_authorization_failed
        elif not allowed(authorizer, client, TXN_OFFSET_COMMIT, GROUP, request.group_id):
            check = ErrorCode.group_authorization_failed
        else:
            topics_refused = denied(
                authorizer, client, TXN_OFFSET_COMMIT, TOPIC, (e[0] for e in entries)
            )
    if (
        check is ErrorCode.none
        and broker.transactions.coordinator_error(request.transactional_id) is ErrorCode.none
    ):
        check = broker.transactions.check_offset_commit(
            request.transactional_id, request.producer_id, request.producer_epoch
        )
    if check is not ErrorCode.none:
        codes: list[ErrorCode] = [check] * len(entries)
    else:
        codes = broker.groups.offsets(request.group_id).txn_commit(
            group_id=request.group_id,
            producer_id=request.producer_id,
            producer_epoch=request.producer_epoch,
            member_id=getattr(request, "member_id", ""),
            instance_id=getattr(request, "group_instance_id", None),
            generation=getattr(request, "generation_id", -1),
            offsets=[e for e in entries if e[0] not in topics_refused],
        )
        codes = await when_replicated(broker, request.group_id, codes)
        if topics_refused:  # the others are committed, as Kafka's
            answered = iter(codes)
            codes = [
                ErrorCode.topic_authorization_failed if e[0] in topics_refused else next(answered)
                for e in entries
            ]
    return commit_response(response_schema(TXN_OFFSET_COMMIT, request.__version__), request, codes)


async def describe_transactions(
    broker: Broker, request: DescribeTransactionsRequest, client: Connection
) -> DescribeTransactionsResponse:
    schema = response_schema(DESCRIBE_TRANSACTIONS, request.__version__)
    state_cls = nested(schema, "transaction_states")
    topic_cls = nested(schema, "transaction_states", "topics")
    states = []
    for txn_id in request.transactional_ids:
        refused = broker.transactions.coordinator_error(txn_id)
        authorizer = broker.authorizer
        if authorizer is not None and not allowed(
            authorizer, client, DESCRIBE_TRANSACTIONS, TXN_ID, txn_id
        ):
            refused = ErrorCode.transactional_id_authorization_failed
        meta = None if refused is not ErrorCode.none else broker.transactions.describe(txn_id)
        if meta is None:
            states.append(
                make(
                    state_cls,
                    error_code=refused
                    if refused is not ErrorCode.none
                    else ErrorCode.transactional_id_not_found,
                    transactional_id=txn_id,
                    transaction_state="",
                    transaction_timeout=0,
                    transaction_start_time=-1,
                    producer_id=-1,
                    producer_epoch=-1,
                    topics=(),
                )
            )
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append(
            make(
                state_cls,
                error_code=ErrorCode.none,
                transactional_id=txn_id,
                transaction_state=meta.state.label,
                transaction_timeout=meta.timeout_ms,
                transaction_start_time=meta.start_timestamp,
                producer_id=meta.producer_id,
                producer_epoch=meta.producer_epoch,
                topics=tuple(
                    make(topic_cls, topic=t, partitions=tuple(ps)) for t, ps in by_topic.items()
                ),
            )
        )
    return make(schema, throttle_time=0, transaction_states=tuple(states))


async def list_transactions(
    broker: Broker, request: ListTransactionsRequest, client: Connection
) -> ListTransactionsResponse:
    schema = response_schema(LIST_TRANSACTIONS, request.__version__)
    state_cls = nested(schema, "transaction_states")
    known = {
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    }
    wanted = set(request.state_filters)
    found = broker.transactions.list(wanted & known, set(request.producer_id_filters))
    # as Kafka's TransactionStateManager: nothing is listed while a partition loads
    loading = broker.transactions.loading()
    if loading or (wanted and not wanted & known):
        found = []
    if (authorizer := broker.authorizer) is not None:  # those the principal may DESCRIBE
        found = [
            m
            for m in found
            if allowed_operation(
                authorizer,
                client,
                LIST_TRANSACTIONS,
                AclOperation.DESCRIBE,
                TXN_ID,
                m.transactional_id,
                audit=False,
            )
        ]
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.coordinator_load_in_progress if loading else ErrorCode.none,
        unknown_state_filters=tuple(sorted(wanted - known)),
        transaction_states=tuple(
            make(
                state_cls,
                transactional_id=m.transactional_id,
                producer_id=m.producer_id,
                transaction_state=m.state.label,
            )
            for m in found
        ),
    )
