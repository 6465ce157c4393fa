"""The APIs and versions the broker serves (DESIGN.md §1), by API key.

Above DESIGN.md's starting profile: the versions that carry topic ids (Fetch 13+, Metadata 10+,
CreateTopics 7, DeleteTopics 6) and what lies between (Fetch 14–16 and Metadata 13 add nothing a
single node needs), so that librdkafka 2.x uses them: it picks Fetch 16 and Metadata 13.

>>> SUPPORTED[18]
(0, 3)
"""

from __future__ import annotations

from typing import Final

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
DELETE_RECORDS, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, INIT_PRODUCER_ID = 21, 18, 19, 20, 22
DESCRIBE_CONFIGS, ALTER_CONFIGS, CREATE_PARTITIONS, INCREMENTAL_ALTER_CONFIGS = 32, 33, 37, 44
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT = 8, 9, 10, 11, 12
LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS = 13, 14, 15, 16
DELETE_GROUPS, OFFSET_DELETE = 42, 47
ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66
DESCRIBE_LOG_DIRS = 35

SUPPORTED: Final[dict[int, tuple[int, int]]] = {
    PRODUCE: (3, 9),
    FETCH: (4, 16),
    LIST_OFFSETS: (1, 7),
    METADATA: (1, 13),
    API_VERSIONS: (0, 3),
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 6),
    DELETE_RECORDS: (0, 2),
    INIT_PRODUCER_ID: (0, 4),
    DESCRIBE_CONFIGS: (1, 4),
    ALTER_CONFIGS: (0, 2),
    CREATE_PARTITIONS: (0, 3),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
    OFFSET_COMMIT: (2, 8),
    OFFSET_FETCH: (1, 7),
    FIND_COORDINATOR: (0, 3),
    JOIN_GROUP: (0, 7),
    HEARTBEAT: (0, 4),
    LEAVE_GROUP: (0, 4),
    SYNC_GROUP: (0, 5),
    DESCRIBE_GROUPS: (0, 5),
    LIST_GROUPS: (0, 4),
    DELETE_GROUPS: (0, 2),
    OFFSET_DELETE: (0, 0),
    ADD_PARTITIONS_TO_TXN: (0, 3),
    ADD_OFFSETS_TO_TXN: (0, 3),
    END_TXN: (0, 3),
    TXN_OFFSET_COMMIT: (0, 3),
    DESCRIBE_TRANSACTIONS: (0, 0),
    LIST_TRANSACTIONS: (0, 0),
    DESCRIBE_LOG_DIRS: (1, 4),
}


def is_supported(api_key: int, version: int) -> bool:
    """Whether ``version`` of ``api_key`` is served.

    >>> is_supported(0, 9), is_supported(0, 2), is_supported(99, 0)
    (True, False, False)
    """
    span = SUPPORTED.get(api_key)
    return span is not None and span[0] <= version <= span[1]
