"""``sluice produce``: one record per input line, from stdin or a file, split by ``--format``."""

from __future__ import annotations

import contextlib
import enum
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, BinaryIO

import typer
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from rich.filesize import decimal
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from sluice import clients
from sluice.cli._common import (
    Bootstrap,
    ClientConfig,
    CommandConfig,
    Connection,
    client_properties,
    describe_error,
    make_client,
    parse_pairs,
    records,
    stderr,
    unescape,
)
from sluice.cli._http_security_options import RegistryConfig, registry_settings
from sluice.cli._input_format import (
    LineError,
    Parser,
    compile_input_format,
    key_separator_format,
)
from sluice.cli._schema_formats import (
    DEFAULT_URL,
    KeyFormat,
    KeySchema,
    RegistryUrl,
    ValueFormat,
    ValueSchema,
    encoder,
)
from sluice.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, CliError
from sluice.schemas.serdes import RegistryError
from sluice.serde import SerdeError

Encode = Callable[[bytes], bytes]

MAX_SHOWN_FAILURES = 10


class Acks(enum.StrEnum):
    all = "all"
    one = "1"
    zero = "0"


class Compression(enum.StrEnum):
    none = "none"
    gzip = "gzip"
    snappy = "snappy"
    lz4 = "lz4"
    zstd = "zstd"


class _Deliveries:
    """Counts records sent and failed; reports the first failures as they come.

    librdkafka reports only failed deliveries (``delivery.report.only.error``): a callback per
    acknowledged record would cost more than producing it. What was sent and did not fail was
    delivered once ``flush()`` has nothing left.
    """

    def __init__(self) -> None:
        self.sent = 0
        self.sent_bytes = 0
        self.failed = 0
        self.failed_bytes = 0

    @property
    def delivered(self) -> int:
        return self.sent - self.failed

    @property
    def delivered_bytes(self) -> int:
        return self.sent_bytes - self.failed_bytes

    def fail(self, where: str, reason: str) -> None:
        self.failed += 1
        if self.failed <= MAX_SHOWN_FAILURES:
            stderr.print(f"error: {where}: {reason}", markup=False)
        if self.failed == MAX_SHOWN_FAILURES:
            stderr.print("error: further failures are counted, not shown", markup=False)

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.failed_bytes += len(message.value() or b"") + len(message.key() or b"")
            self.fail(
                f"record at partition {message.partition()}",
                f"not delivered: {describe_error(error)}",
            )


