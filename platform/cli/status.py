"""``sluice status``: the whole platform on one screen, or as one JSON document.

::

    sluice status [--home DIR] [-b HOST:PORT] [--url URL] [--json] [--interval S] [--all]
                  [--rest-ca-file FILE] [--rest-user USER] [--rest-password-file FILE]
                  [--rest-config FILE]

Sections: what ``sluice up`` runs (from ``<home>/up.json``), the broker, topics (partitions,
messages, size, messages/s), consumer groups (state, members, lag), connectors and tasks (Kafka
Connect's REST API) and Streams apps (instances, group state, lag). Addresses come from
``up.json`` when there is one; ``-b``/``--url`` given on the command line override it. A worker
``sluice up`` runs with a secured REST API is reached with the CA and credentials it wrote
(``connect_config`` of ``up.json``: an owner-only properties file); the ``--rest-*`` options
(:mod:`sluice.cli._rest_options`) win. The
reference, with every column and JSON key, is ``docs/cli.md``.
"""

from __future__ import annotations

import concurrent.futures
import json
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from sluice import clients
from sluice.cli._common import (
    DEFAULT_HOME,
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    Home,
    RequestTimeout,
    client_properties,
    heading,
    parse_pairs,
    print_table,
)
from sluice.cli._groups import GroupAdmin, Partition
from sluice.cli._rest_options import (
    RestCaFile,
    RestConfig,
    RestPasswordFile,
    RestUser,
    rest_client_security,
)
from sluice.cli._status import (
    Broker,
    Connect,
    Sizes,
    Status,
    StreamsApp,
    Watermarks,
    committed_records,
    connect_status,
    consumer_groups,
    describe_broker,
    log_dir_sizes,
    reassigning,
    sample_watermarks,
    streams_apps,
    topic_rows,
    unreachable_broker,
)
from sluice.cli._status_state import Component, Supervisor, read_supervisor
from sluice.exit_codes import EXIT_FAILED, CliError

__all__ = ["status"]

DEFAULT_CONNECT_URL = "http://127.0.0.1:8083"
CONNECT_TIMEOUT = 5.0
"""Seconds a Connect worker gets to answer before it is shown as unreachable."""
_ALIVE_STATES = ("starting", "running", "crash-loop")


def status(
    ctx: typer.Context,
    *,
    home: Home = DEFAULT_HOME,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    url: Annotated[
        str,
        typer.Option(
            "--url",
            envvar="SLUICE_CONNECT_URL",
            metavar="URL",
            help="A Connect worker's REST API.",
            rich_help_panel="Connection",
        ),
    ] = DEFAULT_CONNECT_URL,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON document instead of tables.")
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            min=0,
            max=60,
            metavar="SECONDS",
            help="Seconds between the two samples of messages/s (0: no rate).",
        ),
    ] = 1.0,
    show_all: Annotated[
        bool,
        typer.Option(
            "--all", "-a", help="Show internal topics too (`__…`, `connect-…`, changelogs)."
        ),
    ] = False,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
    rest_ca_file: RestCaFile = None,
    rest_user: RestUser = None,
    rest_password_file: RestPasswordFile = None,
    rest_config: RestConfig = None,
) -> None:
    """Show the broker, topics, consumer groups, connectors and Streams apps on one screen.

    With a `sluice up` running here (its state in `--home`, default `.sluice`), its addresses
    and processes are used; `-b` and `--url` on the command line override them. Exits 1 when
    the broker cannot be reached (after showing what is known); an unreachable Connect worker
    is shown, not an error.

    Example: `sluice status --json | jq '.groups[] | {group, lag}'`
    """
    client_config = client_properties(client_config, command_config)
    supervisor = read_supervisor(home)
    given = {
        name: _source_name(ctx.get_parameter_source(name)) == "COMMANDLINE"
        for name in ("bootstrap", "url")
    }
    if supervisor is not None and supervisor.bootstrap and not given["bootstrap"]:
        bootstrap = supervisor.bootstrap
    connect_url: str | None = url
    if supervisor is not None and not given["url"]:
        connect_url = supervisor.connect_url  # None: `sluice up` runs no Connect worker
        written = Path(supervisor.connect_config) if supervisor.connect_config else None
        if rest_config is None and written is not None and written.exists():
            rest_config = written  # the CA and login of the secured worker it runs
    rest_security = (
        rest_client_security(rest_ca_file, rest_user, rest_password_file, rest_config)
        if connect_url
        else None
    )
    if rest_security is not None and connect_url and connect_url.lower().startswith("https:"):
        rest_security.context()  # an unusable CA file: a usage error, before anything is asked

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        connect = (
            pool.submit(connect_status, connect_url, min(timeout, CONNECT_TIMEOUT), rest_security)
            if connect_url
            else None
        )
        report = _gather(supervisor, bootstrap, client_config, timeout, interval)
        report.connect = connect.result() if connect is not None else None

    if as_json:
        typer.echo(json.dumps(asdict(report), indent=2))
    else:
        _render(report, show_all)
    if not report.broker.reachable:
        typer.echo(f"error: {report.broker.error}", err=True)
        raise typer.Exit(EXIT_FAILED)


