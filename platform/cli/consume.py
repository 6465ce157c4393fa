r"""``sluice consume``: print records, formatted like kcat's ``-f``.

Format tokens: ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k`` key, ``%v`` value,
``%T`` timestamp (ms since the epoch, -1 if none), ``%h`` headers (``k=v,k2=v2``), ``%K`` key
length and ``%S`` value length (-1 when null), ``%%`` a percent sign; ``\t``, ``\n``, ``\r``,
``\0`` and ``\\`` escapes. A null key or value prints as nothing. Each record ends with a
newline unless the format already ends with one.

>>> fmt = compile_format(r"%p:%o %k\t%v")
>>> class Msg:
...     def topic(self): return "t"
...     def partition(self): return 1
...     def offset(self): return 42
...     def key(self): return None
...     def value(self): return b"hello"
>>> fmt(Msg())
b'1:42 \thello\n'
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    Connection,
    client_properties,
    describe_error,
    make_client,
    parse_pairs,
    records,
    split_format,
    stderr,
    unescape,
    warn,
)
from sluice.cli._http_security_options import RegistryConfig, registry_settings
from sluice.cli._schema_formats import DEFAULT_URL, KeyFormat, RegistryUrl, ValueFormat, decoder
from sluice.exit_codes import EXIT_INTERRUPTED, CliError
from sluice.serde import SerdeError

OFFSET_TAIL_BASE = -2000
"""librdkafka's logical offset ``RD_KAFKA_OFFSET_TAIL(n)`` is ``-2000 - n``: n before the end."""
BATCH = 500
GROUP_HINT_AFTER = 30.0
"""Seconds in a group without an assignment after which a hint is printed."""

Formatter = Callable[[Message], bytes]


def _headers(message: Message) -> bytes:
    headers = message.headers() or []
    pairs = headers.items() if isinstance(headers, dict) else headers
    return b",".join(name.encode() + _header_value(value) for name, value in pairs)


def _header_value(value: str | bytes | None) -> bytes:
    if value is None:
        return b""
    return b"=" + (value if isinstance(value, bytes) else value.encode())


def _length(data: bytes | None) -> bytes:
    return b"-1" if data is None else str(len(data)).encode()


def _timestamp(message: Message) -> bytes:
    kind, value = message.timestamp()
    return b"-1" if kind == TIMESTAMP_NOT_AVAILABLE else str(value).encode()


_TOKENS: dict[str, Formatter] = {
    "t": lambda m: (m.topic() or "").encode(),
    "p": lambda m: str(m.partition()).encode(),
    "o": lambda m: str(m.offset()).encode(),
    "k": lambda m: m.key() or b"",
    "v": lambda m: m.value() or b"",
    "T": _timestamp,
    "h": _headers,
    "K": lambda m: _length(m.key()),
    "S": lambda m: _length(m.value()),
}


def compile_format(text: str) -> Formatter:
    """Turn a format into a function from a message to the bytes to print."""
    text = unescape(text)
    if not text.endswith("\n"):
        text += "\n"
    known = "%t %p %o %k %v %T %h %K %S %%"
    parts = [
        part if isinstance(part, bytes) else _TOKENS[part]
        for part in split_format(text, _TOKENS, known)
    ]

    def render(message: Message) -> bytes:
        return b"".join(part if isinstance(part, bytes) else part(message) for part in parts)

    return render


class _Decoded:
    """A message whose key and value are shown decoded (``%k``/``%v``/``%K``/``%S``)."""

    def __init__(self, message: Message, key: bytes | None, value: bytes | None) -> None:
        self._message = message
        self._key = key
        self._value = value

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._message, name)


Decode = Callable[[bytes], bytes]


def decoding(render: Formatter, key: Decode | None, value: Decode | None) -> Formatter:
    """*render* showing keys and values decoded by the schema ids they carry (null stays null);
    a record that cannot be decoded stops the command, naming where it is."""

    def show(message: Message) -> bytes:
        raw_key, raw_value = message.key(), message.value()
        try:
            shown_key = raw_key if key is None or raw_key is None else key(raw_key)
            shown_value = raw_value if value is None or raw_value is None else value(raw_value)
        except SerdeError as error:
            where = f"partition {message.partition()} offset {message.offset()}"
            raise CliError(f"record at {where} of {message.topic()!r}: {error}") from None
        return render(_Decoded(message, shown_key, shown_value))  # type: ignore[arg-type]

    return show


