"""One consumer-group member, run as its own process so that a test can ``kill -9`` it.

``python member.py --client confluent --bootstrap H:P --group G --topic T --out FILE``

The member subscribes to one topic and, for every record, writes ``rec`` to ``FILE`` (the record is
"processed"), then commits that record's next offset synchronously and writes ``commit`` — or
``commitfail`` when the commit did not succeed. Rebalance callbacks write ``assigned`` / ``revoked``
/ ``lost``; consumer errors write ``error``; SIGTERM makes it close the consumer (a clean leave) and
write ``closed``. Each line is one JSON object with ``t``, ``time.monotonic_ns()`` (one clock for
every process of the machine), so a test can order the events of all members. Every line is
flushed at once: what is in the file happened, even after a ``kill -9``.

Clients: ``confluent`` (librdkafka), ``kafka-python`` and ``aiokafka``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from typing import IO, Any

STOP = False


def on_sigterm(signum: int, frame: object) -> None:
    global STOP
    STOP = True


class Log:
    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def __call__(self, ev: str, **fields: Any) -> None:
        self.out.write(json.dumps({"t": time.monotonic_ns(), "ev": ev, **fields}) + "\n")
        self.out.flush()


def run_confluent(args: argparse.Namespace, log: Log) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "enable.auto.commit": False,
        "auto.offset.reset": args.reset,
        "session.timeout.ms": args.session_ms,
        "heartbeat.interval.ms": args.heartbeat_ms,
        "max.poll.interval.ms": args.max_poll_ms,
        "partition.assignment.strategy": args.strategy,
        "enable.partition.eof": False,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 2000,
        "reconnect.backoff.max.ms": 1000,
        "error_cb": lambda err: log("error", err=str(err), code=err.code()),
    }
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)

    def parts(partitions: list[TopicPartition]) -> list[int]:
        return sorted(tp.partition for tp in partitions)

    def assigned(c: Consumer, partitions: list[TopicPartition]) -> None:
        log("assigned", parts=parts(partitions), member=c.memberid())

    def revoked(c: Consumer, partitions: list[TopicPartition]) -> None:
        log("revoked", parts=parts(partitions))

    def lost(c: Consumer, partitions: list[TopicPartition]) -> None:
        log("lost", parts=parts(partitions))

    log("started")
    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
    while not STOP:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        err = msg.error()
        if err is not None:
            log("error", err=str(err), code=err.code())
            if err.code() == KafkaError._AUTO_OFFSET_RESET:
                break
            continue
        p, o = msg.partition(), msg.offset()
        log("rec", p=p, o=o)
        if args.delay_ms:
            time.sleep(args.delay_ms / 1000)
        try:
            result = consumer.commit(message=msg, asynchronous=False)
        except KafkaException as exc:
            log("commitfail", p=p, o=o + 1, err=str(exc))
            continue
        failed = [str(tp.error) for tp in result or [] if tp.error is not None]
        if failed:
            log("commitfail", p=p, o=o + 1, err="; ".join(failed))
        else:
            log("commit", p=p, o=o + 1)
    consumer.close()
    log("closed")


def run_kafka_python(args: argparse.Namespace, log: Log) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    assignors = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance_id or None,
        enable_auto_commit=False,
        auto_offset_reset=args.reset,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        max_poll_interval_ms=args.max_poll_ms,
        partition_assignment_strategy=[assignors[args.strategy]],
        fetch_max_wait_ms=100,
        reconnect_backoff_max_ms=1000,
        request_timeout_ms=max(30_000, args.session_ms + 5000),
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            log("revoked", parts=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            log("assigned", parts=sorted(tp.partition for tp in assigned))

    log("started")
    consumer.subscribe(topics=[args.topic], listener=Listener())
    while not STOP:
        try:
            batches = consumer.poll(timeout_ms=200)
        except KafkaError as exc:
            log("error", err=repr(exc), code=type(exc).__name__)
            if type(exc).__name__ == "NoOffsetForPartitionError":
                break
            time.sleep(0.2)
            continue
        for tp, records in batches.items():
            for record in records:
                log("rec", p=tp.partition, o=record.offset)
                if args.delay_ms:
                    time.sleep(args.delay_ms / 1000)
                offsets = {
                    TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(
                        record.offset + 1, "", -1
                    )
                }
                try:
                    consumer.commit(offsets)
                except KafkaError as exc:
                    log("commitfail", p=tp.partition, o=record.offset + 1, err=repr(exc))
                    break
                log("commit", p=tp.partition, o=record.offset + 1)
    consumer.close()
    log("closed")


async def run_aiokafka(args: argparse.Namespace, log: Log) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.errors import KafkaError

    assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            log("revoked", parts=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            log("assigned", parts=sorted(tp.partition for tp in assigned))

    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance_id or None,
        enable_auto_commit=False,
        auto_offset_reset=args.reset,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        max_poll_interval_ms=args.max_poll_ms,
        partition_assignment_strategy=(assignors[args.strategy],),
        fetch_max_wait_ms=100,
        retry_backoff_ms=100,
        request_timeout_ms=max(30_000, args.session_ms + 5000),
    )
    log("started")
    consumer.subscribe(topics=[args.topic], listener=Listener())
    await consumer.start()
    while not STOP:
        try:
            batches = await consumer.getmany(timeout_ms=200)
        except KafkaError as exc:
            log("error", err=repr(exc), code=type(exc).__name__)
            if type(exc).__name__ == "NoOffsetForPartitionError":
                break
            await asyncio.sleep(0.2)
            continue
        for tp, records in batches.items():
            for record in records:
                log("rec", p=tp.partition, o=record.offset)
                if args.delay_ms:
                    await asyncio.sleep(args.delay_ms / 1000)
                try:
                    await consumer.commit({tp: record.offset + 1})
                except KafkaError as exc:
                    log("commitfail", p=tp.partition, o=record.offset + 1, err=repr(exc))
                    break
                log("commit", p=tp.partition, o=record.offset + 1)
    await consumer.stop()
    log("closed")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=["confluent", "kafka-python", "aiokafka"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--strategy", default="range")
    parser.add_argument("--instance-id", default="")
    parser.add_argument("--reset", default="earliest")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--max-poll-ms", type=int, default=10_000)
    parser.add_argument("--delay-ms", type=int, default=0)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    with open(args.out, "a", encoding="utf-8") as out:
        log = Log(out)
        if args.client == "confluent":
            run_confluent(args, log)
        elif args.client == "kafka-python":
            run_kafka_python(args, log)
        else:
            asyncio.run(run_aiokafka(args, log))


if __name__ == "__main__":
    main()
