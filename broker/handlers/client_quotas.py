"""DescribeClientQuotas and AlterClientQuotas (KIP-546): the client quotas of users, client
ids and both, kept in :attr:`Broker.quota_store` (ZooKeeper in a cluster, the data directory on
one node; :mod:`sluice.broker.quotas.store`) and put in force at once on this broker (on the
others within a second, by the change notification).

Entities are lists of components ``(entity_type, entity_name)`` with ``entity_type`` ``user``
or ``client-id`` and a null name for the default. Kafka's answers: INVALID_REQUEST with a
message for an unknown entity type, a type named twice, an empty entity, an unknown quota key,
a key altered twice, a value not above 0, a byte rate that is not an integer, and, in a
describe filter, an unknown match type or an exact match without a name. ``validate_only``
checks without changing anything. With ACLs on, describing needs DESCRIBE_CONFIGS and altering
ALTER_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).

>>> _entity([("user", "alice"), ("client-id", None)])
Entity(user='alice', client_id=DEFAULT)
>>> _entity([("ip", "10.0.0.1")])
'Unsupported quota entity type ip (user and client-id are)'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.protocol.api_keys import ALTER_CLIENT_QUOTAS, DESCRIBE_CLIENT_QUOTAS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.quotas.config import DEFAULT, Default, Entity, Name, validate_value
from sluice.broker.security.access import allowed_operation
from sluice.broker.security.acls import AclOperation, ResourceType

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        AlterClientQuotasRequest,
        AlterClientQuotasResponse,
        DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
    )

USER: Final = "user"
CLIENT_ID: Final = "client-id"
ENTITY_TYPES: Final = (USER, CLIENT_ID)
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
"""Kafka's ``ClientQuotaFilterComponent`` match types."""
_DENIED: Final = "Cluster authorization failed."


def _entity(components: Iterable[tuple[str, str | None]]) -> Entity | str:
    """The entity the components name, or why they name none."""
    parts: dict[str, Name] = {}
    for entity_type, name in components:
        if entity_type not in ENTITY_TYPES:
            return f"Unsupported quota entity type {entity_type} (user and client-id are)"
        if entity_type in parts:
            return f"Duplicate {entity_type} component entity type"
        parts[entity_type] = DEFAULT if name is None else name
    if not parts:
        return "An entity must name a user, a client id or both"
    return Entity(parts.get(USER), parts.get(CLIENT_ID))


def _components(entity: Entity) -> list[tuple[str, str | None]]:
    return [
        (entity_type, None if isinstance(name, Default) else name)
        for entity_type, name in ((USER, entity.user), (CLIENT_ID, entity.client_id))
        if name is not None
    ]


def _permitted(broker: Broker, client: Connection, api_key: int, op: AclOperation) -> bool:
    authorizer = broker.authorizer
    return authorizer is None or allowed_operation(
        authorizer, client, api_key, op, ResourceType.CLUSTER
    )


async def describe(
    broker: Broker, request: DescribeClientQuotasRequest, client: Connection
) -> DescribeClientQuotasResponse:
    schema = response_schema(DESCRIBE_CLIENT_QUOTAS, request.__version__)
    entry_cls = nested(schema, "entries")
    entity_cls = nested(schema, "entries", "entity")
    value_cls = nested(schema, "entries", "values")

    def refused(code: ErrorCode, message: str) -> DescribeClientQuotasResponse:
        return make(schema, throttle_time=0, error_code=code, error_message=message, entries=None)

    if not _permitted(broker, client, DESCRIBE_CLIENT_QUOTAS, AclOperation.DESCRIBE_CONFIGS):
        return refused(ErrorCode.cluster_authorization_failed, _DENIED)
    problem = _check_filter(request.components)
    if problem is not None:
        return refused(ErrorCode.invalid_request, problem)
    stored = await run_blocking(broker.quota_store.load)
    entries = []
    for entity, quotas in stored.items():
        if not _matches(entity, request.components, request.strict):
            continue
        entries.append(
            make(
                entry_cls,
                entity=tuple(
                    make(entity_cls, entity_type=t, entity_name=n) for t, n in _components(entity)
                ),
                values=tuple(make(value_cls, key=k, value=v) for k, v in sorted(quotas.items())),
            )
        )
    entries.sort(key=lambda e: [(c.entity_type, c.entity_name or "") for c in e.entity])
    return make(
        schema, throttle_time=0, error_code=ErrorCode.none, error_message=None,
        entries=tuple(entries),
    )  # fmt: skip


