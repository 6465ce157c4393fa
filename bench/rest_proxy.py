"""The HTTP proxy's produce rate against a direct confluent-kafka producer, in the same run.

    python bench/rest_proxy.py [--seconds S] [--connections N] [--workers W] [--json PATH]

One Sluice broker; two 1-partition topics. Records of 1 KB (1,024 random bytes), measured two
ways, each for ``--seconds`` (8 by default) and bounded by that time plus a drain:

* **direct**: a confluent-kafka ``Producer`` (the proxy's own settings: ``linger.ms=2``) in a
  fresh process, ``produce()`` in a loop with ``poll(0)``, then ``flush()``; records/s counted
  up to the last delivery report.
* **proxy**: ``sluice rest-proxy start [--workers W]`` as its own process(es);
  ``--connections`` (4) client threads, each on one keep-alive HTTP connection, each request a
  v3 streaming produce body of 100 records one after another (``{"value": {"type": "BINARY",
  "data": base64}}``, 1,024 bytes each), the answer read whole and its 100 results checked to
  be ``error_code`` 200. The body is built once (the client's JSON encoding is not what is
  measured). records/s = records answered 200 / seconds.

The direct producer runs before and after the proxy, and the ratio is taken against their
mean, so that a change of the machine's load between the two shows rather than skews it.

The issue's target: the proxy ≥ 30 % of the direct producer. Both the proxy and the broker
share the machine's cores with the client threads; the proxy processes' CPU seconds (workers
included) are printed, and per record, which the machine's load moves much less than rates.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _harness import SLUICE, cpu_seconds, create_topic, free_port, in_child, running_broker

RECORD_BYTES = 1024
BATCH = 100


def direct(bootstrap: str, topic: str, seconds: float) -> dict[str, float]:
    """Records/s of a bare confluent-kafka producer (run in a child process)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2})
    value = os.urandom(RECORD_BYTES)
    delivered = 0
    last = 0.0

    def on_delivery(error: Any, message: Any) -> None:
        nonlocal delivered, last
        if error is None:
            delivered += 1
            last = time.perf_counter()

    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for _ in range(BATCH):
            while True:
                try:
                    producer.produce(topic, value, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.001)
        producer.poll(0)
    producer.flush(30)
    return {"records": delivered, "seconds": last - start, "rate": delivered / (last - start)}


def _body() -> bytes:
    data = base64.b64encode(os.urandom(RECORD_BYTES)).decode()
    record = json.dumps({"value": {"type": "BINARY", "data": data}})
    return "\n".join([record] * BATCH).encode()


def proxied(
    url: str, cluster_id: str, topic: str, seconds: float, connections: int
) -> dict[str, float]:
    """Records/s through the proxy's v3 streaming produce."""
    body = _body()
    path = f"/v3/clusters/{cluster_id}/topics/{topic}/records"
    host = url.removeprefix("http://")
    counts = [0] * connections
    failures: list[str] = []
    start = time.perf_counter()
    deadline = start + seconds

    def client(index: int) -> None:
        connection = http.client.HTTPConnection(host, timeout=60)
        try:
            while time.perf_counter() < deadline and not failures:
                connection.request("POST", path, body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                answer = response.read()
                if response.status != 200:
                    failures.append(f"HTTP {response.status}: {answer[:200]!r}")
                    return
                # the results are orjson's compact JSON: count the successes without parsing
                if answer.count(b'{"error_code":200,') != BATCH:
                    failures.append(f"unexpected results: {answer[:300]!r}")
                    return
                counts[index] += BATCH
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 120)
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(failures[0])
    return {"records": sum(counts), "seconds": elapsed, "rate": sum(counts) / elapsed}


def _family_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and of its child processes (the proxy's workers)."""
    total = cpu_seconds(pid)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                total += cpu_seconds(int(entry.name))
    return total


def _start_proxy(
    bootstrap: str, workdir: Path, workers: int
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (workdir / "rest-proxy.log").open("wb") as log:
        proc = subprocess.Popen(
            [
                str(SLUICE),
                "rest-proxy",
                "start",
                "--listen",
                f"127.0.0.1:{port}",
                "-b",
                bootstrap,
                "--log-level",
                "WARNING",
                "--workers",
                str(workers),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the proxy exited: " + (workdir / "rest-proxy.log").read_text())
        try:
            with urllib.request.urlopen(f"{url}/v3/clusters", timeout=5):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise TimeoutError("the proxy did not answer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1, help="the proxy's --workers")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    import tempfile

    with running_broker("sluice") as broker, tempfile.TemporaryDirectory() as tmp:
        create_topic(broker.bootstrap, "direct")
        create_topic(broker.bootstrap, "proxied")
        before = in_child(
            direct, broker.bootstrap, "direct", args.seconds, timeout=args.seconds + 120
        )
        proc, url = _start_proxy(broker.bootstrap, Path(tmp), args.workers)
        try:
            with urllib.request.urlopen(f"{url}/v3/clusters", timeout=10) as response:
                cluster_id = json.loads(response.read())["data"][0]["cluster_id"]
            proxied(url, cluster_id, "proxied", 1.0, args.connections)  # warm-up
            cpu_before = _family_cpu_seconds(proc.pid)
            proxy = proxied(url, cluster_id, "proxied", args.seconds, args.connections)
            proxy_cpu = _family_cpu_seconds(proc.pid) - cpu_before
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        after = in_child(
            direct, broker.bootstrap, "direct", args.seconds, timeout=args.seconds + 120
        )
    base = (before["rate"] + after["rate"]) / 2
    share = proxy["rate"] / base
    us_per_record = proxy_cpu / proxy["records"] * 1e6
    print(
        f"direct producer: {base:>10,.0f} records/s (mean of {before['rate']:,.0f} before "
        f"and {after['rate']:,.0f} after the proxy)"
    )
    print(
        f"REST proxy:      {proxy['rate']:>10,.0f} records/s ({proxy['records']:,.0f} in "
        f"{proxy['seconds']:.1f} s, {args.connections} connections, batches of {BATCH}, "
        f"{args.workers} worker(s), proxy CPU {proxy_cpu:.1f} s = {us_per_record:.1f} µs/record)"
    )
    print(f"proxy / direct:  {share:.0%} (target ≥ 30 %)")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "direct_before": before,
                    "direct_after": after,
                    "direct_rate": base,
                    "proxy": proxy,
                    "share": share,
                    "proxy_cpu_s": proxy_cpu,
                    "proxy_cpu_us_per_record": us_per_record,
                    "workers": args.workers,
                    "connections": args.connections,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