def produce(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to write to.")],
    *,
    key_separator: Annotated[
        str | None,
        typer.Option(
            "--key-separator",
            "-K",
            metavar="SEP",
            help=r"Split each line at the first SEP into key and value (`\t` `\\` escapes); "
            "short for `--format '%kSEP%v'`.",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="FORMAT",
            help="How each line splits into a record (default `%v`; see above).",
        ),
    ] = None,
    acks: Annotated[
        Acks, typer.Option("--acks", help="Acknowledgements the broker must gather.")
    ] = Acks.all,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            metavar="FILE",
            exists=True,
            dir_okay=False,
            readable=True,
            help="Read records from this file instead of stdin (shows progress on a terminal).",
        ),
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option(
            "--partition",
            "-p",
            min=0,
            help="Write every record to this partition (default: "
            "by key hash, or spread when keyless).",
        ),
    ] = None,
    compression: Annotated[
        Compression, typer.Option("--compression", "-z", help="Compression codec of batches.")
    ] = Compression.none,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            envvar="SLUICE_TIMEOUT",
            min=0.1,
            metavar="SECONDS",
            help="Give up on the broker (connecting, or acknowledging a record) after this long.",
        ),
    ] = 30.0,
    key_format: KeyFormat = None,
    key_schema: KeySchema = None,
    value_format: ValueFormat = None,
    value_schema: ValueSchema = None,
    schema_registry: RegistryUrl = DEFAULT_URL,
    schema_registry_config: RegistryConfig = None,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
) -> None:
    r"""Produce records to TOPIC, one per line of stdin or --file.

    Format tokens (what `sluice consume -f` prints, `produce -f` reads back): `%k` key, `%v`
    value, `%T` timestamp (ms), `%p` partition, `%h` headers (`k=v,k2=v2`), `%%`; escapes
    `\t \\`. A token's field ends at the text that follows it in the format.

    Examples: `sluice produce orders < orders.txt`, or with keys
    `sluice produce orders -f '%k:%v' --file keyed.txt` (lines like `customer-7:order-1`).

    With `--value-format avro|json-schema|protobuf` each value is a JSON document written in
    Confluent's wire format with the schema of `--value-schema FILE` (registered under
    `TOPIC-value`) or the latest of `TOPIC-value` (`--key-format`/`--key-schema` alike):
    `sluice produce orders --value-format avro --value-schema order.avsc < orders.jsonl`.
    """
    client_config = client_properties(client_config, command_config)
    if key_schema is not None and key_format is None:
        raise typer.BadParameter("--key-schema needs --key-format")
    if value_schema is not None and value_format is None:
        raise typer.BadParameter("--value-schema needs --value-format")
    if key_separator is not None:
        if fmt is not None:
            raise typer.BadParameter("give --key-separator or --format, not both")
        if not unescape(key_separator):
            raise typer.BadParameter("must not be empty", param_hint="--key-separator")
        fmt = key_separator_format(key_separator)
    parse = compile_input_format("%v" if fmt is None else fmt)
    if partition is not None and fmt is not None and "%p" in fmt.replace("%%", ""):
        raise typer.BadParameter("give --partition or a format with %p, not both")
    connection = Connection(bootstrap, timeout)
    overrides = parse_pairs(client_config, "-X")
    deliveries = _Deliveries()
    producer = make_client(
        clients.producer,
        bootstrap,
        {
            "client.id": "sluice-cli",
            "acks": acks.value,
            "compression.type": compression.value,
            "message.timeout.ms": int(timeout * 1000),
            "error_cb": connection.error_cb,
            "on_delivery": deliveries.on_delivery,
            "delivery.report.only.error": True,
            **overrides,
        },
    )
    _check_topic(connection, producer, topic, partition)
    registry = registry_settings(schema_registry_config)
    encode_key = encode_value = None
    if key_format is not None:
        encode_key = encoder(
            key_format, key_schema, schema_registry, topic, is_key=True, settings=registry
        )
    if value_format is not None:
        encode_value = encoder(
            value_format, value_schema, schema_registry, topic, is_key=False, settings=registry
        )

    started = time.monotonic()
    interrupted = False
    fatal: CliError | None = None
    with contextlib.ExitStack() as stack:
        source: BinaryIO
        progress: Progress | None = None
        if file is not None:
            source = stack.enter_context(file.open("rb"))
            if stderr.is_terminal:
                progress = stack.enter_context(
                    Progress(
                        TextColumn("{task.description}"),
                        BarColumn(),
                        DownloadColumn(),
                        TransferSpeedColumn(),
                        TimeRemainingColumn(),
                        console=stderr,
                        transient=True,
                    )
                )
        else:
            source = sys.stdin.buffer
            if sys.stdin.isatty():
                stderr.print("Type one record per line; end with Ctrl-D.", markup=False)
        size = file.stat().st_size if file is not None else 0
        advance: Callable[[int], None] | None = None
        if progress is not None:
            task = progress.add_task(f"producing {file}", total=size)
            advance = partial(progress.advance, task)
        try:
            _send(
                producer,
                topic=topic,
                source=source,
                parse=parse,
                partition=partition,
                deliveries=deliveries,
                advance=advance,
                encode=(encode_key, encode_value),
            )
        except KeyboardInterrupt:
            interrupted = True
        except CliError as error:  # the schema registry failed: send what was read, then stop
            fatal = error
    try:
        left = producer.flush(timeout + 5)
    except KeyboardInterrupt:
        left, interrupted = len(producer), True
    if left:
        deliveries.failed += left
        stderr.print(f"error: {records(left)} still unacknowledged, given up", markup=False)
        deliveries.failed_bytes = deliveries.sent_bytes  # unknown share: claim no bytes

    elapsed = time.monotonic() - started
    summary = (
        f"produced {records(deliveries.delivered)} ({decimal(deliveries.delivered_bytes)}) "
        f"to {topic} in {elapsed:.1f}s"
    )
    if deliveries.failed:
        summary += f"; {deliveries.failed} failed"
    stderr.print(summary, markup=False)
    if interrupted:
        raise typer.Exit(EXIT_INTERRUPTED)
    if fatal is not None:
        raise fatal
    if deliveries.failed:
        raise typer.Exit(EXIT_FAILED)