def _gather(
    supervisor: Supervisor | None,
    bootstrap: str,
    client_config: list[str] | None,
    timeout: float,
    interval: float,
) -> Status:
    """Everything but Connect; the broker part is empty if it cannot be reached."""
    report = Status(
        time=round(time.time(), 3),
        interval=interval,
        supervisor=supervisor,
        broker=unreachable_broker(bootstrap, ""),
        topics=[],
        sizes=Sizes(False, "the broker cannot be reached"),
        groups=[],
        connect=None,
        streams=[],
    )
    try:
        admin = GroupAdmin(bootstrap, client_config, timeout)
    except CliError as exc:
        if exc.exit_code != EXIT_FAILED:
            raise  # a bad -X: wrong usage, not an unreachable broker
        report.broker.error = exc.message
        report.streams = streams_apps(supervisor, None, ())
        return report
    components = supervisor.components if supervisor is not None else []
    expected = [int(c.name[7:]) for c in components if c.kind == "broker" and c.name[7:].isdigit()]
    report.broker, ids = describe_broker(admin, expected)
    overrides = parse_pairs(client_config, "-X")
    security = _wire_security(overrides)
    report.broker.reassigning = reassigning(bootstrap, timeout, security)
    partitions: list[Partition] = [(t, p) for t, ps in sorted(ids.items()) for p in ps]
    marks: Watermarks = sample_watermarks(admin, partitions, interval)
    report.sizes, sizes = log_dir_sizes(report.broker.brokers, timeout, security)
    report.topics = topic_rows(ids, marks, sizes)
    report.groups = consumer_groups(admin, marks.latest)
    messages = {t.name: t.messages for t in report.topics}
    for topic in {c.dead_letter_topic for c in components if c.dead_letter_topic}:
        if topic in ids:  # what a read_committed consumer reads: no transaction markers
            partitions = [(topic, p) for p in ids[topic]]
            messages[topic] = committed_records(bootstrap, overrides, partitions, marks, timeout)
    report.streams = streams_apps(supervisor, report.groups, ids, messages)
    return report


def _wire_security(overrides: dict[str, str]) -> Any:
    """The TLS and SASL settings for what is asked through :mod:`sluice.wire` (reassignments,
    log directory sizes); PLAINTEXT when it cannot apply the properties (those figures are then
    shown as unknown, with the reason)."""
    from sluice import wire

    wanted = {k: v for k, v in overrides.items() if k not in ("client.id", "debug")}
    try:
        return wire.Security.from_config(wanted)
    except (ValueError, OSError):
        return wire.PLAINTEXT


