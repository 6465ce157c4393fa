"""DescribeClientQuotas and AlterClientQuotas over the wire (:mod:`sluice.wire`), for the tests:
entities as ``{"user": "alice", "client-id": None}`` (None: the default)."""

from __future__ import annotations

import importlib
from typing import Any

from sluice import wire

DESCRIBE = wire.Api(48, "DescribeClientQuotas", 0, 1)
ALTER = wire.Api(49, "AlterClientQuotas", 0, 1)
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def _request_module(conn: wire.Connection, api: wire.Api, name: str) -> Any:
    return importlib.import_module(f"kio.schema.{name}.v{conn.version_of(api)}.request")


def alter(
    bootstrap: str,
    entries: list[tuple[dict[str, str | None], dict[str, float | None]]],
    *,
    validate_only: bool = False,
) -> list[tuple[str, str | None]]:
    """Alter each entity's quotas (a None value removes the key); each entry's (error name,
    message)."""
    with wire.connect(bootstrap, timeout=10) as conn:
        m = _request_module(conn, ALTER, "alter_client_quotas")
        request_entries = tuple(
            m.EntryData(
                entity=tuple(m.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()),
                ops=tuple(
                    m.OpData(key=k, value=0.0 if v is None else v, remove=v is None)
                    for k, v in ops.items()
                ),
            )
            for entity, ops in entries
        )
        answer = conn.call(ALTER, entries=request_entries, validate_only=validate_only)
    return [(e.error_code.name, e.error_message) for e in answer.entries]


def describe(
    bootstrap: str, components: list[tuple[str, int, str | None]] = (), strict: bool = False
) -> tuple[str, str | None, dict[tuple[tuple[str, str | None], ...], dict[str, float]]]:
    """(error name, message, entity → quotas) of a DescribeClientQuotas."""
    with wire.connect(bootstrap, timeout=10) as conn:
        m = _request_module(conn, DESCRIBE, "describe_client_quotas")
        answer = conn.call(
            DESCRIBE,
            components=tuple(
                m.ComponentData(entity_type=t, match_type=mt, match=name)
                for t, mt, name in components
            ),
            strict=strict,
        )
    found = {
        tuple((c.entity_type, c.entity_name) for c in entry.entity): {
            v.key: float(v.value) for v in entry.values
        }
        for entry in answer.entries or ()
    }
    return answer.error_code.name, answer.error_message, found
