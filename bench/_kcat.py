"""kcat as a second load generator: librdkafka driven from C, so no Python loop caps the rate.

``kcat -P -l FILE`` sends every line of FILE as one record. It is used only where it is on
PATH (``make test`` installs Debian's). Debian's kcat links librdkafka 2.0.2, which cannot parse
tansu's ApiVersions response ("Read underflow"), so against tansu it fails and says so.

The run is timed from kcat's start to its exit (connecting included, a few ms); what the broker
stored is read from the partition's high watermark before and after, so a record kcat failed to
deliver is not counted.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _clients import PRODUCER_BATCHING, Run, Window, Workload


def available() -> bool:
    """Whether a kcat binary is on PATH."""
    return shutil.which("kcat") is not None


def _high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-kcat", "log_level": 0})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        consumer.close()


def kcat_produce_run(load: Workload) -> Run:
    """Produce ``load.records`` lines of ``load.value_bytes`` through one kcat to partition 0."""
    settings = {**PRODUCER_BATCHING, "acks": load.acks}
    settings.pop("enable.idempotence")  # kcat's librdkafka 2.0 knows it, but it is the default
    config = [arg for key, value in settings.items() for arg in ("-X", f"{key}={value}")]
    with tempfile.TemporaryDirectory(prefix="bench-kcat-") as tmp:
        lines = Path(tmp) / "records"
        lines.write_bytes((b"x" * load.value_bytes + b"\n") * load.records)
        cmd = ["kcat", "-P", "-b", load.bootstrap, "-t", load.topic, "-p", "0", *config]
        before = _high_watermark(load.bootstrap, load.topic)
        window = Window(load.broker_pid)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [*cmd, "-l", str(lines)],
            capture_output=True,
            timeout=load.seconds + 60,
            check=False,
        )
        elapsed = time.perf_counter() - start
        broker_run = window.run(0, load.value_bytes)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace")
        if "ApiVersionRequest failed" in stderr:
            raise RuntimeError("kcat's librdkafka cannot parse this broker's ApiVersions")
        tail = stderr.strip().splitlines()[-1:]
        raise RuntimeError(f"kcat exited with {done.returncode}: {' '.join(tail)[:120]}")
    stored = _high_watermark(load.bootstrap, load.topic) - before
    kcat_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    return Run(stored, load.value_bytes, elapsed, kcat_cpu, broker_run.broker_cpu)