def parse_offset(text: str) -> int:
    """``beginning``/``earliest``, ``end``/``latest``, an offset, or ``-N`` (N before the end).

    >>> parse_offset("earliest"), parse_offset("17"), parse_offset("-10")
    (-2, 17, -2010)
    """
    named = {"beginning": OFFSET_BEGINNING, "earliest": OFFSET_BEGINNING}
    named |= {"end": OFFSET_END, "latest": OFFSET_END}
    if text.lower() in named:
        return int(named[text.lower()])
    try:
        offset = int(text)
    except ValueError:
        raise typer.BadParameter(
            f"expected an offset, -N, beginning or end; got {text!r}", param_hint="--offset"
        ) from None
    return offset if offset >= 0 else OFFSET_TAIL_BASE + offset


def consume(
    topic: Annotated[str, typer.Argument(metavar="TOPIC", help="Topic to read.")],
    *,
    from_beginning: Annotated[
        bool,
        typer.Option(
            "--from-beginning", help="Start at the earliest offset (default: only new records)."
        ),
    ] = False,
    partition: Annotated[
        int | None, typer.Option("--partition", "-p", min=0, help="Read only this partition.")
    ] = None,
    offset: Annotated[
        str | None,
        typer.Option(
            "--offset",
            "-o",
            metavar="OFFSET",
            help="Start offset: a number, -N (N before the end), beginning or end.",
        ),
    ] = None,
    max_messages: Annotated[
        int | None,
        typer.Option("--max-messages", "-n", min=1, help="Stop after this many records."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            min=0.0,
            metavar="SECONDS",
            help="Stop after this long without a record (default: wait forever).",
        ),
    ] = None,
    end: Annotated[
        bool,
        typer.Option("--end", "-e", help="Stop at the end of every partition (like kcat -e)."),
    ] = False,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="Output format of each record (see above).")
    ] = "%v",
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            help="Join this consumer group and commit offsets (needs a group coordinator).",
        ),
    ] = None,
    key_format: KeyFormat = None,
    value_format: ValueFormat = None,
    schema_registry: RegistryUrl = DEFAULT_URL,
    schema_registry_config: RegistryConfig = None,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
) -> None:
    r"""Print records of TOPIC to stdout, one per line.

    Without --group, every partition (or --partition) is assigned directly and nothing is
    committed.

    Format tokens: `%t` topic, `%p` partition, `%o` offset, `%k` key, `%v` value, `%T`
    timestamp (ms), `%h` headers, `%K`/`%S` key/value length, `%%`; escapes `\t \n \\`.

    Example: `sluice consume orders --from-beginning -n 10 -f '%p/%o %k\t%v'`

    With `--value-format avro|json-schema|protobuf` (`--key-format` alike) each value is
    decoded by the schema id it carries and printed as JSON.
    """
    client_config = client_properties(client_config, command_config)
    render = compile_format(fmt)
    registry = registry_settings(schema_registry_config)
    if key_format is not None or value_format is not None:
        render = decoding(
            render,
            None if key_format is None else decoder(key_format, schema_registry, registry),
            None if value_format is None else decoder(value_format, schema_registry, registry),
        )
    start: int | None = None
    if offset is not None:
        if from_beginning:
            raise typer.BadParameter("give --offset or --from-beginning, not both")
        start = parse_offset(offset)
    if group is not None and (partition is not None or offset is not None):
        raise typer.BadParameter("--partition and --offset assign partitions; not with --group")
    if start is None:
        start = OFFSET_BEGINNING if from_beginning else OFFSET_END

    connection = Connection(bootstrap, DEFAULT_TIMEOUT)
    config: dict[str, Any] = {
        "client.id": "sluice-cli",
        "auto.offset.reset": "earliest" if from_beginning else "latest",
        "enable.partition.eof": end,
        "error_cb": connection.error_cb,
    }
    if group is not None:
        config["group.id"] = group
    config.update(parse_pairs(client_config, "-X"))
    consumer = make_client(clients.consumer, bootstrap, config)
    printed = _Counter()
    try:
        metadata = connection.metadata(consumer, topic).topics.get(topic)
        error = metadata.error if metadata is not None else None
        if metadata is None or (error and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise CliError(f"topic {topic!r} does not exist")
        if error is not None and error.code() != KafkaError.LEADER_NOT_AVAILABLE:
            raise CliError(f"topic {topic!r}: {describe_error(error)}")
        if group is not None:
            consumer.subscribe([topic])
        else:
            ids = sorted(metadata.partitions)
            if partition is not None:
                if partition not in metadata.partitions:
                    raise CliError(
                        f"topic {topic!r} has no partition {partition} (it has {len(ids)})"
                    )
                ids = [partition]
            consumer.assign([TopicPartition(topic, p, start) for p in ids])
        _loop(
            consumer,
            render=render,
            counter=printed,
            max_messages=max_messages,
            idle_timeout=timeout,
            end=end,
            group=group,
        )
    except KeyboardInterrupt:
        _close(consumer)
        stderr.print(f"consumed {records(printed.count)}", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except BrokenPipeError:
        # The reader went away (`sluice consume … | head`): stop quietly, as kcat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        _close(consumer)
        return
    except BaseException:
        _close(consumer)
        raise
    _close(consumer)
    stderr.print(f"consumed {records(printed.count)}", markup=False)


def _close(consumer: Consumer) -> None:
    with contextlib.suppress(RuntimeError):  # already closed
        consumer.close()  # with --group: commits what was printed


class _Counter:
    """Records printed so far (kept outside the loop so that Ctrl-C can still report it)."""

    def __init__(self) -> None:
        self.count = 0


def _loop(
    consumer: Consumer,
    *,
    render: Formatter,
    counter: _Counter,
    max_messages: int | None,
    idle_timeout: float | None,
    end: bool,
    group: str | None,
) -> None:
    out = sys.stdout.buffer
    started = last = time.monotonic()
    hinted = group is None
    at_end: set[tuple[str, int]] = set()
    while max_messages is None or counter.count < max_messages:
        want = BATCH if max_messages is None else min(BATCH, max_messages - counter.count)
        wait = 0.2 if idle_timeout is None else max(0.0, min(0.2, idle_timeout))
        batch = consumer.consume(num_messages=want, timeout=wait)
        now = time.monotonic()
        printed = False
        for message in batch:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(_where(message))
                elif error.fatal() or error.code() in (
                    KafkaError.UNKNOWN_TOPIC_OR_PART,
                    KafkaError._UNKNOWN_PARTITION,
                    KafkaError.TOPIC_AUTHORIZATION_FAILED,
                    KafkaError.GROUP_AUTHORIZATION_FAILED,
                ):
                    raise CliError(describe_error(error))
                else:
                    warn(describe_error(error))
                continue
            at_end.discard(_where(message))
            out.write(render(message))
            counter.count += 1
            printed = True
        if printed:
            out.flush()
            last = now
        elif idle_timeout is not None and now - last >= idle_timeout:
            break
        if end and at_end and _all_at_end(consumer, at_end):
            break
        if not hinted and now - started >= GROUP_HINT_AFTER:
            hinted = True
            if not consumer.assignment():
                warn(
                    f"no partition assigned to group {group!r} after {GROUP_HINT_AFTER:g}s; "
                    "does the broker have a group coordinator?"
                )


def _where(message: Message) -> tuple[str, int]:
    partition = message.partition()
    return message.topic() or "", -1 if partition is None else partition


def _all_at_end(consumer: Consumer, at_end: set[tuple[str, int]]) -> bool:
    assignment = {(tp.topic, tp.partition) for tp in consumer.assignment()}
    return bool(assignment) and assignment <= at_end
