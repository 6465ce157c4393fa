"""A confluent-kafka transactional process that a test can ``kill -9``.

``python txn_worker.py transform --bootstrap H:P --group G --txn-id T --input I --output O --out F``
    A consume-transform-produce loop: a consumer of group ``G`` (static member, read_committed,
    no auto-commit) reads batches of up to ``--batch`` records of ``I``; for each batch one
    transaction of the producer ``T`` writes, for every record ``in-<n>``, ``out-<n>`` (same key,
    same partition number) to ``O`` and commits the consumed offsets with
    ``send_offsets_to_transaction``. Between the flush of the batch and the commit it pauses
    ``--pause-ms``, so that a kill is likely to land in an open transaction with data on the
    broker. SIGTERM makes it finish the batch in hand, close its clients and exit 0.

    Errors are handled the way an exactly-once application must: a retriable error is retried; an
    abortable one aborts the transaction and exits 3 ("restart me": the next run resumes from the
    committed offsets, as after a crash); a fatal one (fenced) exits 2. A rebalance that revokes
    partitions in the middle of a batch also exits 3: records consumed before it must not be
    committed under the new assignment. A fatal consumer error exits 2 as well.

``python txn_worker.py hang --bootstrap H:P --txn-id T --topic X --count N --out F``
    Begins a transaction, produces ``N`` records to partition ``--partition`` of ``X``, flushes
    them (they are on the broker, uncommitted), logs ``open`` and then does nothing until killed.

Each event is one JSON line with ``t`` = ``time.monotonic_ns()`` (one clock for every process of
the machine) and ``ev``, written and flushed at once: what is in the file happened.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import IO, Any, NoReturn

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

TIMEOUT = 30.0
STOP = False
EXIT_RESTART = 3
EXIT_FATAL = 2


def on_sigterm(signum: int, frame: object) -> None:
    global STOP
    STOP = True


class Log:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.out.write("\n")  # ends a line a kill -9 may have cut in the previous run

    def __call__(self, ev: str, **fields: Any) -> None:
        self.out.write(json.dumps({"t": time.monotonic_ns(), "ev": ev, **fields}) + "\n")
        self.out.flush()


def describe(err: KafkaError) -> dict[str, Any]:
    return {
        "err": str(err),
        "code": err.name(),
        "fatal": err.fatal(),
        "retriable": err.retriable(),
        "abortable": err.txn_requires_abort(),
    }


def producer_config(args: argparse.Namespace, log: Log) -> dict[str, Any]:
    return {
        "bootstrap.servers": args.bootstrap,
        "transactional.id": args.txn_id,
        "transaction.timeout.ms": args.txn_timeout_ms,
        "socket.timeout.ms": min(args.txn_timeout_ms, 60_000),
        "linger.ms": 5,
        "retry.backoff.ms": 100,
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 500,
        # With a single broker down, librdkafka 2.16 re-bootstraps and decommissions the broker
        # it knew; send_offsets_to_transaction then waits forever on the decommissioned group
        # coordinator (confluentinc/librdkafka#5511). Keep the known broker instead.
        "metadata.recovery.strategy": "none",
        "error_cb": lambda err: log("client_error", **describe(err)),
        **({"debug": args.debug} if args.debug else {}),
    }


def init(producer: Producer, log: Log) -> None:
    """init_transactions, retried while the error is retriable (the broker may be restarting)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            producer.init_transactions(TIMEOUT)
            return
        except KafkaException as exc:
            err: KafkaError = exc.args[0]
            log("init_failed", **describe(err))
            if err.fatal():
                sys.exit(EXIT_FATAL)
            if not err.retriable() or time.monotonic() > deadline:
                sys.exit(EXIT_RESTART)
            time.sleep(0.2)


