"""``sluice topics create|list|describe|alter|delete``: topic administration through AdminClient."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import sys
from typing import Annotated, Any

import typer
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # exported without __all__
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode

from sluice import clients, wire
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    Connection,
    RequestTimeout,
    client_properties,
    describe_error,
    error_of,
    heading,
    make_client,
    parse_pairs,
    print_table,
    warn,
)
from sluice.exit_codes import EXIT_FAILED, CliError

app = typer.Typer(
    help="Create, list, describe, alter and delete topics.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

TopicConfig = Annotated[
    list[str] | None,
    typer.Option(
        "--config",
        "-c",
        metavar="KEY=VALUE",
        help="Topic config (Kafka's keys, e.g. retention.ms=3600000), repeatable.",
    ),
]


class _Admin:
    """An admin client, its connection watcher and the timeout every request gets."""

    def __init__(self, bootstrap: str, client_config: list[str] | None, timeout: float) -> None:
        self.connection = Connection(bootstrap, timeout)
        self.timeout = timeout
        overrides = parse_pairs(client_config, "-X")
        self.overrides = overrides
        self.client = make_client(
            clients.admin,
            bootstrap,
            {"client.id": "sluice-cli", "error_cb": self.connection.error_cb, **overrides},
        )

    def metadata(self, topic: str | None = None) -> Any:
        return self.connection.metadata(self.client, topic)

    def topic_metadata(self, name: str) -> Any:
        """One topic's metadata, or ``error: topic 'name' does not exist``."""
        topic = self.metadata(name).topics.get(name)
        if topic is None or (
            topic.error is not None and topic.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        ):
            raise CliError(f"topic {name!r} does not exist")
        if topic.error is not None and topic.error.code() != KafkaError.LEADER_NOT_AVAILABLE:
            raise CliError(f"topic {name!r}: {describe_error(topic.error)}")
        return topic

    def wait(self, future: concurrent.futures.Future[Any]) -> Any:
        """The result of an admin request; raises what the broker answered."""
        try:
            return future.result(timeout=self.timeout + 5)
        except concurrent.futures.TimeoutError:
            raise CliError(
                f"no answer from {self.connection.bootstrap} within {self.timeout:g}s (--timeout)"
            ) from None

    @property
    def options(self) -> dict[str, float]:
        return {"request_timeout": self.timeout}


def _topic_error(name: str, exc: Exception, doing: str) -> str:
    error = error_of(exc)
    if error is None:
        return f"cannot {doing} topic {name!r}: {exc}"
    if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
        return f"topic {name!r} already exists"
    if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return f"topic {name!r} does not exist"
    return f"cannot {doing} topic {name!r}: {describe_error(error)}"


