"""What ``sluice status`` gathers: the supervisor's state file, the broker, topics, consumer
groups, Connect and Streams apps, as plain dataclasses (``dataclasses.asdict`` is the JSON).

Nothing here prints; :mod:`sluice.cli.status` renders. Every figure comes from a source that
answered: a figure nobody could give is ``None``, never a guess.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # no __all__

from sluice import clients
from sluice.cli._groups import GroupAdmin, Partition, partition_lags, state_name
from sluice.cli._status_state import Component, Supervisor
from sluice.connect_rest import RestClientSecurity, failure_reason
from sluice.exit_codes import CliError


@dataclass
class Node:
    id: int
    host: str
    port: int
    rack: str | None = None
    leaders: int = 0
    """The partitions it leads."""
    under_replicated: int = 0
    """The partitions it leads whose ISR is smaller than their replicas (Kafka's
    ``UnderReplicatedPartitions`` of that broker)."""


@dataclass
class Broker:
    bootstrap: str
    reachable: bool
    error: str | None = None
    cluster_id: str | None = None
    controller_id: int | None = None
    brokers: list[Node] = field(default_factory=list)
    topics: int | None = None
    partitions: int | None = None
    down: list[int] = field(default_factory=list)
    """Brokers that ``sluice up`` runs (``broker-<id>``) but the cluster does not list."""
    under_replicated: list[str] = field(default_factory=list)
    """``topic-partition`` of every partition whose ISR is smaller than its replicas."""
    offline: list[str] = field(default_factory=list)
    """``topic-partition`` of every partition without a leader."""
    reassigning: list[str] | None = None
    """``topic-partition`` of every partition being reassigned (ListPartitionReassignments);
    None when the broker could not say (it does not serve the API)."""


@dataclass
class Topic:
    name: str
    internal: bool
    partitions: int
    messages: int | None
    size_bytes: int | None
    messages_per_s: float | None


@dataclass
class Sizes:
    """Whether topic sizes are known, and if not, why."""

    available: bool
    note: str | None


@dataclass
class Group:
    group: str
    state: str
    members: int | None
    lag: int | None


@dataclass
class Task:
    id: int
    state: str
    worker_id: str | None
    trace_line: str | None = None
    """The exception line of Connect's ``trace`` (a FAILED task has one), see
    :func:`trace_line`."""


@dataclass
class Connector:
    name: str
    type: str | None
    state: str
    worker_id: str | None
    tasks: list[Task]
    trace_line: str | None = None


@dataclass
class Connect:
    url: str
    reachable: bool
    error: str | None
    connectors: list[Connector]


@dataclass
class StreamsApp:
    app: str
    application_id: str
    source: str
    """``supervisor`` (``sluice up`` runs it) or ``topics`` (guessed from topic names)."""
    instances_running: int | None
    instances_total: int | None
    group_state: str | None
    members: int | None
    lag: int | None
    dead_letter_topic: str | None = None
    """The ``errors.deadletterqueue.topic.name`` of its ``config:`` in ``sluice up``'s file."""
    dead_letters: int | None = None
    """Records the dead-letter topic holds, as a read_committed consumer reads them (None:
    unknown)."""


@dataclass
class Status:
    """Everything ``sluice status`` shows; ``asdict`` of it is the ``--json`` document."""

    time: float
    interval: float
    supervisor: Supervisor | None
    broker: Broker
    topics: list[Topic]
    sizes: Sizes
    groups: list[Group]
    connect: Connect | None
    streams: list[StreamsApp]


# -- the broker, topics and groups ---------------------------------------------------------


def is_internal(topic: str) -> bool:
    """Topics the platform keeps for itself: ``_``-prefixed ones (``__consumer_offsets``),
    Connect's storage topics and Streams' changelog and repartition topics.

    >>> [is_internal(t) for t in ("__consumer_offsets", "connect-offsets", "app-s-changelog")]
    [True, True, True]
    >>> [is_internal(t) for t in ("orders", "connect-orders", "changelog")]
    [False, False, False]
    """
    return (
        topic.startswith("_")
        or (topic.startswith("connect-") and topic.endswith(("configs", "offsets", "status")))
        or topic.endswith(("-changelog", "-repartition"))
    )


def unreachable_broker(bootstrap: str, error: str) -> Broker:
    return Broker(bootstrap=bootstrap, reachable=False, error=error)


