"""``sluice partitions reassign --generate`` places replicas as the broker's rack-aware
assignment (Kafka's ``AdminUtils.assignReplicasToBrokers``): each partition's replicas on
distinct racks, brokers with and without racks refused unless ``--disable-rack-aware``. The
Metadata answer comes from an in-memory connection; the command against a real cluster is in
``tests/cluster/test_reassignment.py``."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from sluice.cli.partitions import _generate
from sluice.exit_codes import CliError

RACKS = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}


class FakeMetadata:
    """A connection answering Metadata with ``brokers`` (id → rack) and topic ``t`` of
    ``partitions`` partitions of ``rf`` replicas on brokers 1…rf."""

    def __init__(self, brokers: dict[int, str | None], partitions: int, rf: int) -> None:
        self.answer = SimpleNamespace(
            brokers=[SimpleNamespace(node_id=b, rack=r) for b, r in brokers.items()],
            topics=[
                SimpleNamespace(
                    name="t",
                    error_code=0,
                    partitions=[
                        SimpleNamespace(partition_index=p, replica_nodes=list(range(1, rf + 1)))
                        for p in range(partitions)
                    ],
                )
            ],
        )

    def call(self, *_args: Any, **_kwargs: Any) -> Any:
        return self.answer


def proposed(out: str) -> dict[int, list[int]]:
    plan = json.loads(out.strip().splitlines()[-1])
    return {p["partition"]: p["replicas"] for p in plan["partitions"]}


def test_generated_replicas_spread_over_the_racks(capsys: pytest.CaptureFixture[str]) -> None:
    _generate(FakeMetadata(RACKS, 12, 3), ["t"], list(RACKS), disable_rack_aware=False)
    plan = proposed(capsys.readouterr().out)
    assert sorted(plan) == list(range(12))
    for partition, replicas in plan.items():
        assert sorted({RACKS[r] for r in replicas}) == ["a", "b", "c"], (
            f"partition {partition}: expected one replica per rack, got {replicas}"
        )
    leaders = Counter(replicas[0] for replicas in plan.values())
    assert set(leaders.values()) == {2}, f"leaders not spread evenly: {leaders}"


def test_rf_above_the_racks_still_uses_every_rack(capsys: pytest.CaptureFixture[str]) -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b"}
    _generate(FakeMetadata(racks, 4, 3), ["t"], list(racks), disable_rack_aware=False)
    for replicas in proposed(capsys.readouterr().out).values():
        assert len(set(replicas)) == 3 and {racks[r] for r in replicas} == {"a", "b"}, replicas


def test_brokers_with_and_without_racks_need_disable_rack_aware(
    capsys: pytest.CaptureFixture[str],
) -> None:
    mixed: dict[int, str | None] = {1: "a", 2: "b", 3: None}
    with pytest.raises(CliError, match="--disable-rack-aware"):
        _generate(FakeMetadata(mixed, 3, 2), ["t"], [1, 2, 3], disable_rack_aware=False)
    _generate(FakeMetadata(mixed, 3, 2), ["t"], [1, 2, 3], disable_rack_aware=True)
    plan = proposed(capsys.readouterr().out)
    assert all(len(set(replicas)) == 2 for replicas in plan.values()), plan
