"""Interactive queries across instances: three processes of one application, each with an
``application_server`` and the built-in HTTP API; a client that knows one address finds every
key's instance through the metadata and reads the key there, and reads a standby replica
(``stale=true``) when the active instance is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from tests.conftest import BrokerProcess, create_topic, free_port, stop_process
from tests.streams.runtime.fixtures import produce

WORKER = Path(__file__).with_name("query_worker.py")
WORDS = 40
DEADLINE_S = 60.0


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)


def _wait(check: Any, what: str) -> Any:
    deadline = time.monotonic() + DEADLINE_S
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, KeyError, ValueError) as error:  # an instance still starting
            last = error
        if last is True or (last and last is not None and not isinstance(last, Exception)):
            return last
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {DEADLINE_S} s (last: {last!r})")


def _quote(key: str) -> str:
    return urllib.parse.quote(key, safe="")


def test_keys_are_found_on_their_instance_and_on_a_standby_when_it_is_killed(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    words = create_topic(bootstrap, 6)
    counts = {f"w{i}": i % 4 + 1 for i in range(WORDS)}
    produce(
        bootstrap,
        words,
        [(word, 1, 1_000 + n) for word, count in counts.items() for n in range(count)],
    )
    app_id = f"iq-{uuid.uuid4().hex[:8]}"
    ports = [free_port() for _ in range(3)]
    hosts = [f"127.0.0.1:{port}" for port in ports]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    workers: list[subprocess.Popen[bytes]] = []
    try:
        for n, port in enumerate(ports):
            with open(tmp_path / f"worker{n}.log", "ab") as log:
                args = [bootstrap, app_id, str(tmp_path / f"state{n}"), words, str(port)]
                workers.append(
                    subprocess.Popen(
                        [sys.executable, str(WORKER), *args],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                    )
                )

        def three_instances() -> Any:
            # every instance's view: each learns the assignment from its own SyncGroup answer
            views = [_get(f"http://{host}/metadata") for host in hosts]
            return (
                all(
                    status == 200
                    and sorted(m["host"] for m in body) == sorted(hosts)
                    and {p for m in body for _, p in m["partitions"]} == set(range(6))
                    for status, body in views
                )
                and views[0][1]
            )

        metadata = _wait(three_instances, "three instances sharing the partitions")
        assert all("counts" in m["stores"] and "counts" in m["standby_stores"] for m in metadata)

        def where(word: str) -> dict[str, Any]:
            # any instance answers for the whole application
            status, body = _get(f"http://{hosts[2]}/metadata/counts/keys/{_quote(word)}")
            assert status == 200, body
            return body  # type: ignore[no-any-return]

        located = {word: where(word) for word in counts}
        for word, expected in counts.items():
            active = located[word]["active"]
            assert active in hosts and located[word]["standbys"] != [active]

            def counted(word: str = word, active: str = active, expected: int = expected) -> bool:
                status, body = _get(f"http://{active}/stores/counts/keys/{_quote(word)}")
                return status == 200 and body["value"] == expected

            _wait(counted, f"{word} counted on {active}")
            # and not on an instance that neither runs nor keeps a standby of its task
            others = set(hosts) - {active, *located[word]["standbys"]}
            for other in others:
                status, _ = _get(f"http://{other}/stores/counts/keys/{_quote(word)}?stale=true")
                assert status == 404, (word, other)
        windows = _get(f"http://{located['w3']['active']}/stores/windowed/keys/w3/windows")
        assert windows == (200, [[0, counts["w3"]]])

        # kill -9 the instance that runs w1's task; its standby still answers with stale reads
        victim = hosts.index(located["w1"]["active"])
        standby = located["w1"]["standbys"][0]
        workers[victim].send_signal(signal.SIGKILL)
        workers[victim].wait(10)
        survivors_words = [w for w in counts if located[w]["active"] == hosts[victim]]
        assert survivors_words
        for word in survivors_words:
            keeper = located[word]["standbys"][0]

            def from_standby(word: str = word, keeper: str = keeper) -> bool:
                status, body = _get(f"http://{keeper}/stores/counts/keys/{_quote(word)}?stale=true")
                return status == 200 and body["value"] == counts[word]

            _wait(from_standby, f"{word} read from the standby on {keeper}")
        status, body = _get(f"http://{standby}/stores/counts/keys/w1?stale=true&max_lag=0")
        assert (status, body["value"]) == (200, counts["w1"]), body
        status, body = _get(f"http://{standby}/stores/nope/keys/w1")
        assert status == 404 and "nope" in body["message"]
        status, body = _get(f"http://{standby}/stores/counts/keys/w1?max_lag=x")
        assert status == 400 and body["error_code"] == 400
    finally:
        for worker in workers:
            stop_process(worker)