def describe_broker(
    admin: GroupAdmin, expected: Iterable[int] = ()
) -> tuple[Broker, dict[str, list[int]]]:
    """The cluster as Metadata (and DescribeCluster, for racks) tells it, and the partition ids
    of every topic; ``expected``: the ids of the brokers ``sluice up`` runs."""
    metadata = admin.connection.metadata(admin.client)
    ids = {name: sorted(topic.partitions) for name, topic in metadata.topics.items()}
    nodes = {
        int(b.id): Node(int(b.id), str(b.host), int(b.port)) for b in metadata.brokers.values()
    }
    with contextlib.suppress(CliError, KafkaException):  # racks are a detail: none if refused
        for described in admin.wait(admin.client.describe_cluster(**admin.options)).nodes:
            if described.id in nodes:
                nodes[described.id].rack = described.rack or None
    under_replicated, offline = [], []
    for name, topic in sorted(metadata.topics.items()):
        for index, partition in sorted(topic.partitions.items()):
            lagging = len(partition.isrs) < len(partition.replicas)
            if lagging:
                under_replicated.append(f"{name}-{index}")
            if partition.leader < 0:
                offline.append(f"{name}-{index}")
            elif partition.leader in nodes:
                nodes[partition.leader].leaders += 1
                nodes[partition.leader].under_replicated += lagging
    broker = Broker(
        bootstrap=admin.connection.bootstrap,
        reachable=True,
        cluster_id=metadata.cluster_id,
        controller_id=metadata.controller_id if metadata.controller_id >= 0 else None,
        brokers=sorted(nodes.values(), key=lambda n: n.id),
        topics=len(ids),
        partitions=sum(len(p) for p in ids.values()),
        down=sorted(set(expected) - set(nodes)),
        under_replicated=under_replicated,
        offline=offline,
    )
    return broker, ids


@dataclass
class Watermarks:
    """Earliest offsets, two samples of the latest ones and the seconds between the samples."""

    earliest: dict[Partition, int]
    first: dict[Partition, int]
    latest: dict[Partition, int]
    elapsed: float


