"""``sluice brokers``: move replicas off a broker before it is removed, or onto one just added.

``decommission ID``: each partition with a replica on the broker gets, in that replica's place
(so the preferred leader order is kept), the live broker outside the partition's replicas that
holds the fewest replicas so far. Internal topics move too. A partition whose replicas already
cover every other live broker cannot move: that is an error, and nothing is started.

``rebalance``: the fewest moves that even out the replicas and the preferred leaders over the
brokers (:func:`balanced`) — what a broker added to a cluster needs, since Kafka moves nothing
onto a new broker by itself (``sluice up`` runs it when the file asks,
``broker: {rebalance_on_add: true}``).

Either is one reassignment (:mod:`sluice.cli.partitions`), printed with the plan that rolls it
back; ``--wait`` returns once it is done (at most ``--wait-timeout``).

    $ sluice brokers decommission 3 --wait
    moving 4 replica(s) off broker 3
    ...
    broker 3 holds no replica
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Annotated, Any

import typer

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    CommandConfig,
    RequestTimeout,
    wire_security,
)
from sluice.cli.partitions import (
    Plan,
    alter_reassignments,
    current_assignment,
    dump_plan,
    ongoing_reassignments,
)
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError

__all__ = ["app"]

app = typer.Typer(name="brokers", help="Operate on the cluster's brokers.", no_args_is_help=True)

WaitTimeout = Annotated[
    float, typer.Option("--wait-timeout", metavar="S", help="How long --wait waits.")
]


@app.command()
def decommission(
    broker_id: Annotated[int, typer.Argument(metavar="ID", help="The broker to empty.")],
    *,
    wait: Annotated[
        bool, typer.Option("--wait", help="Return once the broker holds no replica.")
    ] = False,
    wait_timeout: WaitTimeout = 600.0,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Move every replica off broker ID (one reassignment), e.g. before removing it.

    Example: `sluice brokers decommission 3 --wait`
    """
    security = wire_security(command_config, "sluice brokers decommission")
    from sluice import wire

    try:
        with wire.connect(
            bootstrap, timeout=timeout, client_id="sluice-cli", security=security
        ) as conn:
            current, racks = current_assignment(conn, None)
            if broker_id not in racks:
                raise CliError(f"broker {broker_id} is not in the cluster")
            plan = _plan_without(current, broker_id, [b for b in racks if b != broker_id])
            if not plan:
                typer.echo(f"broker {broker_id} holds no replica")
                return
            typer.echo(f"moving {len(plan)} replica(s) off broker {broker_id}")
            _show(current, plan)
            _start(conn, plan, timeout, wait, wait_timeout)
            if not wait:
                return
            left = [tp for tp, r in current_assignment(conn, None)[0].items() if broker_id in r]
            if left:
                names = ", ".join(f"{t}-{p}" for t, p in sorted(left))
                raise CliError(f"broker {broker_id} still holds {names}", exit_code=EXIT_FAILED)
            typer.echo(f"broker {broker_id} holds no replica")
    except wire.WireError as exc:
        raise CliError(str(exc)) from None