# -- rendering -----------------------------------------------------------------------------


def _source_name(source: object) -> str:
    """``COMMANDLINE``, ``ENVIRONMENT``, ``DEFAULT``…: where click took an option's value from."""
    return str(getattr(source, "name", ""))


def _render(report: Status, show_all: bool) -> None:
    _render_supervisor(report.supervisor, report.time)
    typer.echo()
    _render_broker(report.broker)
    typer.echo()
    _render_topics(report, show_all)
    typer.echo()
    _render_groups(report)
    typer.echo()
    _render_connect(report.connect)
    typer.echo()
    _render_streams(report)


def _render_supervisor(supervisor: Supervisor | None, now: float) -> None:
    heading("SLUICE UP")
    if supervisor is None:
        typer.echo("no state file: `sluice up` was not started here (see --home)")
        return
    if supervisor.running:
        typer.echo(
            f"sluice up: running, pid {supervisor.pid}, file {supervisor.file or '-'}"
            + (f" (state {_ago(now - supervisor.updated)} old)" if supervisor.updated else "")
        )
    else:
        when = _when(supervisor.updated) if supervisor.updated else "an unknown time"
        typer.echo(f"sluice up: not running (state from {when}), file {supervisor.file or '-'}")
    print_table(
        ["NAME", "KIND", "STATE", "PID", "RESTARTS", "UP", "LAST-EXIT", "LAST-ERROR"],
        [
            [
                c.name,
                c.kind,
                _child_state(c, now),
                c.pid if c.pid is not None else "-",
                c.restarts,
                _ago(now - c.since) if c.since and c.alive else "-",
                c.exit or "-",
                c.last_error or "-",
            ]
            for c in supervisor.components
        ],
    )


def _child_state(component: Component, now: float) -> str:
    """The state, with when a waiting child starts again, or that its pid is gone."""
    shown = component.state
    if component.next_start is not None:
        wait = f"back-off {_ago(component.backoff)}" if component.backoff is not None else ""
        shown += f", {wait}{', ' if wait else ''}next start in {_ago(component.next_start - now)}"
    elif component.state in _ALIVE_STATES and component.pid is not None and not component.alive:
        shown += ", pid gone"
    return shown


def _render_broker(broker: Broker) -> None:
    heading("BROKER")
    if not broker.reachable:
        print_table(["BOOTSTRAP", broker.bootstrap], [["STATE", "unreachable"]])
        return
    rows: list[list[object]] = [
        ["STATE", "reachable"],
        ["CLUSTER-ID", broker.cluster_id or "-"],
        ["BROKERS", ", ".join(f"{n.id} ({n.host}:{n.port})" for n in broker.brokers) or "-"],
        ["CONTROLLER", broker.controller_id if broker.controller_id is not None else "-"],
        ["TOPICS", f"{broker.topics} ({broker.partitions} partitions)"],
    ]
    if broker.down:
        rows.append(["DOWN", ", ".join(map(str, broker.down))])
    lists = [("UNDER-REPLICATED", broker.under_replicated), ("OFFLINE", broker.offline)]
    if broker.reassigning is not None:  # a broker without ListPartitionReassignments: no row
        lists.append(("REASSIGNING", broker.reassigning))
    for label, names in lists:
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        rows.append([label, f"{len(names)}: {shown}" if names else "0"])
    print_table(["BOOTSTRAP", broker.bootstrap], rows)
    if len(broker.brokers) + len(broker.down) > 1:  # a cluster: each broker
        typer.echo()
        print_table(
            ["ID", "RACK", "STATE", "LEADERS", "UNDER-REPLICATED"],
            [
                [
                    f"{n.id}*" if n.id == broker.controller_id else n.id,
                    n.rack or "-",
                    "up",
                    n.leaders,
                    n.under_replicated,
                ]
                for n in broker.brokers
            ]
            + [[ident, "-", "down", "-", "-"] for ident in broker.down],
        )