def sample_watermarks(
    admin: GroupAdmin,
    partitions: list[Partition],
    interval: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Watermarks:
    """ListOffsets of every partition: earliest, latest, and latest again ``interval`` later
    (no second sample when ``interval`` is 0)."""
    earliest = admin.log_offsets(partitions, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    first = admin.log_offsets(partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]
    if interval <= 0:
        return Watermarks(earliest, first, first, 0.0)
    started = clock()
    sleep(interval)
    latest = admin.log_offsets(partitions, OffsetSpec.latest())  # type: ignore[no-untyped-call]
    return Watermarks(earliest, first, latest, clock() - started)


def topic_rows(
    partitions: Mapping[str, list[int]], marks: Watermarks, sizes: Mapping[str, int] | None
) -> list[Topic]:
    """One :class:`Topic` per topic; a figure that lacks a partition's offsets is ``None``."""
    rows = []
    for name in sorted(partitions):
        ids = [(name, p) for p in partitions[name]]
        known = all(tp in marks.earliest and tp in marks.latest for tp in ids)
        messages = sum(marks.latest[tp] - marks.earliest[tp] for tp in ids) if known else None
        rate = None
        if marks.elapsed > 0 and all(tp in marks.first and tp in marks.latest for tp in ids):
            produced = sum(marks.latest[tp] - marks.first[tp] for tp in ids)
            rate = round(produced / marks.elapsed, 1)
        size = sizes.get(name) if sizes is not None else None
        rows.append(Topic(name, is_internal(name), len(ids), messages, size, rate))
    return rows


def reassigning(bootstrap: str, timeout: float, security: Any = None) -> list[str] | None:
    """The partitions being reassigned, ``topic-partition``; None when the broker does not
    serve ListPartitionReassignments or cannot be asked (over :mod:`sluice.wire`)."""
    from sluice import wire
    from sluice.cli.partitions import ongoing_reassignments

    try:
        with wire.connect(
            bootstrap, timeout=timeout, client_id="sluice-cli", security=security or wire.PLAINTEXT
        ) as conn:
            return [f"{t}-{p}" for t, p in sorted(ongoing_reassignments(conn))]
    except wire.WireError:
        return None


def log_dir_sizes(
    nodes: Iterable[Node], timeout: float, security: Any = None
) -> tuple[Sizes, dict[str, int] | None]:
    """Bytes per topic summed over every broker's log directories (DescribeLogDirs), or why
    they are unknown. A broker that does not serve the API makes every size unknown.
    ``security``: a :class:`sluice.wire.Security` (PLAINTEXT when None). confluent-kafka's
    AdminClient has no call for it, so it is spoken through
    :mod:`sluice.wire` (imported here: kio takes a while to import, every command would pay)."""
    from sluice import wire

    describe_log_dirs = wire.Api(35, "DescribeLogDirs", 1, 4)
    totals: dict[str, int] = {}
    for node in nodes:
        try:
            with wire.connect_node(
                wire.Node(node.id, node.host, node.port),
                timeout=timeout,
                client_id="sluice-cli",
                security=security or wire.PLAINTEXT,
            ) as conn:
                answer = conn.call(describe_log_dirs, topics=None)
        except wire.UnsupportedApiError:
            note = f"the broker at {node.host}:{node.port} does not serve DescribeLogDirs"
            return Sizes(False, note), None
        except wire.WireError as exc:
            return Sizes(False, f"DescribeLogDirs failed: {exc}"), None
        for topic, size in sizes_of(answer).items():
            totals[topic] = totals.get(topic, 0) + size
    return Sizes(True, None), totals


def sizes_of(answer: Any) -> dict[str, int]:
    """Bytes per topic in one DescribeLogDirs answer (future replicas left out)."""
    totals: dict[str, int] = {}
    for result in answer.results:
        if int(result.error_code) != 0:
            continue
        for topic in result.topics:
            for partition in topic.partitions:
                if not partition.is_future_key:
                    totals[topic.name] = totals.get(topic.name, 0) + int(partition.partition_size)
    return totals


def consumer_groups(admin: GroupAdmin, ends: Mapping[Partition, int]) -> list[Group]:
    """Every group with its state, members and total lag (the lag ``sluice groups describe``
    sums: log end offset minus committed offset, over the partitions with a committed offset)."""
    try:
        listed = admin.wait(admin.client.list_consumer_groups(**admin.options))
    except KafkaException as exc:
        raise CliError(f"cannot list groups: {exc.args[0].str()}") from None
    listings = {g.group_id: g for g in listed.valid or ()}
    if not listings:
        return []
    descriptions: dict[str, Any] = {}
    futures = admin.client.describe_consumer_groups(sorted(listings), **admin.options)
    for group, future in futures.items():
        with contextlib.suppress(KafkaException):  # another protocol's group, or gone
            descriptions[group] = admin.wait(future)
    groups = []
    for group in sorted(listings):
        description = descriptions.get(group)
        state = description.state if description is not None else listings[group].state
        members = len(description.members) if description is not None else None
        lags = partition_lags(admin.committed(group), ends)
        groups.append(Group(group, state_name(state), members, sum(lags.values())))
    return groups


# -- Connect -------------------------------------------------------------------------------


def connect_status(url: str, timeout: float, security: RestClientSecurity | None = None) -> Connect:
    """Connectors and tasks through Kafka Connect's REST API (``GET /connectors?expand=status``),
    reached with ``security`` (HTTPS CA, basic auth) when given; a worker that cannot be reached,
    refuses the credentials or answers nonsense is ``reachable: false``. A CA file that cannot
    be loaded is a CliError (exit 2)."""
    address = url.rstrip("/")
    context = None
    if address.lower().startswith("https://"):
        context = (security or RestClientSecurity()).context()
    headers = {"Accept": "application/json", **(security.headers() if security else {})}
    try:
        request = urllib.request.Request(f"{address}/connectors?expand=status", headers=headers)
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            body = json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        refused = failure_reason(exc, address, security, exc.code)
        return Connect(url, False, refused or f"GET /connectors: HTTP {exc.code} {exc.reason}", [])
    except (urllib.error.URLError, OSError, ValueError) as exc:
        untrusted = failure_reason(exc, address, security)
        if untrusted is not None:
            return Connect(url, False, untrusted, [])
        reason = getattr(exc, "reason", exc)
        text = reason.strerror if isinstance(reason, OSError) and reason.strerror else reason
        return Connect(url, False, str(text), [])
    if not isinstance(body, dict):
        return Connect(url, False, f"{url} does not answer as a Kafka Connect worker", [])
    connectors = []
    for name in sorted(body):
        status = body[name].get("status") if isinstance(body[name], dict) else None
        if not isinstance(status, dict):
            continue
        own = status.get("connector") or {}
        tasks = [
            Task(
                int(t.get("id", -1)),
                str(t.get("state", "UNKNOWN")),
                t.get("worker_id"),
                trace_line(t.get("trace")),
            )
            for t in status.get("tasks") or ()
            if isinstance(t, dict)
        ]
        connectors.append(
            Connector(
                name=name,
                type=status.get("type"),
                state=str(own.get("state", "UNKNOWN")),
                worker_id=own.get("worker_id"),
                tasks=sorted(tasks, key=lambda t: t.id),
                trace_line=trace_line(own.get("trace") if isinstance(own, dict) else None),
            )
        )
    return Connect(url, True, None, connectors)


def trace_line(trace: object) -> str | None:
    """The line of a Connect ``trace`` that says what failed: the first line of a Java stack
    trace (Kafka Connect's), the last one of a Python traceback (Sluice's), where each puts
    the exception and its message.

    >>> trace_line("org.apache.kafka.connect.errors.ConnectException: boom\\n\\tat X.y(X.java:1)")
    'org.apache.kafka.connect.errors.ConnectException: boom'
    >>> trace_line('Traceback (most recent call last):\\n  File "t.py", line 1\\nKeyError: 1\\n')
    'KeyError: 1'
    >>> trace_line(None), trace_line("")
    (None, None)
    """
    if not isinstance(trace, str):
        return None
    lines = [line.rstrip() for line in trace.splitlines() if line.strip()]
    if not lines:
        return None
    if lines[0].startswith("Traceback (most recent call last):"):
        # chained exceptions: the last traceback's last unindented line
        final = [line for line in lines if not line[0].isspace()]
        return final[-1]
    return lines[0].strip()


def committed_records(
    bootstrap: str,
    client_config: Mapping[str, Any],
    partitions: list[Partition],
    marks: Watermarks,
    timeout: float,
    limit: int = 100_000,
) -> int | None:
    """The records a ``read_committed`` consumer reads from ``partitions`` between their earliest
    and latest offsets: under exactly-once, end − start offsets also count the transaction
    markers (and aborted records). ``None`` past ``limit`` records or ``timeout`` seconds."""
    wanted = {
        tp: marks.latest[tp]
        for tp in partitions
        if tp in marks.latest and marks.latest[tp] > marks.earliest.get(tp, 0)
    }
    if not wanted:
        return 0
    consumer = clients.consumer(bootstrap, **{**client_config, "isolation.level": "read_committed"})
    try:
        consumer.assign([TopicPartition(t, p, marks.earliest.get((t, p), 0)) for t, p in wanted])
        count = 0
        deadline = time.monotonic() + timeout
        while wanted and count <= limit and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.2):
                if message.error() is None:
                    count += 1
            positions = consumer.position([TopicPartition(t, p) for t, p in wanted])
            for position in positions:
                if position.offset >= wanted[(position.topic, position.partition)]:
                    del wanted[(position.topic, position.partition)]
        return None if wanted else count
    finally:
        consumer.close()


# -- Streams apps --------------------------------------------------------------------------


def streams_apps(
    supervisor: Supervisor | None,
    groups: list[Group] | None,
    topics: Iterable[str],
    messages: Mapping[str, int | None] | None = None,
) -> list[StreamsApp]:
    """The Streams apps ``sluice up`` runs (instances from its state file), then the groups
    that look like Streams apps: a group ``G`` with a topic ``G-…-changelog`` or
    ``G-…-repartition``. The group of each gives its state, members and lag; an app with a
    dead-letter topic gets the records it holds from ``messages`` (records per topic)."""
    by_id = {g.group: g for g in groups or ()}
    apps: list[StreamsApp] = []
    declared: dict[str, list[Component]] = {}
    for component in supervisor.components if supervisor is not None else ():
        if component.kind == "streams":
            declared.setdefault(component.app or component.name, []).append(component)
    for app, instances in sorted(declared.items()):
        application_id = next((c.application_id for c in instances if c.application_id), app)
        running = sum(1 for c in instances if c.state == "running" and c.alive)
        group = by_id.get(application_id)
        found = _app(app, application_id, "supervisor", running, len(instances), group)
        found.dead_letter_topic = next(
            (c.dead_letter_topic for c in instances if c.dead_letter_topic), None
        )
        if found.dead_letter_topic is not None and messages is not None:
            # not created yet: nothing was sent to it
            found.dead_letters = messages.get(found.dead_letter_topic, 0)
        apps.append(found)
    known = {a.application_id for a in apps}
    internal = [t for t in topics if t.endswith(("-changelog", "-repartition"))]
    for group_id in sorted(by_id):
        if group_id not in known and any(t.startswith(f"{group_id}-") for t in internal):
            apps.append(_app(group_id, group_id, "topics", None, None, by_id[group_id]))
    return apps


def _app(
    app: str,
    application_id: str,
    source: str,
    running: int | None,
    total: int | None,
    group: Group | None,
) -> StreamsApp:
    return StreamsApp(
        app=app,
        application_id=application_id,
        source=source,
        instances_running=running,
        instances_total=total,
        group_state=group.state if group is not None else None,
        members=group.members if group is not None else None,
        lag=group.lag if group is not None else None,
    )
