"""The high-availability task assignor (pure): every task placed once, standbys apart from
their active, warm-ups bounded and only where a task could not go at once, state respected."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.streams.runtime.assignor import RUNNING, ClientState, assign
from sluice.streams.task import TaskId

T = [TaskId(0, p) for p in range(6)]


def test_scale_out_keeps_tasks_where_their_state_is_and_warms_up_the_new_instances() -> None:
    old = ClientState("a", previous_active=set(T))
    plan = assign(
        [old, ClientState("b"), ClientState("c")],
        stateful=dict.fromkeys(T, 50_000),
        stateless=[],
        standby_replicas=0,
        max_warmup_replicas=2,
        acceptable_recovery_lag=100,
    )
    assert plan.clients["a"].active == set(T)  # nobody else has the state yet
    warm = plan.clients["b"].warmup | plan.clients["c"].warmup
    assert len(warm) == 2 and plan.probing_rebalance
    # the probe: the warm-ups caught up (their offsets within the acceptable lag)
    caught = {t: 49_950 for t in warm}
    again = assign(
        [
            old,
            ClientState("b", offset_sums={t: caught[t] for t in plan.clients["b"].warmup}),
            ClientState("c", offset_sums={t: caught[t] for t in plan.clients["c"].warmup}),
        ],
        stateful=dict.fromkeys(T, 50_000),
        stateless=[],
        standby_replicas=0,
        max_warmup_replicas=2,
        acceptable_recovery_lag=100,
    )
    moved = (again.clients["b"].active | again.clients["c"].active) & warm
    assert moved == warm  # the warmed-up tasks moved, and only those of the others
    assert again.clients["b"].active | again.clients["c"].active <= warm
    assert again.probing_rebalance  # more to warm up


def test_small_lags_move_at_once_and_stateless_tasks_balance() -> None:
    plan = assign(
        [ClientState("a", previous_active=set(T)), ClientState("b")],
        stateful=dict.fromkeys(T, 10),  # tiny changelogs: everyone is caught up
        stateless=[TaskId(1, 0), TaskId(1, 1)],
        standby_replicas=0,
        max_warmup_replicas=2,
        acceptable_recovery_lag=100,
    )
    assert len(plan.clients["a"].active) == len(plan.clients["b"].active) == 4
    assert not plan.probing_rebalance


def test_standbys_prefer_another_rack() -> None:
    clients = [
        ClientState("a", rack="r1", offset_sums={T[0]: RUNNING}),
        ClientState("b", rack="r1"),
        ClientState("c", rack="r2"),
    ]
    plan = assign(
        clients,
        stateful={T[0]: 0},
        stateless=[],
        standby_replicas=1,
        max_warmup_replicas=1,
        acceptable_recovery_lag=0,
    )
    active = next(m for m, c in plan.clients.items() if T[0] in c.active)
    standby = next(m for m, c in plan.clients.items() if T[0] in c.standby)
    racks = {c.member_id: c.rack for c in clients}
    assert racks[active] != racks[standby]


@settings(max_examples=200, deadline=None)
@given(
    members=st.integers(1, 5),
    stateful=st.integers(0, 12),
    stateless=st.integers(0, 6),
    replicas=st.integers(0, 3),
    warmups=st.integers(1, 4),
    lag=st.integers(0, 1000),
    data=st.data(),
)
def test_any_group_gets_every_task_once_and_the_rules_hold(
    members: int,
    stateful: int,
    stateless: int,
    replicas: int,
    warmups: int,
    lag: int,
    data: st.DataObject,
) -> None:
    tasks = [TaskId(0, p) for p in range(stateful)]
    free = [TaskId(1, p) for p in range(stateless)]
    ends = {t: data.draw(st.integers(0, 5000)) for t in tasks}
    clients = []
    for n in range(members):
        offsets = st.dictionaries(st.sampled_from(tasks), st.integers(-2, 5000))
        held = data.draw(offsets if tasks else st.just({}))
        rack = data.draw(st.sampled_from([None, "r1", "r2"]))
        clients.append(ClientState(f"m{n}", offset_sums=held, rack=rack))
    plan = assign(
        clients,
        stateful=ends,
        stateless=free,
        standby_replicas=replicas,
        max_warmup_replicas=warmups,
        acceptable_recovery_lag=lag,
    )
    placed = [t for c in plan.clients.values() for t in c.active]
    assert sorted(placed) == sorted(tasks + free)  # every task active exactly once
    total_warm = sum(len(c.warmup) for c in plan.clients.values())
    assert total_warm <= warmups and plan.probing_rebalance == (total_warm > 0)
    for client in plan.clients.values():
        assert not client.active & client.standby and not client.active & client.warmup
        assert not client.standby & client.warmup
        assert not (client.standby | client.warmup) & set(free)  # stateless tasks: no replicas
    for task in tasks:
        copies = sum(1 for c in plan.clients.values() if task in c.standby | c.warmup)
        assert copies <= max(replicas, 1)
        assert copies >= min(replicas, members - 1)
        owner = next(c for c in clients if task in plan.clients[c.member_id].active)
        best = min(c.lag(task, ends[task]) for c in clients)
        # a task goes where it is caught up, or to the least-lagging instance
        assert owner.lag(task, ends[task]) <= max(lag, best)