def _render_topics(report: Status, show_all: bool) -> None:
    heading("TOPICS")
    if not report.broker.reachable:
        typer.echo("(unknown: no broker)")
        return
    topics, sizes = report.topics, report.sizes
    shown = [t for t in topics if show_all or not t.internal]
    headers = ["NAME", "PARTITIONS", "MESSAGES", "SIZE", "MSG/S"]
    print_table(
        [*headers, "INTERNAL"] if show_all else headers,
        [
            [
                t.name,
                t.partitions,
                _or_dash(t.messages),
                _bytes(t.size_bytes),
                _or_dash(t.messages_per_s),
                *(["yes" if t.internal else ""] if show_all else []),
            ]
            for t in shown
        ],
    )
    if hidden := len(topics) - len(shown):
        typer.echo(f"({hidden} internal topic{'' if hidden == 1 else 's'} not shown: --all)")
    if not sizes.available and topics:
        typer.echo(f"(SIZE unknown: {sizes.note})")


def _render_groups(report: Status) -> None:
    heading("CONSUMER GROUPS")
    if not report.groups:
        typer.echo("(none)" if report.broker.reachable else "(unknown: no broker)")
        return
    print_table(
        ["GROUP", "STATE", "MEMBERS", "LAG"],
        [[g.group, g.state, _or_dash(g.members), _or_dash(g.lag)] for g in report.groups],
    )


def _render_connect(connect: Connect | None) -> None:
    heading("CONNECTORS")
    if connect is None:
        typer.echo("no Connect worker: `sluice up` runs none (--url names one)")
        return
    if not connect.reachable:
        typer.echo(f"worker {connect.url}: unreachable ({connect.error})")
        return
    typer.echo(f"worker {connect.url}: reachable")
    if not connect.connectors:
        typer.echo("(no connectors)")
        return
    rows: list[list[object]] = []
    for c in connect.connectors:
        rows.append([c.name, "-", c.type or "-", c.state, c.worker_id or "-", c.trace_line or ""])
        rows.extend(
            [c.name, t.id, "", t.state, t.worker_id or "-", t.trace_line or ""] for t in c.tasks
        )
    print_table(["CONNECTOR", "TASK", "TYPE", "STATE", "WORKER", "TRACE"], rows)


def _render_streams(report: Status) -> None:
    heading("STREAMS APPS")
    if not report.streams:
        typer.echo("(none)")
        return
    print_table(
        [
            "APP",
            "APPLICATION-ID",
            "INSTANCES",
            "GROUP-STATE",
            "MEMBERS",
            "LAG",
            "DEAD-LETTERS",
            "FROM",
        ],
        [
            [
                a.app,
                a.application_id,
                f"{a.instances_running}/{a.instances_total}"
                if a.instances_total is not None
                else "-",
                a.group_state or "-",
                _or_dash(a.members),
                _or_dash(a.lag),
                _dead_letters(a),
                "sluice up" if a.source == "supervisor" else "topic names",
            ]
            for a in report.streams
        ],
    )


def _dead_letters(app: StreamsApp) -> str:
    """``-`` without a dead-letter topic, else its record count and name."""
    if app.dead_letter_topic is None:
        return "-"
    count = "?" if app.dead_letters is None else app.dead_letters
    return f"{count} ({app.dead_letter_topic})"


def _or_dash(value: object) -> object:
    return "-" if value is None else value


def _bytes(size: int | None) -> str:
    """``-`` if unknown, else bytes in binary units.

    >>> _bytes(None), _bytes(512), _bytes(1536), _bytes(5 * 1024**3)
    ('-', '512 B', '1.5 KiB', '5.0 GiB')
    """
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _ago(seconds: float) -> str:
    """A duration, roughly.

    >>> _ago(4.2), _ago(185), _ago(7300), _ago(200000)
    ('4s', '3m', '2h', '2d')
    """
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
