"""``sluice partitions reassign``: Kafka's ``kafka-reassign-partitions.sh``, with its JSON plans.

A plan is Kafka's reassignment file::

    {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3]}]}

(``log_dirs``, when present, must be ``"any"`` for every replica: Sluice keeps one log
directory per broker.) One mode at a time:

- ``--generate --topics T1,T2 --brokers 1,2,3`` prints the current assignment of the topics and
  a proposed one over the brokers given, by Kafka's placement (rack-aware when the brokers
  have racks: each partition's replicas on as many racks as it can; ``--disable-rack-aware``
  ignores the racks, which brokers with and without a rack need), each partition keeping its
  replication factor. Nothing changes.
- ``--execute PLAN`` prints the current assignment of the plan's partitions (keep it: it is the
  plan that rolls back) and starts the reassignment (AlterPartitionReassignments).
- ``--verify PLAN`` says, for each partition of the plan, whether its reassignment is completed
  (its replicas are the plan's and nothing is in progress) or still in progress
  (ListPartitionReassignments and Metadata); once all are completed it removes the throttles
  (both rates on every broker, the throttled replicas of the plan's topics) and says so.
- ``--execute PLAN --throttle BYTES_PER_SEC`` first throttles the moves, as
  ``kafka-reassign-partitions.sh``: ``leader.replication.throttled.replicas`` of each moving
  topic lists the moving partitions' current replicas, ``follower.replication.throttled.replicas``
  the replicas the plan adds, and ``leader.replication.throttled.rate`` and
  ``follower.replication.throttled.rate`` are set on every broker holding a replica before or
  after (IncrementalAlterConfigs, through confluent-kafka's AdminClient).
- ``--cancel PLAN`` cancels the plan's reassignments still in progress: their partitions go back
  to their original replicas.

confluent-kafka's AdminClient has none of these calls, so they are spoken through
:mod:`sluice.wire` (PLAINTEXT listeners only). Exit 1 when the broker refused a partition,
when ``--verify`` finds one still in progress, or when a plan names something that does not
exist; 2 for a malformed plan (its file and the problem named).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from kio.schema.errors import ErrorCode

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    CommandConfig,
    RequestTimeout,
    client_properties,
    parse_pairs,
    wire_security,
)
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError

Client = Mapping[str, str]
"""librdkafka properties for the AdminClient that sets throttles (from --command-config)."""

__all__ = [
    "Plan",
    "alter_reassignments",
    "app",
    "current_assignment",
    "dump_plan",
    "ongoing_reassignments",
    "throttled_replicas",
]

app = typer.Typer(
    name="partitions", help="Move partitions' replicas between brokers.", no_args_is_help=True
)

Plan = dict[tuple[str, int], list[int]]


@app.command()
def reassign(
    *,
    generate: Annotated[
        bool, typer.Option("--generate", help="Propose a plan for --topics over --brokers.")
    ] = False,
    topics: Annotated[
        str | None, typer.Option("--topics", metavar="T1,T2", help="--generate: the topics.")
    ] = None,
    brokers: Annotated[
        str | None,
        typer.Option("--brokers", metavar="1,2,3", help="--generate: the brokers to use."),
    ] = None,
    disable_rack_aware: Annotated[
        bool,
        typer.Option(
            "--disable-rack-aware",
            help="--generate: ignore the brokers' racks (needed when only some have one).",
        ),
    ] = False,
    execute: Annotated[
        Path | None, typer.Option("--execute", metavar="PLAN.json", help="Start a plan.")
    ] = None,
    verify: Annotated[
        Path | None,
        typer.Option("--verify", metavar="PLAN.json", help="Whether a plan is done."),
    ] = None,
    cancel: Annotated[
        Path | None,
        typer.Option("--cancel", metavar="PLAN.json", help="Cancel a plan in progress."),
    ] = None,
    throttle: Annotated[
        int | None,
        typer.Option(
            "--throttle",
            metavar="BYTES_PER_SEC",
            min=1,
            help="--execute: throttle the replicas moving to this many bytes/s per broker "
            "(removed by --verify once done).",
        ),
    ] = None,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Generate, execute, verify or cancel a reassignment plan (Kafka's JSON format).

    Example: `sluice partitions reassign --generate --topics orders --brokers 2,3 > plan.json`
    """
    security = wire_security(command_config, "sluice partitions reassign")
    client = parse_pairs(client_properties(None, command_config), "--command-config")
    modes = [m for m, on in (("--generate", generate), ("--execute", execute),
                             ("--verify", verify), ("--cancel", cancel)) if on]  # fmt: skip
    if len(modes) != 1:
        raise CliError(
            "give exactly one of --generate, --execute, --verify, --cancel", exit_code=EXIT_USAGE
        )
    if throttle is not None and execute is None:
        raise CliError("--throttle goes with --execute", exit_code=EXIT_USAGE)
    from sluice import wire

    try:
        with wire.connect(
            bootstrap, timeout=timeout, client_id="sluice-cli", security=security
        ) as conn:
            if generate:
                _generate(conn, _names(topics, "--topics"), _ids(brokers), disable_rack_aware)
            elif execute is not None:
                _execute(conn, _read_plan(execute), timeout, bootstrap, throttle, client)
            elif verify is not None:
                _verify(conn, _read_plan(verify), bootstrap, timeout, client)
            elif cancel is not None:
                _cancel(conn, _read_plan(cancel), timeout)
    except wire.WireError as exc:
        raise CliError(str(exc)) from None