def _check_filter(components: Sequence[Any]) -> str | None:
    """Why a describe filter is refused (Kafka's messages), or None."""
    seen = Counter(c.entity_type for c in components)
    for component in components:
        if component.entity_type not in ENTITY_TYPES:
            return f"Unsupported quota entity type {component.entity_type}"
        if seen[component.entity_type] > 1:
            return f"Duplicate {component.entity_type} filter component entity type"
        match_type = int(component.match_type)
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            return f"Unknown match type {match_type}"
        if match_type == MATCH_EXACT and component.match is None:
            return "Exact match must specify a name"
        if match_type != MATCH_EXACT and component.match is not None:
            return "A default or any-name match must not specify a name"
    return None


def _matches(entity: Entity, components: Sequence[Any], strict: bool) -> bool:
    parts = {USER: entity.user, CLIENT_ID: entity.client_id}
    for component in components:
        name = parts.pop(component.entity_type)
        if name is None:
            return False
        match_type = int(component.match_type)
        if match_type == MATCH_DEFAULT and not isinstance(name, Default):
            return False
        if match_type == MATCH_EXACT and name != component.match:
            return False
    return not strict or all(name is None for name in parts.values())


async def alter(
    broker: Broker, request: AlterClientQuotasRequest, client: Connection
) -> AlterClientQuotasResponse:
    schema = response_schema(ALTER_CLIENT_QUOTAS, request.__version__)
    entry_cls = nested(schema, "entries")
    entity_cls = nested(schema, "entries", "entity")
    permitted = _permitted(broker, client, ALTER_CLIENT_QUOTAS, AclOperation.ALTER_CONFIGS)
    store = broker.quota_store
    results = []
    changed = False
    for entry in request.entries:
        refusal: tuple[ErrorCode, str] | None = None
        entity = _entity((c.entity_type, c.entity_name) for c in entry.entity)
        upsert: dict[str, float] = {}
        remove: set[str] = set()
        if not permitted:
            refusal = (ErrorCode.cluster_authorization_failed, _DENIED)
        elif isinstance(entity, str):
            refusal = (ErrorCode.invalid_request, entity)
        else:
            message = _check_ops(entry.ops, upsert, remove)
            if message is not None:
                refusal = (ErrorCode.invalid_request, message)
        if refusal is None and not request.validate_only:
            assert isinstance(entity, Entity)
            await run_blocking(store.alter, entity, upsert, remove)
            changed = True
        results.append(
            make(
                entry_cls,
                error_code=refusal[0] if refusal else ErrorCode.none,
                error_message=refusal[1] if refusal else None,
                entity=tuple(
                    make(entity_cls, entity_type=c.entity_type, entity_name=c.entity_name)
                    for c in entry.entity
                ),
            )
        )
    if changed:
        broker.client_quotas.configure(await run_blocking(store.load))
    return make(schema, throttle_time=0, entries=tuple(results))


def _check_ops(ops: Sequence[Any], upsert: dict[str, float], remove: set[str]) -> str | None:
    """Fill ``upsert`` and ``remove`` from an entry's operations; why they are refused, or
    None."""
    twice = [key for key, n in Counter(op.key for op in ops).items() if n > 1]
    if twice:
        return f"Duplicate quota key {twice[0]}"
    for op in ops:
        if op.remove:
            problem = validate_value(op.key, 1.0)
            remove.add(op.key)
        else:
            problem = validate_value(op.key, float(op.value))
            upsert[op.key] = float(op.value)
        if problem is not None:
            return problem
    return None
