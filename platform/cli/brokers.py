"""``sluice brokers decommission ID``: move every replica off a broker before it is removed.

Each partition with a replica on the broker gets, in that replica's place (so the preferred
leader order is kept), the live broker outside the partition's replicas that holds the fewest
replicas so far; the moves are one reassignment (:mod:`sluice.cli.partitions`), printed with
the plan that rolls it back. ``--wait`` returns once nothing is left on the broker (at most
``--wait-timeout``). Internal topics move too. A partition whose replicas already cover every
other live broker cannot move: that is an error, and nothing is started.

    $ sluice brokers decommission 3 --wait
    moving 4 replica(s) off broker 3
    ...
    broker 3 holds no replica
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Annotated

import typer

from sluice import clients
from sluice.cli._common import DEFAULT_TIMEOUT, Bootstrap, RequestTimeout
from sluice.cli.partitions import (
    Plan,
    alter_reassignments,
    current_assignment,
    dump_plan,
    ongoing_reassignments,
)
from sluice.exit_codes import EXIT_FAILED, CliError

__all__ = ["app"]

app = typer.Typer(name="brokers", help="Operate on the cluster's brokers.", no_args_is_help=True)


@app.command()
def decommission(
    broker_id: Annotated[int, typer.Argument(metavar="ID", help="The broker to empty.")],
    *,
    wait: Annotated[
        bool, typer.Option("--wait", help="Return once the broker holds no replica.")
    ] = False,
    wait_timeout: Annotated[
        float, typer.Option("--wait-timeout", metavar="S", help="How long --wait waits.")
    ] = 600.0,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Move every replica off broker ID (one reassignment), e.g. before removing it.

    Example: `sluice brokers decommission 3 --wait`
    """
    from sluice import wire

    try:
        with wire.connect(bootstrap, timeout=timeout, client_id="sluice-cli") as conn:
            current, racks = current_assignment(conn, None)
            if broker_id not in racks:
                raise CliError(f"broker {broker_id} is not in the cluster")
            plan = _plan_without(current, broker_id, [b for b in racks if b != broker_id])
            if not plan:
                typer.echo(f"broker {broker_id} holds no replica")
                return
            typer.echo(f"moving {len(plan)} replica(s) off broker {broker_id}")
            typer.echo("rollback plan:")
            typer.echo(dump_plan({tp: current[tp] for tp in plan}))
            refused = alter_reassignments(conn, dict(plan), timeout)
            if refused:
                raise CliError("not started:\n" + "\n".join(refused), exit_code=EXIT_FAILED)
            if not wait:
                typer.echo("started: `sluice partitions reassign --verify` with the plan below")
                typer.echo(dump_plan(plan))
                return
            deadline = time.monotonic() + wait_timeout
            while ongoing_reassignments(conn) & set(plan):
                if time.monotonic() > deadline:
                    raise CliError(f"still moving after {wait_timeout:g} s", exit_code=EXIT_FAILED)
                time.sleep(0.5)
            left = [tp for tp, r in current_assignment(conn, None)[0].items() if broker_id in r]
            if left:
                names = ", ".join(f"{t}-{p}" for t, p in sorted(left))
                raise CliError(f"broker {broker_id} still holds {names}", exit_code=EXIT_FAILED)
            typer.echo(f"broker {broker_id} holds no replica")
    except wire.WireError as exc:
        raise CliError(str(exc)) from None


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
