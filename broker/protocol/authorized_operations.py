"""Authorized operations as Kafka answers them without an authorizer (KIP-430).

Metadata (``include_topic_authorized_operations``, ``include_cluster_authorized_operations``)
and DescribeGroups (``include_authorized_operations``) answer a 32-bit field in which bit ``n``
is set when operation ``n`` (Kafka's ``AclOperation`` codes) is allowed. Without an authorizer
Kafka allows everything, so it lists every operation the resource type supports
(``AclEntry.supportedOperations``); a request that does not ask gets INT32_MIN.

>>> sorted(operations(TOPIC_OPERATIONS))
[3, 4, 5, 6, 7, 8, 10, 11]
>>> authorized(TOPIC_OPERATIONS, requested=False)
-2147483648
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CLUSTER_OPERATIONS",
    "GROUP_OPERATIONS",
    "NOT_REQUESTED",
    "TOPIC_OPERATIONS",
    "authorized",
    "operations",
]

# Kafka's AclOperation codes
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

NOT_REQUESTED: Final = -(2**31)
"""INT32_MIN: the field's value when the request did not ask for it."""


def _bits(*codes: int) -> int:
    return sum(1 << code for code in codes)


TOPIC_OPERATIONS: Final = _bits(
    READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
)
CLUSTER_OPERATIONS: Final = _bits(
    CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE
)
GROUP_OPERATIONS: Final = _bits(READ, DESCRIBE, DELETE)


def authorized(supported: int, *, requested: bool) -> int:
    """The field's value: every supported operation if ``requested``, else INT32_MIN."""
    return supported if requested else NOT_REQUESTED


def operations(field: int) -> set[int]:
    """The operation codes whose bits are set in ``field``."""
    return {code for code in range(32) if field >> code & 1}