def _check_topic(
    connection: Connection, producer: Producer, topic: str, partition: int | None
) -> None:
    """Fail early and clearly: broker unreachable, topic missing, partition out of range."""
    deadline = time.monotonic() + connection.timeout
    while True:
        metadata = connection.metadata(producer, topic).topics.get(topic)
        error = metadata.error if metadata is not None else None
        if metadata is None or (error and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise CliError(
                f"topic {topic!r} does not exist and the broker does not create topics on "
                f"use; create it with: sluice topics create {topic}"
            )
        settling = not metadata.partitions or (
            error is not None and error.code() == KafkaError.LEADER_NOT_AVAILABLE
        )
        if settling and time.monotonic() < deadline:
            time.sleep(0.1)  # just created on first use: the leader is being elected
            continue
        if error is not None and not settling:
            raise CliError(f"topic {topic!r}: {describe_error(error)}")
        if partition is not None and partition not in metadata.partitions:
            raise CliError(
                f"topic {topic!r} has no partition {partition} "
                f"(it has {len(metadata.partitions)}: 0..{len(metadata.partitions) - 1})"
            )
        return


def _send(
    producer: Producer,
    *,
    topic: str,
    source: BinaryIO,
    parse: Parser,
    partition: int | None,
    deliveries: _Deliveries,
    advance: Callable[[int], None] | None,
    encode: tuple[Encode | None, Encode | None] = (None, None),
) -> None:
    default = -1 if partition is None else partition
    encode_key, encode_value = encode
    unreported = 0
    for number, raw in enumerate(source, 1):
        unreported += len(raw)
        line = raw.rstrip(b"\n")
        if line.endswith(b"\r"):
            line = line[:-1]
        deliveries.sent += 1
        try:
            key, value, target, timestamp, headers = parse(line)
        except LineError as exc:
            deliveries.fail(f"line {number}", str(exc))
            continue
        if encode_key is not None or encode_value is not None:
            try:
                if encode_key is not None and key is not None:
                    key = encode_key(key)
                if encode_value is not None and value is not None:
                    value = encode_value(value)
            except RegistryError as exc:
                deliveries.failed += 1
                raise CliError(f"line {number}: {exc}") from None
            except SerdeError as exc:
                deliveries.fail(f"line {number}", str(exc))
                continue
        size = len(value or b"") + len(key or b"")
        deliveries.sent_bytes += size
        while True:
            try:
                producer.produce(
                    topic,
                    value,
                    key,
                    default if target is None else target,
                    timestamp=timestamp or 0,
                    headers=headers,
                )
                break
            except BufferError:
                producer.poll(0.05)  # the local queue is full: let deliveries drain it
            except KafkaException as exc:
                deliveries.failed_bytes += size
                deliveries.fail(f"line {number}", describe_error(exc.args[0]))
                break
        if number % 1000 == 0:
            producer.poll(0)
        if advance is not None and unreported >= 65536:
            advance(unreported)
            unreported = 0
    if advance is not None:
        advance(unreported)