def _names(text: str | None, option: str) -> list[str]:
    names = [n.strip() for n in (text or "").split(",") if n.strip()]
    if not names:
        raise CliError(f"--generate needs {option}", exit_code=EXIT_USAGE)
    return names


def _ids(text: str | None) -> list[int]:
    try:
        ids = [int(n) for n in _names(text, "--brokers")]
    except ValueError:
        message = f"--brokers takes broker ids (1,2,3), not {text!r}"
        raise CliError(message, exit_code=EXIT_USAGE) from None
    return ids


def _read_plan(path: Path) -> Plan:
    """The plan in ``path``; a malformed one is a usage error naming the file and the problem."""

    def bad(problem: str) -> CliError:
        return CliError(f"{path}: {problem}", exit_code=EXIT_USAGE)

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise bad(f"cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise bad(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or doc.get("version") != 1:
        raise bad('expected {"version": 1, "partitions": [...]}')
    entries = doc.get("partitions")
    if not isinstance(entries, list):
        raise bad('"partitions" must be a list')
    plan: Plan = {}
    for i, entry in enumerate(entries):
        where = f"partitions[{i}]"
        if not isinstance(entry, dict):
            raise bad(f"{where} must be an object")
        topic, partition, replicas = (
            entry.get("topic"),
            entry.get("partition"),
            entry.get("replicas"),
        )
        if not isinstance(topic, str) or not topic:
            raise bad(f"{where}.topic must be a topic name")
        if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
            raise bad(f"{where}.partition must be a partition number")
        if not isinstance(replicas, list) or not all(
            isinstance(r, int) and not isinstance(r, bool) for r in replicas
        ):
            raise bad(f"{where}.replicas must be a list of broker ids")
        dirs = entry.get("log_dirs")
        if dirs is not None and dirs != ["any"] * len(replicas):
            raise bad(f'{where}.log_dirs: only "any" (Sluice keeps one log directory per broker)')
        if (topic, partition) in plan:
            raise bad(f"{where}: {topic}-{partition} is in the plan twice")
        plan[(topic, partition)] = replicas
    return plan


def dump_plan(plan: Plan) -> str:
    """A plan in Kafka's format, one line."""
    partitions = [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
        for (t, p), r in sorted(plan.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def current_assignment(conn: Any, topics: set[str] | None) -> tuple[Plan, dict[int, str | None]]:
    """The replicas of every partition of ``topics`` (None: every topic) from Metadata, and
    every broker's rack."""
    from sluice import wire

    answer = conn.call(
        wire.METADATA,
        topics=None,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    racks = {int(b.node_id): getattr(b, "rack", None) for b in answer.brokers}
    current: Plan = {}
    for topic in answer.topics:
        if (topics is None or topic.name in topics) and int(topic.error_code) == 0:
            for p in topic.partitions:
                current[(topic.name, int(p.partition_index))] = [int(r) for r in p.replica_nodes]
    missing = sorted((topics or set()) - {t for t, _ in current})
    if missing:
        raise CliError(f"unknown topic(s): {', '.join(missing)}")
    return current, racks


def _generate(conn: Any, topics: list[str], brokers: list[int], disable_rack_aware: bool) -> None:
    """Kafka's ``--generate``: each topic placed anew over ``brokers`` by the broker's own
    placement (rack-aware when the brokers have racks, unless ``disable_rack_aware``)."""
    from sluice.broker.cluster.placement import Broker, assign_replicas

    current, racks = current_assignment(conn, set(topics))
    unknown = [b for b in brokers if b not in racks]
    if unknown:
        raise CliError(f"broker(s) {', '.join(map(str, unknown))} are not in the cluster")
    placed = [Broker(b, None if disable_rack_aware else racks[b]) for b in sorted(brokers)]
    if len({b.rack is None for b in placed}) > 1:
        raise CliError(
            "Not all brokers have rack information: add --disable-rack-aware to assign "
            "replicas without racks",
            exit_code=EXIT_USAGE,
        )
    proposed: Plan = {}
    for topic in topics:
        indexes = sorted(p for t, p in current if t == topic)
        factor = len(current[(topic, indexes[0])])
        if factor > len(brokers):
            raise CliError(
                f"{topic} has replication factor {factor}: more than the {len(brokers)} brokers"
            )
        assigned = assign_replicas(placed, len(indexes), factor)
        for index in indexes:
            proposed[(topic, index)] = list(assigned[index])
    typer.echo("Current partition replica assignment")
    typer.echo(dump_plan(current))
    typer.echo()
    typer.echo("Proposed partition reassignment configuration")
    typer.echo(dump_plan(proposed))


def alter_reassignments(
    conn: Any, plan: dict[tuple[str, int], list[int] | None], timeout: float
) -> list[str]:
    """AlterPartitionReassignments of ``plan`` (None: cancel); the refusals, one line each."""
    from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
    from kio.schema.types import BrokerId, TopicName
    from kio.static.primitive import i32, i32Timedelta

    from sluice import wire

    by_topic: dict[str, list[Any]] = {}
    for (topic, index), replicas in sorted(plan.items()):
        by_topic.setdefault(topic, []).append(
            alter_v0.ReassignablePartition(
                partition_index=i32(index),
                replicas=None if replicas is None else tuple(BrokerId(r) for r in replicas),
            )
        )
    answer = conn.call(
        wire.Api(45, "AlterPartitionReassignments", 0, 0),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=timeout)),
        topics=tuple(
            alter_v0.ReassignableTopic(name=TopicName(t), partitions=tuple(ps))
            for t, ps in by_topic.items()
        ),
    )
    if int(answer.error_code) != 0:
        return [f"refused: {ErrorCode(answer.error_code).name} {answer.error_message or ''}"]
    refused = []
    for topic in answer.responses:
        for p in topic.partitions:
            if int(p.error_code) != 0:
                reason = ErrorCode(p.error_code).name.upper()
                detail = f": {p.error_message}" if p.error_message else ""
                refused.append(f"{topic.name}-{p.partition_index}: {reason}{detail}")
    return refused


def _execute(
    conn: Any, plan: Plan, timeout: float, bootstrap: str, throttle: int | None, client: Client
) -> None:
    current, _ = current_assignment(conn, {t for t, _ in plan})
    missing = sorted(f"{t}-{p}" for t, p in plan if (t, p) not in current)
    if missing:
        raise CliError(f"unknown partition(s): {', '.join(missing)}")
    typer.echo("Current partition replica assignment")
    typer.echo()
    typer.echo(dump_plan({tp: current[tp] for tp in plan}))
    typer.echo()
    typer.echo("Save this to use as the --execute plan during rollback")
    if throttle is not None:
        brokers = _set_throttles(bootstrap, plan, current, throttle, timeout, client)
        typer.echo(
            f"Warning: You must run --verify periodically, until the reassignment completes, "
            f"to ensure the throttle is removed. The inter-broker throttle limit was set to "
            f"{throttle} B/s on brokers {','.join(map(str, brokers))}."
        )
    refused = alter_reassignments(conn, dict(plan), timeout)
    if refused:
        raise CliError("not started:\n" + "\n".join(refused), exit_code=EXIT_FAILED)
    names = ",".join(f"{t}-{p}" for t, p in sorted(plan))
    typer.echo(f"Successfully started partition reassignments for {names}")


def ongoing_reassignments(conn: Any) -> set[tuple[str, int]]:
    """The partitions being reassigned (ListPartitionReassignments)."""
    from kio.static.primitive import i32Timedelta

    from sluice import wire

    answer = conn.call(
        wire.Api(46, "ListPartitionReassignments", 0, 0),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topics=None,
    )
    return {(t.name, int(p.partition_index)) for t in answer.topics for p in t.partitions}


def throttled_replicas(plan: Plan, current: Plan) -> dict[str, tuple[list[str], list[str]]]:
    """Per topic of the partitions ``plan`` moves, the ``leader.replication.throttled.replicas``
    (their current replicas) and ``follower.replication.throttled.replicas`` (the replicas the
    plan adds) that throttle the move (Kafka's ``calculateLeaderThrottles`` and
    ``calculateFollowerThrottles``).

    >>> throttled_replicas({("t", 0): [2, 3], ("t", 1): [1]}, {("t", 0): [1, 2], ("t", 1): [1]})
    {'t': (['0:1', '0:2'], ['0:3'])}
    """
    found: dict[str, tuple[list[str], list[str]]] = {}
    for (topic, index), replicas in sorted(plan.items()):
        before = current[(topic, index)]
        if replicas == before:
            continue
        leader, follower = found.setdefault(topic, ([], []))
        leader += [f"{index}:{b}" for b in before]
        follower += [f"{index}:{b}" for b in replicas if b not in before]
    return found


def _alter_configs(
    bootstrap: str,
    changes: dict[tuple[str, str], dict[str, str | None]],
    timeout: float,
    client: Client,
) -> None:
    """IncrementalAlterConfigs: per (resource type "topic" or "broker", name), keys to set (a
    value) or delete (None); a refusal is a :class:`CliError`."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (  # type: ignore[attr-defined]  # exported without __all__
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = clients.admin(bootstrap, **{"client.id": "sluice-cli", **client})
    resources = []
    for (kind, name), keys in changes.items():
        entries = [
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
            if value is not None
            else ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)
            for key, value in keys.items()
        ]
        rtype = ResourceType.TOPIC if kind == "topic" else ResourceType.BROKER
        resources.append(ConfigResource(rtype, name, incremental_configs=entries))
    topics = [r for r in resources if r.restype == ResourceType.TOPIC]
    calls = [topics] if topics else []
    calls += [[r] for r in resources if r.restype == ResourceType.BROKER]  # one per call
    for call in calls:
        for resource, future in admin.incremental_alter_configs(
            call, request_timeout=timeout
        ).items():
            try:
                future.result(timeout + 5)
            except KafkaException as exc:
                kind = "broker" if resource.restype == ResourceType.BROKER else "topic"
                reason = exc.args[0].str()
                raise CliError(f"{kind} {resource.name}: {reason}", exit_code=EXIT_FAILED) from None


_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def _set_throttles(
    bootstrap: str, plan: Plan, current: Plan, rate: int, timeout: float, client: Client
) -> list[int]:
    """Throttle the plan's moves (Kafka's ``modifyTopicThrottles`` and
    ``modifyBrokerThrottles``): the throttled replicas of each moving topic, and both rates on
    every broker holding a replica before or after; the brokers."""
    changes: dict[tuple[str, str], dict[str, str | None]] = {}
    for topic, (leader, follower) in throttled_replicas(plan, current).items():
        changes[("topic", topic)] = {
            _REPLICAS[0]: ",".join(leader),
            _REPLICAS[1]: ",".join(follower),
        }
    brokers = sorted(
        {b for tp, rs in plan.items() if rs != current[tp] for b in (*rs, *current[tp])}
    )
    for broker in brokers:
        changes[("broker", str(broker))] = dict.fromkeys(_RATES, str(rate))
    _alter_configs(bootstrap, changes, timeout, client)
    return brokers


def _clear_throttles(
    bootstrap: str, plan: Plan, brokers: list[int], timeout: float, client: Client
) -> None:
    """Remove the throttles of a finished reassignment (Kafka's ``clearAllThrottles``): both
    rates on every broker, the throttled replicas of the plan's topics."""
    changes: dict[tuple[str, str], dict[str, str | None]] = {
        ("broker", str(b)): dict.fromkeys(_RATES) for b in brokers
    }
    topics = sorted({t for t, _ in plan})
    for topic in topics:
        changes[("topic", topic)] = dict.fromkeys(_REPLICAS)
    _alter_configs(bootstrap, changes, timeout, client)
    typer.echo(f"Clearing broker-level throttles on brokers {','.join(map(str, brokers))}")
    typer.echo(f"Clearing topic-level throttles on topic {','.join(topics)}")


def _verify(conn: Any, plan: Plan, bootstrap: str, timeout: float, client: Client) -> None:
    ongoing = ongoing_reassignments(conn)
    current, live = current_assignment(conn, {t for t, _ in plan})
    typer.echo("Status of partition reassignment:")
    unfinished = 0
    for (topic, index), replicas in sorted(plan.items()):
        if (topic, index) in ongoing:
            status = "is still in progress"
        elif current.get((topic, index)) == replicas:
            status = "is completed"
        else:
            status = f"failed: its replicas are {current.get((topic, index))}, not {replicas}"
        unfinished += status != "is completed"
        typer.echo(f"Reassignment of partition {topic}-{index} {status}.")
    if unfinished:
        raise typer.Exit(EXIT_FAILED)
    _clear_throttles(bootstrap, plan, sorted(live), timeout, client)


def _cancel(conn: Any, plan: Plan, timeout: float) -> None:
    ongoing = ongoing_reassignments(conn)
    pending = [tp for tp in sorted(plan) if tp in ongoing]
    if pending:
        refused = alter_reassignments(conn, dict.fromkeys(pending), timeout)
        if refused:
            raise CliError("not cancelled:\n" + "\n".join(refused), exit_code=EXIT_FAILED)
    names = ",".join(f"{t}-{p}" for t, p in pending) or "none (nothing of the plan in progress)"
    typer.echo(f"Successfully cancelled partition reassignments for: {names}")