@app.command()
def rebalance(
    *,
    brokers: Annotated[
        str | None,
        typer.Option("--brokers", metavar="1,2,3", help="The brokers to spread over (all)."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan, start nothing.")
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Return once the moves are done.")] = False,
    wait_timeout: WaitTimeout = 600.0,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Even out replicas and preferred leaders over the brokers (e.g. onto an added one), with
    the fewest moves; one reassignment, printed with the plan that rolls it back.

    Example: `sluice brokers rebalance --wait`
    """
    security = wire_security(command_config, "sluice brokers rebalance")
    from sluice import wire

    try:
        with wire.connect(
            bootstrap, timeout=timeout, client_id="sluice-cli", security=security
        ) as conn:
            current, racks = current_assignment(conn, None)
            over = sorted(racks) if brokers is None else _broker_ids(brokers)
            unknown = [b for b in over if b not in racks]
            if unknown:
                raise CliError(f"broker(s) {', '.join(map(str, unknown))} are not in the cluster")
            if ongoing_reassignments(conn):
                raise CliError("a reassignment is in progress: rebalance once it is done")
            plan = balanced(current, over, racks)
            if not plan:
                typer.echo("balanced: nothing to move")
                return
            typer.echo(f"moving or reordering the replicas of {len(plan)} partition(s)")
            _show(current, plan)
            if dry_run:
                return
            _start(conn, plan, timeout, wait, wait_timeout)
            if wait:
                typer.echo("balanced")
    except wire.WireError as exc:
        raise CliError(str(exc)) from None


def _show(current: Plan, plan: Plan) -> None:
    """The plan that rolls ``plan`` back, then ``plan``, in Kafka's format."""
    typer.echo("rollback plan:")
    typer.echo(dump_plan({tp: current[tp] for tp in plan}))
    typer.echo("plan:")
    typer.echo(dump_plan(plan))


def _start(conn: Any, plan: Plan, timeout: float, wait: bool, wait_timeout: float) -> None:
    """Start ``plan`` (one reassignment); with ``wait``, return once it is done."""
    refused = alter_reassignments(conn, dict(plan), timeout)
    if refused:
        raise CliError("not started:\n" + "\n".join(refused), exit_code=EXIT_FAILED)
    if not wait:
        typer.echo("started: `sluice partitions reassign --verify` with the plan above")
        return
    deadline = time.monotonic() + wait_timeout
    topics = {topic for topic, _ in plan}

    def done() -> bool:
        # both: right after the request the broker asked may not list the move yet, and at its
        # end the reassignment may be gone from the list before the new replicas are in Metadata
        if ongoing_reassignments(conn) & set(plan):
            return False
        assignment = current_assignment(conn, topics)[0]
        return all(sorted(assignment.get(tp, [])) == sorted(r) for tp, r in plan.items())

    while not done():
        if time.monotonic() > deadline:
            raise CliError(f"still moving after {wait_timeout:g} s", exit_code=EXIT_FAILED)
        time.sleep(0.5)


def _broker_ids(text: str) -> list[int]:
    try:
        ids = sorted({int(n) for n in text.split(",") if n.strip()})
    except ValueError:
        message = f"--brokers takes broker ids (1,2,3), not {text!r}"
        raise CliError(message, exit_code=EXIT_USAGE) from None
    if not ids:
        raise CliError("--brokers names no broker", exit_code=EXIT_USAGE)
    return ids


def _plan_without(current: Plan, leaving: int, others: list[int]) -> Plan:
    """Each partition holding ``leaving`` with it replaced by the least-loaded broker of
    ``others`` not already a replica (ties: the lowest id).

    >>> _plan_without({("t", 0): [3, 1], ("t", 1): [1, 2]}, 3, [1, 2])
    {('t', 0): [2, 1]}
    """
    load: Counter[int] = Counter({b: 0 for b in others})
    for replicas in current.values():
        load.update(r for r in replicas if r != leaving)
    plan: Plan = {}
    for tp, replicas in sorted(current.items()):
        if leaving not in replicas:
            continue
        free = sorted((b for b in others if b not in replicas), key=lambda b: (load[b], b))
        if not free:
            raise CliError(
                f"{tp[0]}-{tp[1]} has a replica on every other broker: it cannot leave "
                f"broker {leaving}"
            )
        load[free[0]] += 1
        plan[tp] = [free[0] if r == leaving else r for r in replicas]
    return plan


def balanced(current: Plan, brokers: list[int], racks: Mapping[int, str | None]) -> Plan:
    """The partitions whose replicas change so that every broker of ``brokers`` holds as many
    replicas as the others (within one) and is the preferred leader (the first replica) of as
    many partitions (within one), with the fewest moves.

    A replica moves from the broker holding the most to the one holding the fewest, a
    follower's place taken before a leader's, never onto a rack a partition already uses when
    that would narrow its spread; then replicas of one partition trade places, which moves no
    data, to even out the preferred leaders (the controller's leader rebalance, or ``sluice
    leader-election``, then moves leadership). Replicas on brokers outside ``brokers`` stay.

    >>> balanced({("t", 0): [1, 2], ("t", 1): [2, 1], ("t", 2): [1, 2]}, [1, 2, 3], {})
    {('t', 0): [3, 1], ('t', 1): [2, 3]}
    """
    plan = {tp: list(replicas) for tp, replicas in current.items()}
    held: Counter[int] = Counter(dict.fromkeys(brokers, 0))
    held.update(r for replicas in plan.values() for r in replicas if r in held)
    while (move := _replica_move(plan, held, racks)) is not None:
        tp, source, target = move
        plan[tp][plan[tp].index(source)] = target
        held[source] -= 1
        held[target] += 1
    led: Counter[int] = Counter(dict.fromkeys(brokers, 0))
    led.update(replicas[0] for replicas in plan.values() if replicas and replicas[0] in led)
    while (swap := _leader_swap(plan, led)) is not None:
        tp, leader = swap
        replicas = plan[tp]
        at = replicas.index(leader)
        led[replicas[0]] -= 1
        led[leader] += 1
        replicas[0], replicas[at] = leader, replicas[0]
    return {tp: replicas for tp, replicas in plan.items() if replicas != current[tp]}


def _pairs(count: Counter[int]) -> list[tuple[int, int]]:
    """(from, to) pairs of brokers whose counts differ by more than one, widest first: each
    move between them lowers the sum of squares, so the loops above end."""
    pairs = [(a, b) for a in count for b in count if count[a] - count[b] > 1]
    return sorted(pairs, key=lambda p: (count[p[1]] - count[p[0]], p))


def _replica_move(
    plan: Plan, held: Counter[int], racks: Mapping[int, str | None]
) -> tuple[tuple[str, int], int, int] | None:
    for source, target in _pairs(held):
        fits = [
            tp
            for tp, replicas in sorted(plan.items())
            if source in replicas
            and target not in replicas
            and _spread(replicas, racks) <= _spread(_moved(replicas, source, target), racks)
        ]
        if fits:
            tp = min(fits, key=lambda tp: plan[tp][0] == source)  # a follower's place first
            return tp, source, target
    return None


def _moved(replicas: list[int], source: int, target: int) -> list[int]:
    return [target if r == source else r for r in replicas]


def _spread(replicas: list[int], racks: Mapping[int, str | None]) -> int:
    """How many racks the replicas cover (a broker without a rack counts as its own)."""
    return len({racks.get(r) or f"broker {r}" for r in replicas})


def _leader_swap(plan: Plan, led: Counter[int]) -> tuple[tuple[str, int], int] | None:
    for source, target in _pairs(led):
        for tp, replicas in sorted(plan.items()):
            if replicas and replicas[0] == source and target in replicas:
                return tp, target
    return None
