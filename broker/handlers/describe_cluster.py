"""DescribeCluster (KIP-700): the cluster id, the controller and the live brokers.

What ``AdminClient.describe_cluster()`` asks (librdkafka, kafka-python, Kafka's Java admin).
The brokers are those Metadata lists (:meth:`Broker.live_brokers
<sluice.broker.broker.Broker.live_brokers>`: this node alone, or every broker registered in
the cluster), the controller is :attr:`Broker.controller_id
<sluice.broker.broker.Broker.controller_id>` (-1 while the cluster has none), and the cluster
authorized operations are answered as Metadata answers them
(:mod:`sluice.broker.protocol.authorized_operations`).

Versions 0 and 1, those Kafka 3.x serves. ``endpoint_type`` (v1, KIP-919) is answered as
Kafka's ``AuthHelper.computeDescribeClusterResponse`` answers it on a broker: 1 (brokers) is
served and echoed; 2 (controllers) gets MISMATCHED_ENDPOINT_TYPE (114) and any other value
UNSUPPORTED_ENDPOINT_TYPE (115), each with Kafka's message, an empty cluster id and no broker.
(v0 has no ``endpoint_type``: it always asks for brokers.)

>>> code, message = _mismatch(2)
>>> code.name, message.split(", ")[1]
('mismatched_endpoint_type', 'but we wanted an endpoint of type CONTROLLER')
>>> _mismatch(7)
(<ErrorCode.unsupported_endpoint_type: 115>, 'Unsupported endpoint type 7')
>>> _mismatch(1) is None
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.protocol.api_keys import DESCRIBE_CLUSTER
from sluice.broker.protocol.authorized_operations import CLUSTER_OPERATIONS, authorized
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import CLUSTER_DENIED, authorized_bits, refuses_cluster
from sluice.broker.security.acls import CLUSTER_NAME, ResourceType

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import DescribeClusterRequest, DescribeClusterResponse

BROKERS, CONTROLLERS = 1, 2
"""Kafka's ``EndpointType`` ids."""


def _mismatch(endpoint_type: int) -> tuple[ErrorCode, str] | None:
    """The error a broker answers to a request for ``endpoint_type``; None when it serves it."""
    if endpoint_type == BROKERS:
        return None
    if endpoint_type == CONTROLLERS:
        return (
            ErrorCode.mismatched_endpoint_type,
            "The request was sent to an endpoint of type BROKER, "
            "but we wanted an endpoint of type CONTROLLER",
        )
    return ErrorCode.unsupported_endpoint_type, f"Unsupported endpoint type {endpoint_type}"


async def handle(
    broker: Broker, request: DescribeClusterRequest, client: Connection
) -> DescribeClusterResponse:
    schema = response_schema(DESCRIBE_CLUSTER, request.__version__)
    endpoint_type = int(getattr(request, "endpoint_type", BROKERS))
    refused = _mismatch(endpoint_type)
    if refused is None and refuses_cluster(broker.authorizer, client, DESCRIBE_CLUSTER):
        refused = ErrorCode.cluster_authorization_failed, CLUSTER_DENIED
    if refused is not None:
        code, message = refused
        return make(
            schema,
            throttle_time=0,
            error_code=code,
            error_message=message,
            cluster_id="",
            brokers=(),
        )
    broker_cls = nested(schema, "brokers")
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=endpoint_type,
        cluster_id=broker.cluster_id,
        controller_id=broker.controller_id,
        brokers=tuple(
            make(broker_cls, broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
            for b in broker.live_brokers(client.advertised, client.listener_name)
        ),
        cluster_authorized_operations=authorized(
            CLUSTER_OPERATIONS, requested=request.include_cluster_authorized_operations
        )
        if broker.authorizer is None or not request.include_cluster_authorized_operations
        else authorized_bits(
            broker.authorizer, client, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS
        ),
    )