def _report_each(
    admin: _Admin,
    futures: dict[str, Any],
    action: str,
    done: str,
    tolerated: int | None,
    when_tolerated: str,
) -> None:
    """Wait for each topic's future; print ``done`` or the error (``tolerated``: an error code
    that only prints ``when_tolerated``, as ``--if-exists`` asks); exit 1 if any failed."""
    failed = False
    for name, future in futures.items():
        try:
            admin.wait(future)
            typer.echo(done.format(name))
        except KafkaException as exc:
            error = error_of(exc)
            if tolerated is not None and error and error.code() == tolerated:
                typer.echo(when_tolerated.format(name))
                continue
            typer.echo(f"error: {_topic_error(name, exc, action)}", err=True)
            failed = True
    if failed:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def create(
    names: Annotated[list[str], typer.Argument(metavar="NAME...", help="Topics to create.")],
    *,
    partitions: Annotated[
        int,
        typer.Option(
            "--partitions", "-p", help="Partitions (default: the broker's num.partitions)."
        ),
    ] = -1,
    replication_factor: Annotated[
        int,
        typer.Option(
            "--replication-factor",
            "-r",
            help="Replicas of each partition (default: the broker's default.replication.factor).",
        ),
    ] = -1,
    config: TopicConfig = None,
    if_not_exists: Annotated[
        bool, typer.Option("--if-not-exists", help="Succeed if a topic already exists.")
    ] = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Create topics.

    Example: `sluice topics create orders -p 6 -c retention.ms=86400000`
    """
    client_config = client_properties(client_config, command_config)
    if partitions == 0 or partitions < -1:
        raise typer.BadParameter("must be at least 1", param_hint="--partitions")
    if replication_factor == 0 or replication_factor < -1:
        raise typer.BadParameter("must be at least 1", param_hint="--replication-factor")
    topic_config = parse_pairs(config, "--config")
    admin = _Admin(bootstrap, client_config, timeout)
    admin.metadata()
    futures = admin.client.create_topics(
        [NewTopic(name, partitions, replication_factor, config=topic_config) for name in names],
        operation_timeout=timeout,
        **admin.options,
    )
    tolerated = KafkaError.TOPIC_ALREADY_EXISTS if if_not_exists else None
    _report_each(
        admin, futures, "create", "Created topic {}.", tolerated, "Topic {} already exists."
    )


@app.command("list")
def list_(
    *,
    internal: Annotated[
        bool,
        typer.Option(
            "--internal", "-i", help="Include internal topics (names starting with `__`)."
        ),
    ] = False,
    under_replicated: Annotated[
        bool,
        typer.Option(
            "--under-replicated",
            help="List the partitions whose in-sync replicas are fewer than their replicas "
            "(of every topic, internal ones included).",
        ),
    ] = False,
    unavailable: Annotated[
        bool,
        typer.Option(
            "--unavailable",
            help="List the partitions without a live leader (of every topic, internal ones "
            "included).",
        ),
    ] = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """List topics with their partition count and replication factor.

    With `--under-replicated` and/or `--unavailable`, list instead the partitions in either
    state, as `kafka-topics --describe --under-replicated-partitions` does.
    """
    client_config = client_properties(client_config, command_config)
    admin = _Admin(bootstrap, client_config, timeout)
    metadata = admin.metadata()
    topics = metadata.topics
    if under_replicated or unavailable:
        _list_unhealthy(metadata, under_replicated=under_replicated, unavailable=unavailable)
        return
    rows = []
    for name in sorted(topics):
        if name.startswith("__") and not internal:
            continue
        partitions = topics[name].partitions.values()
        replicas = max((len(p.replicas) for p in partitions), default=0)
        rows.append([name, len(partitions), replicas])
    print_table(["NAME", "PARTITIONS", "REPLICAS"], rows)


def _list_unhealthy(metadata: Any, *, under_replicated: bool, unavailable: bool) -> None:
    """The partitions that are under-replicated (a leader, fewer in-sync replicas than
    replicas) or unavailable (no leader, or one that is not a live broker), as Kafka's
    ``TopicCommand`` tells them."""
    live = set(metadata.brokers)
    rows = []
    for name in sorted(metadata.topics):
        for p in sorted(metadata.topics[name].partitions.values(), key=lambda p: p.id):
            leaderless = p.leader < 0 or p.leader not in live
            short = not leaderless and len(p.isrs) < len(p.replicas)
            if (under_replicated and short) or (unavailable and leaderless):
                leader = p.leader if p.leader >= 0 else "none"
                rows.append([name, p.id, leader, _ids(p.replicas), _ids(p.isrs)])
    print_table(["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"], rows)


@app.command()
def describe(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Topic to describe.")],
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Show a topic's partitions, offsets and configs.

    Partitions with their leader, leader epoch, replicas, in-sync replicas, offline replicas,
    earliest and latest offsets; configs with where each value comes from (topic override,
    broker, default).
    """
    client_config = client_properties(client_config, command_config)
    admin = _Admin(bootstrap, client_config, timeout)
    topic = admin.topic_metadata(name)
    partitions = sorted(topic.partitions.values(), key=lambda p: p.id)
    replicas = max((len(p.replicas) for p in partitions), default=0)
    complete = True

    heading("SUMMARY")
    print_table(["NAME", name], [["PARTITIONS", len(partitions)], ["REPLICAS", replicas]])

    typer.echo()
    heading("CONFIGS")
    resource = ConfigResource(ResourceType.TOPIC, name)
    try:
        entries = admin.wait(admin.client.describe_configs([resource], **admin.options)[resource])
        print_table(
            ["KEY", "VALUE", "SOURCE"],
            [
                [key, _config_value(entry), _source_name(entry.source)]
                for key, entry in sorted(entries.items())
            ],
        )
    except KafkaException as exc:
        warn(_topic_error(name, exc, "describe configs of"))
        complete = False

    typer.echo()
    heading("PARTITIONS")
    earliest, latest = _watermarks(admin, name, [p.id for p in partitions])
    if not earliest and partitions:
        complete = False
    epochs = _leader_epochs(admin, name)
    if epochs is None:
        complete = False
        epochs = {}
    print_table(
        ["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "EARLIEST", "LATEST"],
        [
            [
                p.id,
                p.leader if p.leader >= 0 else "none",
                epochs[p.id][0] if p.id in epochs else "-",
                _ids(p.replicas),
                _ids(p.isrs),
                _ids(epochs[p.id][1]) if p.id in epochs else "-",
                earliest.get(p.id, "-"),
                latest.get(p.id, "-"),
            ]
            for p in partitions
        ],
    )
    if not complete:
        raise typer.Exit(EXIT_FAILED)


def _ids(ids: list[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


def _leader_epochs(admin: _Admin, name: str) -> dict[int, tuple[int, list[int]]] | None:
    """``partition -> (leader epoch, offline replicas)`` from a Metadata request through
    :mod:`sluice.wire` (confluent-kafka shows neither); ``None`` (with a warning) when they
    cannot be read. Skipped, with a warning, when the client properties ask for something the
    wire client does not apply (it speaks TLS and SASL PLAIN/SCRAM): ``-`` is shown."""
    wanted = {k: v for k, v in admin.overrides.items() if k not in ("client.id", "debug")}
    try:
        security = wire.Security.from_config(wanted)
    except (ValueError, OSError) as exc:
        warn(f"leader epochs and offline replicas are not read: {exc}")
        return {}
    try:
        with wire.connect(
            admin.connection.bootstrap, timeout=admin.timeout, security=security
        ) as conn:
            version = conn.version_of(wire.METADATA)
            answer = conn.call(
                wire.METADATA,
                topics=(_metadata_topic(version, name),),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
    except wire.WireError as exc:
        warn(f"cannot read leader epochs: {exc}")
        return None
    found: dict[int, tuple[int, list[int]]] = {}
    for topic in answer.topics:
        if topic.name == name and topic.error_code in (
            ErrorCode.none,
            ErrorCode.leader_not_available,
        ):
            for p in topic.partitions:
                offline = [int(i) for i in getattr(p, "offline_replicas", ())]
                found[int(p.partition_index)] = (int(getattr(p, "leader_epoch", -1)), offline)
    return found


def _metadata_topic(version: int, name: str) -> Any:
    """The ``MetadataRequestTopic`` naming ``name`` in ``version`` of Metadata (kio's class)."""
    schema = load_request_schema(wire.METADATA.key, version)
    topic_cls = sys.modules[schema.__module__].MetadataRequestTopic
    fields = {f.name for f in dataclasses.fields(topic_cls)}
    values = {"name": name, "topic_id": None}
    return topic_cls(**{k: v for k, v in values.items() if k in fields})


def _config_value(entry: Any) -> str:
    if entry.is_sensitive:
        return "<sensitive>"
    if entry.value is None:
        return "-"
    return str(entry.value) or '""'  # an empty list (throttled replicas), shown as such


def _source_name(source: Any) -> str:
    """Kafka's name of a config source, as ``kafka-configs`` prints it."""
    try:
        return str(ConfigSource(source).name)
    except ValueError:
        return str(source)


def _watermarks(admin: _Admin, name: str, ids: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    """Earliest and latest offset of each partition (ListOffsets); empty if unavailable."""
    found: list[dict[int, int]] = []
    specs = (OffsetSpec.earliest(), OffsetSpec.latest())  # type: ignore[no-untyped-call]
    for spec in specs:
        offsets: dict[int, int] = {}
        if ids:
            request = {TopicPartition(name, i): spec for i in ids}
            futures = admin.client.list_offsets(request, **admin.options)
            for tp, future in futures.items():
                try:
                    offsets[tp.partition] = admin.wait(future).offset
                except KafkaException as exc:
                    warn(f"partition {tp.partition}: cannot list offsets: {exc.args[0].str()}")
                    return {}, {}
        found.append(offsets)
    return found[0], found[1]


@app.command()
def alter(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Topic to alter.")],
    *,
    config: TopicConfig = None,
    delete_config: Annotated[
        list[str] | None,
        typer.Option(
            "--delete-config",
            "-d",
            metavar="KEY",
            help="Remove a topic override (back to the broker default), repeatable.",
        ),
    ] = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            "--partitions",
            "-p",
            min=1,
            help="Grow the topic to this many partitions (keys may move to other partitions).",
        ),
    ] = None,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Set or remove topic configs (other keys keep their values), or add partitions.

    Example: `sluice topics alter orders -c retention.ms=3600000 -d cleanup.policy`
    """
    client_config = client_properties(client_config, command_config)
    to_set = parse_pairs(config, "--config")
    to_delete = list(delete_config or ())
    if not to_set and not to_delete and partitions is None:
        raise typer.BadParameter("give --config, --delete-config or --partitions")
    if overlap := set(to_set) & set(to_delete):
        raise typer.BadParameter(f"both set and deleted: {', '.join(sorted(overlap))}")
    admin = _Admin(bootstrap, client_config, timeout)
    current = len(admin.topic_metadata(name).partitions)
    if partitions is not None and partitions < current:
        raise CliError(
            f"topic {name!r} has {current} partitions; partitions can be added, never removed"
        )
    changes: list[str] = []
    if to_set or to_delete:
        entries = [
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
            for key, value in to_set.items()
        ]
        entries += [
            ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)
            for key in to_delete
        ]
        resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
        futures = admin.client.incremental_alter_configs([resource], **admin.options)
        try:
            admin.wait(futures[resource])
        except KafkaException as exc:
            raise CliError(_topic_error(name, exc, "alter")) from None
        changes += [f"set {k}={v}" for k, v in to_set.items()]
        changes += [f"deleted {k}" for k in to_delete]
    if partitions is not None and partitions != current:
        grown = admin.client.create_partitions(
            [NewPartitions(name, partitions)], operation_timeout=timeout, **admin.options
        )
        try:
            admin.wait(grown[name])
        except KafkaException as exc:
            raise CliError(_topic_error(name, exc, "add partitions to")) from None
        changes.append(f"partitions {current} -> {partitions}")
    typer.echo(f"Altered topic {name}: {', '.join(changes) or 'nothing to change'}.")


@app.command()
def delete(
    names: Annotated[list[str], typer.Argument(metavar="NAME...", help="Topics to delete.")],
    *,
    if_exists: Annotated[
        bool, typer.Option("--if-exists", help="Succeed if a topic does not exist.")
    ] = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Delete topics and all their records."""
    client_config = client_properties(client_config, command_config)
    admin = _Admin(bootstrap, client_config, timeout)
    admin.metadata()
    futures = admin.client.delete_topics(names, operation_timeout=timeout, **admin.options)
    tolerated = KafkaError.UNKNOWN_TOPIC_OR_PART if if_exists else None
    _report_each(
        admin, futures, "delete", "Deleted topic {}.", tolerated, "Topic {} does not exist."
    )
