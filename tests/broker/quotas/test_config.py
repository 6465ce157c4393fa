"""Kafka's precedence of client quotas (the eight levels of ``DefaultQuotaCallback``): a table
of every level, and Hypothesis checking that the most specific entity that sets a key wins and
that the group sharing the rate is the one the found entity names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.broker.quotas.config import (
    CONSUMER_BYTE_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    Entity,
    Quota,
    precedence,
    resolve,
    validate_value,
)

U, C = "alice", "app"
# Kafka's order, most specific first: /config/users/<u>/clients/<c> … /config/clients/<default>
LEVELS = [
    (Entity(U, C), (U, C)),
    (Entity(U, DEFAULT), (U, C)),
    (Entity(U, None), (U, "")),
    (Entity(DEFAULT, C), (U, C)),
    (Entity(DEFAULT, DEFAULT), (U, C)),
    (Entity(DEFAULT, None), (U, "")),
    (Entity(None, C), ("", C)),
    (Entity(None, DEFAULT), ("", C)),
]


def test_precedence_is_kafkas_eight_levels() -> None:
    assert list(precedence(U, C)) == [entity for entity, _ in LEVELS]


@pytest.mark.parametrize("level", range(len(LEVELS)))
def test_each_level_wins_over_every_less_specific_one(level: int) -> None:
    configs = {entity: {PRODUCER_BYTE_RATE: float(i + 1)} for i, (entity, _) in enumerate(LEVELS)}
    for more_specific, _ in LEVELS[:level]:
        del configs[more_specific]
    group = LEVELS[level][1]
    assert resolve(configs, U, C)[PRODUCER_BYTE_RATE] == Quota(float(level + 1), *group)


def test_other_users_and_clients_fall_to_the_defaults() -> None:
    configs = {
        Entity(U, C): {PRODUCER_BYTE_RATE: 1.0},
        Entity(None, DEFAULT): {PRODUCER_BYTE_RATE: 8.0},
    }
    assert resolve(configs, "bob", C)[PRODUCER_BYTE_RATE] == Quota(8.0, "", C)
    assert resolve(configs, U, "other")[PRODUCER_BYTE_RATE] == Quota(8.0, "", "other")
    assert resolve({}, U, C) == {}


def test_each_key_is_resolved_on_its_own() -> None:
    configs = {
        Entity(U, None): {PRODUCER_BYTE_RATE: 1.0},
        Entity(None, C): {CONSUMER_BYTE_RATE: 2.0, PRODUCER_BYTE_RATE: 9.0},
    }
    found = resolve(configs, U, C)
    assert found[PRODUCER_BYTE_RATE] == Quota(1.0, U, "")
    assert found[CONSUMER_BYTE_RATE] == Quota(2.0, "", C)
    assert REQUEST_PERCENTAGE not in found


names = st.sampled_from(["alice", "bob", "app", "etl", ""])
parts = st.one_of(st.none(), st.just(DEFAULT), names)
entities = st.tuples(parts, parts).filter(lambda p: p != (None, None)).map(lambda p: Entity(*p))


@given(
    st.dictionaries(entities, st.integers(1, 10**6), max_size=12),
    names,
    names,
)
def test_the_most_specific_entity_setting_the_key_wins(
    configured: dict[Entity, int], user: str, client_id: str
) -> None:
    configs = {e: {PRODUCER_BYTE_RATE: float(v)} for e, v in configured.items()}
    found = resolve(configs, user, client_id).get(PRODUCER_BYTE_RATE)
    applicable = [e for e in precedence(user, client_id) if e in configs]
    if not applicable:
        assert found is None, f"expected no quota for {(user, client_id)}, got {found}"
        return
    winner = applicable[0]
    assert found is not None
    assert found.bound == configs[winner][PRODUCER_BYTE_RATE]
    assert found.user == (user if winner.user is not None else "")
    assert found.client_id == (client_id if winner.client_id is not None else "")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("producer_byte_rate", 1024.0, None),
        ("request_percentage", 12.5, None),
        ("producer_byte_rate", 0.0, "Quota producer_byte_rate must be greater than 0"),
        ("consumer_byte_rate", -5.0, "Quota consumer_byte_rate must be greater than 0"),
        ("consumer_byte_rate", 10.5, "Quota consumer_byte_rate must be an integer"),
        ("controller_mutation_rate", 1.0, "Unknown quota key controller_mutation_rate"),
    ],
)
def test_validation(key: str, value: float, message: str | None) -> None:
    assert validate_value(key, value) == message
