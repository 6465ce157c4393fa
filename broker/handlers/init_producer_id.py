"""InitProducerId: producer ids for idempotent producers.

A new producer gets a fresh id with epoch 0. A producer that sends its current id and epoch
(KIP-360, after an UNKNOWN_PRODUCER_ID or a sequence it cannot recover) gets the same id with
the epoch bumped, or a fresh id when the epoch would overflow.

With a ``transactional.id`` the transaction coordinator answers: the id keeps its producer id,
the epoch is bumped (fencing older instances), and an open transaction of an older instance is
aborted first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.producer_ids import ProducerIdsUnavailableError
from sluice.broker.protocol.api_keys import INIT_PRODUCER_ID
from sluice.broker.protocol.codec import make, millis
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import address, allowed, allowed_operation
from sluice.broker.security.acls import ResourceType
from sluice.broker.security.required_acls import operation

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        InitProducerIdRequest,
        InitProducerIdResponse,
    )

MAX_EPOCH = 2**15 - 1
TOPIC, CLUSTER = ResourceType.TOPIC, ResourceType.CLUSTER
TXN_ID = ResourceType.TRANSACTIONAL_ID


async def handle(
    broker: Broker, request: InitProducerIdRequest, client: Connection
) -> InitProducerIdResponse:
    schema = response_schema(INIT_PRODUCER_ID, request.__version__)
    producer_id = getattr(request, "producer_id", -1)
    epoch = getattr(request, "producer_epoch", -1)
    refused = _refused(broker, client, request.transactional_id)
    if refused is not None:
        return make(schema, throttle_time=0, error_code=refused, producer_id=-1, producer_epoch=-1)
    if request.transactional_id is not None:
        code, new_id, new_epoch = await broker.transactions.init_producer_id(
            request.transactional_id, millis(request.transaction_timeout), producer_id, epoch
        )
        return make(
            schema, throttle_time=0, error_code=code, producer_id=new_id, producer_epoch=new_epoch
        )
    assert broker.producer_ids is not None
    if producer_id >= 0 and 0 <= epoch < MAX_EPOCH - 1:
        new_id, new_epoch = producer_id, epoch + 1
    else:
        try:
            new_id, new_epoch = await broker.producer_ids.next_async(), 0
        except ProducerIdsUnavailableError:  # the cluster's store cannot give a block now
            return make(
                schema,
                throttle_time=0,
                error_code=ErrorCode.coordinator_load_in_progress,
                producer_id=-1,
                producer_epoch=-1,
            )
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.none,
        producer_id=new_id,
        producer_epoch=new_epoch,
    )


def _refused(broker: Broker, client: Connection, txn_id: str | None) -> ErrorCode | None:
    """Kafka's checks: WRITE on the transactional id; for an idempotent producer
    IDEMPOTENT_WRITE on the cluster or WRITE on any topic (KIP-679)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return None
    if txn_id is not None:
        if allowed(authorizer, client, INIT_PRODUCER_ID, TXN_ID, txn_id, "transactional"):
            return None
        return ErrorCode.transactional_id_authorization_failed
    op = operation(INIT_PRODUCER_ID, CLUSTER, "idempotent: or")
    if allowed_operation(authorizer, client, INIT_PRODUCER_ID, op, CLUSTER, audit=False):
        return None
    any_topic = operation(INIT_PRODUCER_ID, TOPIC, "idempotent: or, on any topic")
    if authorizer.authorize_any(client.principal or "", address(client), any_topic, TOPIC):
        return None
    allowed_operation(authorizer, client, INIT_PRODUCER_ID, op, CLUSTER)  # audited
    return ErrorCode.cluster_authorization_failed
