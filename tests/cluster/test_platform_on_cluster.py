"""What sits on the broker works against a cluster unchanged: the CLI (topics, produce, consume
in a group) with a bootstrap list of three brokers, and a Streams application with exactly-once
(its consumer group, transactions and internal topics on coordinators of other brokers)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from sluice.dsl import App
from tests.cluster.brokers import BrokerCluster
from tests.cluster.test_cluster_basics import leaders
from tests.streams.runtime.fixtures import produce, read

SLUICE = str(Path(sys.executable).with_name("sluice"))


def sluice(cluster: BrokerCluster, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [SLUICE, *args, "-b", cluster.bootstrap],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, f"sluice {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return done.stdout


def test_the_cli_on_three_brokers(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    sluice(cluster, "topics", "create", "cli-events", "-p", "3", "-r", "3")
    assert all(len(replicas) == 3 for _, replicas, _ in leaders(cluster, "cli-events", 2).values())
    lines = "".join(json.dumps({"n": n}) + "\n" for n in range(30))
    sluice(cluster, "produce", "cli-events", stdin=lines)
    out = sluice(
        cluster, "consume", "cli-events", "--group", "cli-readers", "--from-beginning", "-n", "30"
    )
    assert sorted(json.loads(line)["n"] for line in out.splitlines()) == list(range(30))
    described = sluice(cluster, "groups", "describe", "cli-readers")
    assert "cli-events" in described, described


def test_an_exactly_once_streams_app_on_three_brokers(
    shared_cluster: BrokerCluster, tmp_path: Path
) -> None:
    cluster = shared_cluster
    bootstrap = cluster.bootstrap
    suffix = uuid.uuid4().hex[:8]
    lines, out = f"lines-{suffix}", f"counts-{suffix}"
    sluice(cluster, "topics", "create", lines, out, "-p", "2", "-r", "3")
    app = App(
        f"wordcount-{suffix}",
        bootstrap,
        state_dir=tmp_path,
        commit_interval_ms=200,
        processing_guarantee="exactly_once_v2",
        replication_factor=3,
    )
    (
        app.stream(lines)
        .flat_map_values(str.split)
        .group_by(lambda key, word: word)
        .count(name="counts")
        .to_stream()
        .to(out)
    )
    produce(bootstrap, lines, [(f"l{i}", "a b a" if i % 2 else "c", i) for i in range(10)])
    app.start()
    try:
        wanted = {"a": 10, "b": 5, "c": 5}
        final = read(  # counts are emitted at each commit: wait for the final ones
            bootstrap,
            out,
            until=lambda rs: {key: value for key, value, _ in rs} == wanted,
            committed_only=True,
        )
        latest = {key: value for key, value, _ in final}
        assert latest == wanted, latest
    finally:
        app.close()