def transform(args: argparse.Namespace, log: Log) -> None:
    producer = Producer(producer_config(args, log))
    init(producer, log)
    log("ready")

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.instance.id": f"{args.group}-member",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            # Long enough that a broker restart does not time the session out on the client:
            # librdkafka then rejoins with an empty member id while its static member is still
            # registered, and the broker fences it (fatal; confluentinc/librdkafka#3437). A
            # restarted worker replaces its static member at once, whatever the timeout.
            "session.timeout.ms": 30_000,
            "heartbeat.interval.ms": 1000,
            "fetch.wait.max.ms": 100,
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 500,
            "metadata.recovery.strategy": "none",  # see producer_config
            "error_cb": lambda err: log("client_error", **describe(err)),
            **({"debug": args.debug} if args.debug else {}),
        }
    )
    revocations = 0

    def parts(partitions: list[TopicPartition]) -> list[int]:
        return sorted(tp.partition for tp in partitions)

    def assigned(c: Consumer, partitions: list[TopicPartition]) -> None:
        log("assigned", parts=parts(partitions))

    def revoked(c: Consumer, partitions: list[TopicPartition]) -> None:
        nonlocal revocations
        revocations += 1
        log("revoked", parts=parts(partitions))

    def lost(c: Consumer, partitions: list[TopicPartition]) -> None:
        nonlocal revocations
        revocations += 1
        log("lost", parts=parts(partitions))

    def give_up(err: KafkaError, where: str) -> NoReturn:
        """Abort what is open (best effort) and exit: 2 when fatal, else 3."""
        log("failed", where=where, **describe(err))
        if err.fatal():
            sys.exit(EXIT_FATAL)
        try:
            producer.abort_transaction(TIMEOUT)
            log("aborted")
        except KafkaException as exc:
            log("abort_failed", **describe(exc.args[0]))
        sys.exit(EXIT_RESTART)

    def retried(call: Any, where: str) -> None:
        for _ in range(10):
            try:
                call()
                return
            except KafkaException as exc:
                err: KafkaError = exc.args[0]
                if not err.retriable() or err.txn_requires_abort() or err.fatal():
                    give_up(err, where)
                log("retry", where=where, **describe(err))
                time.sleep(0.2)
        give_up(KafkaError(KafkaError._TIMED_OUT, f"{where}: still failing"), where)

    consumer.subscribe([args.input], on_assign=assigned, on_revoke=revoked, on_lost=lost)
    while not STOP:
        before = revocations
        batch = consumer.consume(args.batch, 0.5)
        records = []
        for msg in batch:
            err = msg.error()
            if err is not None:
                log("consume_error", **describe(err))
                if err.fatal() or err.code() == KafkaError._FATAL:
                    sys.exit(EXIT_FATAL)  # e.g. a static member fenced: the consumer is dead
            else:
                records.append(msg)
        if not records:
            continue
        if revocations != before:
            log("restart", reason="partitions revoked in the middle of a batch")
            sys.exit(EXIT_RESTART)
        positions: dict[int, int] = {}
        for msg in records:
            positions[msg.partition()] = max(positions.get(msg.partition(), 0), msg.offset() + 1)
        try:
            producer.begin_transaction()
            log("begin", n=len(records), first=records[0].offset(), p=records[0].partition())
            for msg in records:
                value = msg.value() or b""
                assert value.startswith(b"in-"), f"unexpected input record {value!r}"
                producer.produce(
                    args.output,
                    key=msg.key(),
                    value=b"out-" + value[3:],
                    partition=msg.partition(),
                )
                producer.poll(0)
        except KafkaException as exc:
            give_up(exc.args[0], "produce")
        left = producer.flush(TIMEOUT)
        log("flushed", n=len(records), left=left)
        time.sleep(args.pause_ms / 1000)
        offsets = [TopicPartition(args.input, p, o) for p, o in sorted(positions.items())]
        metadata = consumer.consumer_group_metadata()
        retried(
            lambda o=offsets, m=metadata: producer.send_offsets_to_transaction(o, m, TIMEOUT),
            "send_offsets_to_transaction",
        )
        log("committing", offsets={str(p): o for p, o in positions.items()})
        retried(lambda: producer.commit_transaction(TIMEOUT), "commit_transaction")
        log("committed", offsets={str(p): o for p, o in positions.items()})
    consumer.close()
    producer.flush(TIMEOUT)
    log("closed")


def hang(args: argparse.Namespace, log: Log) -> None:
    producer = Producer(producer_config(args, log))
    init(producer, log)
    producer.begin_transaction()
    for i in range(args.count):
        producer.produce(args.topic, value=f"open-{i}".encode(), partition=args.partition)
    left = producer.flush(TIMEOUT)
    log("open", count=args.count, left=left)
    while True:  # until kill -9
        time.sleep(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["transform", "hang"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--txn-id", required=True)
    parser.add_argument("--txn-timeout-ms", type=int, default=30_000)
    parser.add_argument("--out", required=True)
    parser.add_argument("--debug", default="", help="librdkafka debug contexts, e.g. eos,protocol")
    parser.add_argument("--group", default="")
    parser.add_argument("--input", default="")
    parser.add_argument("--output", default="")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--pause-ms", type=int, default=100)
    parser.add_argument("--topic", default="")
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--count", type=int, default=10)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    with open(args.out, "a", encoding="utf-8") as out:
        log = Log(out)
        log("started", pid=os.getpid())
        if args.mode == "transform":
            transform(args, log)
        else:
            hang(args, log)


if __name__ == "__main__":
    main()
