"""``sluice groups list|describe|reset-offsets|delete``: consumer groups through AdminClient.

What ``kafka-consumer-groups.sh`` does, with its rules: ``describe`` joins the group's members,
its committed offsets and the partitions' log end offsets into the lag of each partition;
``reset-offsets`` computes new offsets clamped to what the log holds and refuses while the group
has members ("Assignments can only be reset if the group is inactive"); ``delete`` is refused by
the broker while the group has members.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

import typer
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # no __all__

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    RequestTimeout,
    client_properties,
    describe_error,
    error_of,
    heading,
    print_table,
    stderr,
    warn,
)
from sluice.cli._groups import (
    INACTIVE,
    GroupAdmin,
    Partition,
    ResetPlan,
    format_partitions,
    group_error,
    parse_datetime,
    parse_topic,
    partition_lags,
    state_name,
)
from sluice.exit_codes import EXIT_FAILED, CliError

app = typer.Typer(
    help="List, describe, reset the offsets of, and delete consumer groups.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


def _group_id(value: str) -> str:
    if not value:
        raise typer.BadParameter("a group id cannot be empty")
    return value


def _group_ids(values: list[str]) -> list[str]:
    return [_group_id(value) for value in values]


Group = Annotated[
    str,
    typer.Argument(metavar="GROUP", callback=_group_id, help="The consumer group (its group.id)."),
]


@app.command("list")
def list_(
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """List consumer groups with their state and protocol type (ListGroups)."""
    client_config = client_properties(client_config, command_config)
    admin = GroupAdmin(bootstrap, client_config, timeout)
    try:
        result = admin.wait(admin.client.list_consumer_groups(**admin.options))
    except KafkaException as exc:
        raise CliError(f"cannot list groups: {exc.args[0].str()}") from None
    listings = sorted(result.valid or (), key=lambda g: g.group_id)
    errors = [error_of(exc) or exc for exc in result.errors or ()]
    if errors and not listings:
        raise CliError(f"cannot list groups: {_reason(errors[0])}")
    for error in errors:
        warn(f"some groups may be missing: {_reason(error)}")
    states = {g.group_id: g.state for g in listings}
    if unknown := [g for g, state in states.items() if state == ConsumerGroupState.UNKNOWN]:
        # ListGroups before v4 has no states: DescribeGroups tells them.
        futures = admin.client.describe_consumer_groups(unknown, **admin.options)
        for group, future in futures.items():
            with contextlib.suppress(KafkaException):  # if not, it stays Unknown
                states[group] = admin.wait(future).state
    print_table(
        ["GROUP", "STATE", "PROTOCOL-TYPE"],
        [
            [g.group_id, state_name(states[g.group_id]), _protocol_type(g.is_simple_consumer_group)]
            for g in listings
        ],
    )
    if errors:
        raise typer.Exit(EXIT_FAILED)


def _reason(error: object) -> str:
    return describe_error(error) if isinstance(error, KafkaError) else str(error)


def _protocol_type(simple: bool) -> str:
    """``consumer`` for a group that members joined; ``-`` for one that only stores offsets."""
    return "-" if simple else "consumer"


@app.command()
def describe(
    group: Group,
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Show a group's state, members and, per partition, its committed offset and lag.

    Lag is the log end offset (the high watermark) minus the committed offset. A partition
    assigned to a member but never committed shows `-` as its offset and lag.

    Example: `sluice groups describe readers`
    """
    client_config = client_properties(client_config, command_config)
    admin = GroupAdmin(bootstrap, client_config, timeout)
    description = admin.describe(group)
    committed = admin.committed(group)
    members = sorted(
        description.members if description is not None else (),
        key=lambda m: (m.client_id, m.member_id),
    )
    if description is None or (
        description.state == ConsumerGroupState.EMPTY and not members and not committed
    ):
        raise CliError(f"consumer group {group!r} does not exist")

    owner: dict[Partition, Any] = {}
    for member in members:
        for tp in _assigned(member):
            owner[tp.topic, tp.partition] = member
    partitions = sorted(set(committed) | set(owner))
    ends = admin.log_offsets(partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]
    lags = partition_lags(committed, ends)

    heading("SUMMARY")
    coordinator = description.coordinator
    print_table(
        ["GROUP", group],
        [
            ["STATE", state_name(description.state)],
            ["PROTOCOL-TYPE", _protocol_type(description.is_simple_consumer_group)],
            ["ASSIGNOR", description.partition_assignor or "-"],
            ["COORDINATOR", f"{coordinator.id} ({coordinator.host}:{coordinator.port})"],
            ["MEMBERS", len(members)],
            ["TOTAL-LAG", sum(lags.values())],
        ],
    )

    typer.echo()
    heading("MEMBERS")
    print_table(
        ["MEMBER-ID", "CLIENT-ID", "HOST", "INSTANCE-ID", "PARTITIONS"],
        [
            [
                m.member_id,
                m.client_id,
                m.host,
                m.group_instance_id or "-",
                format_partitions((tp.topic, tp.partition) for tp in _assigned(m)) or "-",
            ]
            for m in members
        ],
    )

    typer.echo()
    heading("OFFSETS")
    print_table(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"],
        [
            [
                topic,
                partition,
                committed.get((topic, partition), "-"),
                ends.get((topic, partition), "-"),
                lags.get((topic, partition), "-"),
                owner[topic, partition].member_id if (topic, partition) in owner else "-",
            ]
            for topic, partition in partitions
        ],
    )
    if len(ends) < len(partitions):
        raise typer.Exit(EXIT_FAILED)


