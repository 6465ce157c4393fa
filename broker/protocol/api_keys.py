"""Kafka's API keys, by name (Kafka's ``ApiKeys`` enum, for the APIs the broker serves).

Each is a ``Final`` literal, so that :func:`sluice.broker.protocol.response_schema.response_schema`
knows which response class a key and version give. The versions served, the handler and the
metric name of each API are in the one table of :mod:`sluice.broker.handlers` (``APIS``).

>>> PRODUCE, API_VERSIONS
(0, 18)
"""

from __future__ import annotations

from typing import Final

PRODUCE: Final = 0
FETCH: Final = 1
LIST_OFFSETS: Final = 2
METADATA: Final = 3
OFFSET_COMMIT: Final = 8
OFFSET_FETCH: Final = 9
FIND_COORDINATOR: Final = 10
JOIN_GROUP: Final = 11
HEARTBEAT: Final = 12
LEAVE_GROUP: Final = 13
SYNC_GROUP: Final = 14
DESCRIBE_GROUPS: Final = 15
LIST_GROUPS: Final = 16
SASL_HANDSHAKE: Final = 17
API_VERSIONS: Final = 18
CREATE_TOPICS: Final = 19
DELETE_TOPICS: Final = 20
DELETE_RECORDS: Final = 21
INIT_PRODUCER_ID: Final = 22
OFFSET_FOR_LEADER_EPOCH: Final = 23
ADD_PARTITIONS_TO_TXN: Final = 24
ADD_OFFSETS_TO_TXN: Final = 25
END_TXN: Final = 26
WRITE_TXN_MARKERS: Final = 27
TXN_OFFSET_COMMIT: Final = 28
DESCRIBE_ACLS: Final = 29
CREATE_ACLS: Final = 30
DELETE_ACLS: Final = 31
DESCRIBE_CONFIGS: Final = 32
ALTER_CONFIGS: Final = 33
ALTER_REPLICA_LOG_DIRS: Final = 34
DESCRIBE_LOG_DIRS: Final = 35
SASL_AUTHENTICATE: Final = 36
CREATE_PARTITIONS: Final = 37
DELETE_GROUPS: Final = 42
ELECT_LEADERS: Final = 43
INCREMENTAL_ALTER_CONFIGS: Final = 44
ALTER_PARTITION_REASSIGNMENTS: Final = 45
LIST_PARTITION_REASSIGNMENTS: Final = 46
OFFSET_DELETE: Final = 47
DESCRIBE_CLIENT_QUOTAS: Final = 48
ALTER_CLIENT_QUOTAS: Final = 49
DESCRIBE_USER_SCRAM_CREDENTIALS: Final = 50
ALTER_USER_SCRAM_CREDENTIALS: Final = 51
DESCRIBE_CLUSTER: Final = 60
DESCRIBE_TRANSACTIONS: Final = 65
LIST_TRANSACTIONS: Final = 66