def _assigned(member: Any) -> list[TopicPartition]:
    assignment = member.assignment
    return list(assignment.topic_partitions or ()) if assignment is not None else []


@app.command("reset-offsets")
def reset_offsets(
    group: Group,
    *,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            "-t",
            metavar="TOPIC[:P,P]",
            help="Topic whose offsets to reset (all its partitions, or those listed); repeatable.",
        ),
    ] = None,
    all_topics: Annotated[
        bool,
        typer.Option("--all-topics", help="Every topic the group has committed offsets for."),
    ] = False,
    to_earliest: Annotated[
        bool, typer.Option("--to-earliest", help="Reset to the earliest offset of the log.")
    ] = False,
    to_latest: Annotated[
        bool, typer.Option("--to-latest", help="Reset to the end of the log (skip everything).")
    ] = False,
    to_offset: Annotated[
        int | None,
        typer.Option(
            "--to-offset", min=0, metavar="N", help="Reset to offset N (clamped to the log)."
        ),
    ] = None,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            metavar="ISO-8601",
            help="Reset to the first record at or after this time (no zone: local time).",
        ),
    ] = None,
    shift_by: Annotated[
        int | None,
        typer.Option(
            "--shift-by", metavar="N", help="Move the committed offset by N (negative: back)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the new offsets without changing anything.")
    ] = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Set a group's committed offsets; refused while the group has members.

    Prints each partition's current and new offset. New offsets are clamped to the offsets the
    log holds, as Kafka's tool does.

    Example: `sluice groups reset-offsets readers -t orders:0,1 --to-datetime 2024-05-01T12:00`
    """
    client_config = client_properties(client_config, command_config)
    modes = {
        "--to-earliest": ResetPlan("earliest") if to_earliest else None,
        "--to-latest": ResetPlan("latest") if to_latest else None,
        "--to-offset": ResetPlan("offset", to_offset) if to_offset is not None else None,
        "--to-datetime": (
            ResetPlan("datetime", parse_datetime(to_datetime)) if to_datetime is not None else None
        ),
        "--shift-by": ResetPlan("shift", shift_by) if shift_by is not None else None,
    }
    chosen = [plan for plan in modes.values() if plan is not None]
    if len(chosen) != 1:
        raise typer.BadParameter(f"give exactly one of {', '.join(modes)}")
    plan = chosen[0]
    if bool(topic) == all_topics:
        raise typer.BadParameter("give --topic (repeatable) or --all-topics")
    specs = [parse_topic(text) for text in topic or ()]

    admin = GroupAdmin(bootstrap, client_config, timeout)
    description = admin.describe(group)
    if description is not None and description.state not in INACTIVE:
        members = len(description.members)
        raise CliError(
            f"assignments can only be reset if the group {group!r} is inactive, but the current "
            f"state is {state_name(description.state)} ({members} member"
            f"{'' if members == 1 else 's'}); stop its consumers first"
        )
    committed = admin.committed(group)
    partitions = _partitions_to_reset(admin, specs) if specs else sorted(committed)
    if not partitions:
        raise CliError(f"consumer group {group!r} has no committed offsets to reset")

    earliest = admin.log_offsets(partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = admin.log_offsets(partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]
    at_time: dict[Partition, int] = {}
    if plan.mode == "datetime":
        spec = OffsetSpec.for_timestamp(plan.value)
        at_time = admin.log_offsets(partitions, spec)
    known = [earliest, latest, at_time] if plan.mode == "datetime" else [earliest, latest]
    if missing := [tp for tp in partitions if any(tp not in offsets for offsets in known)]:
        raise CliError(f"cannot reset: the log offsets of {format_partitions(missing)} are unknown")
    new = {
        tp: plan.new_offset(tp, committed.get(tp), earliest[tp], latest[tp], at_time.get(tp))
        for tp in partitions
    }
    print_table(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
        [[t, p, committed.get((t, p), "-"), new[t, p]] for t, p in partitions],
    )
    if dry_run:
        stderr.print(f"dry run: the offsets of group {group} were not changed", markup=False)
        return
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(t, p, offset) for (t, p), offset in new.items()]
    )
    try:
        futures = admin.client.alter_consumer_group_offsets([request], **admin.options)
        answer = admin.wait(futures[group])
    except KafkaException as exc:
        raise CliError(_reset_error(group, exc)) from None
    failed = [tp for tp in answer.topic_partitions or () if tp.error is not None]
    for tp in failed:
        typer.echo(f"error: {tp.topic}:{tp.partition}: {describe_error(tp.error)}", err=True)
    if failed:
        raise typer.Exit(EXIT_FAILED)
    count = len(new)
    stderr.print(
        f"reset {count} partition{'' if count == 1 else 's'} of group {group}", markup=False
    )


def _reset_error(group: str, exc: Exception) -> str:
    error = error_of(exc)
    if error is not None and error.code() in (
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
    ):
        return (
            f"cannot reset the offsets of group {group!r}: it became active meanwhile; "
            f"stop its consumers first ({error.name()})"
        )
    return group_error(group, exc, "reset the offsets of")


def _partitions_to_reset(
    admin: GroupAdmin, specs: list[tuple[str, list[int] | None]]
) -> list[Partition]:
    """The partitions named by ``--topic`` options, each checked against the topic."""
    chosen: set[Partition] = set()
    for topic, wanted in specs:
        existing = admin.partitions_of(topic)
        if unknown := sorted(set(wanted or ()) - set(existing)):
            raise CliError(
                f"topic {topic!r} has no partition {', '.join(map(str, unknown))} "
                f"(it has {len(existing)})"
            )
        chosen.update((topic, p) for p in (existing if wanted is None else wanted))
    return sorted(chosen)


@app.command()
def delete(
    groups: Annotated[
        list[str],
        typer.Argument(metavar="GROUP...", callback=_group_ids, help="Groups to delete."),
    ],
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Delete consumer groups and their committed offsets; refused while a group has members."""
    client_config = client_properties(client_config, command_config)
    admin = GroupAdmin(bootstrap, client_config, timeout)
    futures = admin.client.delete_consumer_groups(groups, **admin.options)
    failed = False
    for group, future in futures.items():
        try:
            admin.wait(future)
            typer.echo(f"Deleted consumer group {group}.")
        except KafkaException as exc:
            typer.echo(f"error: {group_error(group, exc, 'delete')}", err=True)
            failed = True
    if failed:
        raise typer.Exit(EXIT_FAILED)
