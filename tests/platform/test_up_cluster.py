"""`sluice up` with a cluster: ``brokers:`` and ``zookeeper:`` read from the file (derived per
broker or given), and a real cluster — an embedded ZooKeeper and three brokers — restarted one
broker at a time under a running idempotent producer and a consumer group, with no producer
error and every acknowledged record consumed exactly once; ``sluice status`` shows each broker,
and one that stopped answering."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient

from sluice.connect.deploy import DeploymentError
from sluice.up import load
from sluice.up.spec import BrokerNode
from tests.conftest import free_port
from tests.platform.fixtures import SLUICE, Running
from tests.platform.scrape import scrape

pytestmark = pytest.mark.timeout(600)


def problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "sluice.yaml").write_text(textwrap.dedent(text))
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path / "sluice.yaml")
    return [f"{p.line}: {p.key}: {p.reason}" for p in caught.value.problems]


def test_brokers_n_derives_ids_listeners_data_dirs_and_metrics(tmp_path: Path) -> None:
    (tmp_path / "sluice.yaml").write_text(
        "broker:\n"
        "  brokers: 3\n"
        "  zookeeper: embedded\n"
        "  listen: 127.0.0.1:9192\n"
        "  metrics: 127.0.0.1:9400\n"
        "  data_dir: data\n"
        "  config: {min.insync.replicas: 2}\n"
        "topics: [{name: t, partitions: 3, replication_factor: 3}]\n"
    )
    deployment = load(tmp_path / "sluice.yaml")
    broker = deployment.broker
    assert broker.nodes == tuple(
        BrokerNode(
            i, f"127.0.0.1:{9191 + i}", Path("data") / f"broker-{i}", None, f"127.0.0.1:{9399 + i}"
        )
        for i in (1, 2, 3)
    )
    assert broker.bootstrap == "127.0.0.1:9192,127.0.0.1:9193,127.0.0.1:9194"
    assert broker.zookeeper_connect == "127.0.0.1:2181/sluice"
    assert broker.config == (("min.insync.replicas", "2"),)
    assert [(t.name, t.replication_factor) for t in deployment.topics] == [("t", 3)]


def test_brokers_may_be_given_one_by_one_against_an_existing_ensemble(tmp_path: Path) -> None:
    (tmp_path / "sluice.yaml").write_text(
        "broker:\n"
        "  zookeeper: 10.0.0.5:2181,10.0.0.6:2181/prod\n"
        "  brokers:\n"
        "    - {id: 7, rack: a}\n"
        "    - {id: 9, listen: 127.0.0.1:9300, data_dir: /srv/b9, rack: b}\n"
    )
    broker = load(tmp_path / "sluice.yaml").broker
    assert broker.nodes == (
        BrokerNode(7, "127.0.0.1:9092", Path(".sluice/data/broker-7"), "a"),
        BrokerNode(9, "127.0.0.1:9300", Path("/srv/b9"), "b"),
    )
    assert broker.zookeeper_connect == "10.0.0.5:2181,10.0.0.6:2181/prod"


def test_a_cluster_s_mistakes_are_named_at_their_lines(tmp_path: Path) -> None:
    assert problems(
        tmp_path,
        """\
        broker:
          brokers: 3
          zookeeper_listen: 127.0.0.1:2181
        """,
    ) == [
        "2: broker.brokers: a cluster needs zookeeper: (embedded, or HOST:PORT[/CHROOT] of an "
        "existing ensemble)",
        "3: broker.zookeeper_listen: a cluster needs zookeeper: (embedded, or "
        "HOST:PORT[/CHROOT] of an existing ensemble)",
    ]
    assert problems(
        tmp_path,
        """\
        broker:
          zookeeper: somewhere
          brokers: [{id: 1}, {id: 1, listen: 127.0.0.1:9300}, {id: x}]
          config: {broker.id: 4, listeners: "PLAINTEXT://:9092"}
        """,
    ) == [
        "2: broker.zookeeper: must be embedded or HOST:PORT[,HOST:PORT…][/CHROOT], not 'somewhere'",
        "3: broker.brokers[2].id: must be a whole number >= 0, not 'x'",
        "3: broker.brokers: two brokers with the same id: 1",
        "3: broker.brokers: two brokers with the same data_dir: .sluice/data/broker-1",
        "4: broker.config.broker.id: set for each broker by sluice up (brokers:, listen:, "
        "data_dir:)",
        "4: broker.config.listeners: set for each broker by sluice up (brokers:, listen:, "
        "data_dir:)",
    ]


def test_rebalance_on_add_is_a_cluster_s_and_a_boolean(tmp_path: Path) -> None:
    assert problems(tmp_path, "broker: {rebalance_on_add: true}\n") == [
        "1: broker.rebalance_on_add: a cluster needs zookeeper: (embedded, or "
        "HOST:PORT[/CHROOT] of an existing ensemble)"
    ]
    assert problems(
        tmp_path, "broker: {brokers: 3, zookeeper: embedded, rebalance_on_add: sometimes}\n"
    ) == ["1: broker.rebalance_on_add: must be true or false, not 'sometimes'"]
    (tmp_path / "sluice.yaml").write_text(
        "broker: {brokers: 3, zookeeper: embedded, rebalance_on_add: true}\n"
    )
    assert load(tmp_path / "sluice.yaml").broker.rebalance_on_add


def test_rolling_restart_needs_a_running_sluice_up(tmp_path: Path) -> None:
    (tmp_path / "sluice.yaml").write_text("broker: {brokers: 3, zookeeper: embedded}\n")
    refused = sluice_in(tmp_path, "up", "--rolling-restart", timeout=60)
    assert refused.returncode == 2, refused.stderr
    assert "no sluice up is running" in refused.stderr


# -- a real cluster ---------------------------------------------------------------------------


def write_cluster(folder: Path, ports: list[int], zookeeper: int, extra: str = "") -> None:
    """Three brokers on ``ports``, each serving metrics on a free port of its own."""
    brokers = "\n".join(
        f"    - {{id: {i}, listen: 127.0.0.1:{port}, metrics: 127.0.0.1:{free_port()}}}"
        for i, port in enumerate(ports, 1)
    )
    (folder / "sluice.yaml").write_text(
        "broker:\n"
        "  zookeeper: embedded\n"
        f"  zookeeper_listen: 127.0.0.1:{zookeeper}\n"
        "  brokers:\n"
        f"{brokers}\n"
        "  config:\n"
        "    min.insync.replicas: 2\n"
        "    offsets.topic.num.partitions: 3\n"
        "    transaction.state.log.num.partitions: 3\n"
        "    zookeeper.session.timeout.ms: 6000\n"
        f"{extra}"
        "topics:\n"
        "  - {name: orders, partitions: 3, replication_factor: 3}\n"
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Running]:
    write_cluster(tmp_path, [free_port() for _ in range(3)], free_port())
    run = Running(tmp_path)
    yield run
    run.stop()


class Load:
    """An idempotent acks=all producer and a consumer group member, each in a thread, until
    :meth:`stop`: what was acknowledged, what failed, what was consumed."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.acked: list[int] = []
        self.errors: list[str] = []
        self.consumed: list[int] = []
        self.fewest_brokers = 3
        """The fewest brokers a metadata answer listed while the load ran."""
        self.smallest_isr = 3
        """The smallest ISR of an ``orders`` partition a metadata answer showed."""
        self._stop = threading.Event()
        self._producing = threading.Thread(target=self._produce, name="producer")
        self._consuming = threading.Thread(target=self._consume, name="consumer")
        self._watching = threading.Thread(target=self._watch, name="watcher")

    def __enter__(self) -> Load:
        self._consuming.start()
        self._producing.start()
        self._watching.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._producing.join(60)
        self._consuming.join(60)
        self._watching.join(60)

    def _watch(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while not self._stop.wait(0.2):
            try:
                metadata = admin.list_topics("orders", timeout=2)
            except KafkaException:
                continue
            self.fewest_brokers = min(self.fewest_brokers, len(metadata.brokers))
            partitions = metadata.topics["orders"].partitions.values()
            if partitions:
                self.smallest_isr = min(self.smallest_isr, *(len(p.isrs) for p in partitions))

    def _produce(self) -> None:
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )

        def report(err: KafkaError | None, msg: object) -> None:
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acked.append(int(msg.value()))  # type: ignore[attr-defined]

        sent = 0
        while not self._stop.is_set() and sent < 200_000:  # bounded
            producer.produce("orders", str(sent).encode(), on_delivery=report)
            sent += 1
            producer.poll(0.005)
        left = producer.flush(60)
        assert left == 0, f"{left} records never acknowledged"

    def _consume(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "rolling",
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
            }
        )
        consumer.subscribe(["orders"])
        quiet_since = None
        try:
            while True:
                msg = consumer.poll(0.2)
                if msg is None:
                    if self._stop.is_set() and not self._producing.is_alive():
                        quiet_since = quiet_since or time.monotonic()
                        if time.monotonic() - quiet_since > 5:
                            return
                    continue
                quiet_since = None
                if msg.error() is None:
                    self.consumed.append(int(msg.value()))  # type: ignore[arg-type]
        finally:
            consumer.close()


def test_a_rolling_restart_under_load_loses_and_doubles_nothing(cluster: Running) -> None:
    """The brokers restart one at a time — on an edited ``config:`` and on
    ``--rolling-restart`` — each after the last is back in every ISR; the producer sees no
    error, the group consumes every acknowledged record once."""
    names = {"zookeeper", "broker-1", "broker-2", "broker-3"}
    cluster.wait_running(names, timeout=120)
    deadline = time.monotonic() + 120  # the topics are created once the brokers are up
    while "everything is running" not in cluster.output() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert "everything is running" in cluster.output(), cluster.output()
    bootstrap = cluster.state()["bootstrap"]
    assert len(bootstrap.split(",")) == 3
    before = {name: cluster.pid(name) for name in names}

    with Load(bootstrap) as load:
        deadline = time.monotonic() + 60
        while len(load.acked) < 2000 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert load.acked, f"nothing acknowledged before the restart: {load.errors}"
        text = (cluster.folder / "sluice.yaml").read_text()
        (cluster.folder / "sluice.yaml").write_text(
            text.replace("  config:\n", "  config:\n    log.retention.check.interval.ms: 60000\n")
        )
        again = sluice_in(cluster.folder, "up", "-f", "sluice.yaml", timeout=500)
        assert again.returncode == 0, again.stderr + cluster.output()
        acked_during = len(load.acked)
    after = {name: cluster.pid(name) for name in names}
    assert after["zookeeper"] == before["zookeeper"]
    assert all(after[n] != before[n] for n in names - {"zookeeper"}), (before, after)
    output = cluster.output()
    order = [output.index(f"broker-{i}: restarting (rolling)") for i in (1, 2, 3)]
    assert order == sorted(order), output

    # one broker at a time, each back in every ISR before the next went down
    assert load.fewest_brokers == 2, load.fewest_brokers
    assert load.smallest_isr == 2, load.smallest_isr
    assert load.errors == [], f"the producer saw errors during the rolling restart: {load.errors}"
    assert acked_during > 2000, "nothing was produced while the brokers restarted"
    assert sorted(load.acked) == list(range(len(load.acked))), "an acknowledged record is missing"
    missing = set(load.acked) - set(load.consumed)
    assert not missing, f"{len(missing)} acknowledged records never consumed"
    doubled = len(load.consumed) - len(set(load.consumed))
    assert doubled == 0, f"{doubled} records consumed twice"

    # on demand, with nothing changed
    on_demand = sluice_in(cluster.folder, "up", "--rolling-restart", timeout=500)
    assert on_demand.returncode == 0, on_demand.stderr + cluster.output()
    again_pids = {name: cluster.pid(name) for name in names}
    assert all(again_pids[n] != after[n] for n in names - {"zookeeper"}), (after, again_pids)

    # sluice status: each broker, its leaders, and a broker that stopped answering
    status = cluster_status(cluster)
    assert [n["id"] for n in status["brokers"]] == [1, 2, 3]
    assert sum(n["leaders"] for n in status["brokers"]) == status["partitions"]
    assert status["down"] == [] and status["under_replicated"] == [] and status["offline"] == []
    paused = cluster.pid("broker-3")
    assert paused is not None
    os.kill(paused, signal.SIGSTOP)  # its ZooKeeper session ends after 6 s
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = cluster_status(cluster)
            if status["down"] == [3] and status["under_replicated"]:
                break
            time.sleep(1)
        assert status["down"] == [3], status
        assert "orders-0" in status["under_replicated"], status
        # the brokers' metrics say the same, with Kafka's names
        scraped = [scrape(port) for port in metrics_ports(cluster, (1, 2))]
        assert (
            sum(m.get("kafka_controller_kafka_controller_active_controller_count") for m in scraped)
            == 1
        )
        assert sum(
            m.get("kafka_server_replica_manager_under_replicated_partitions") for m in scraped
        ) == sum(n["under_replicated"] for n in status["brokers"])
        # broker 3 restarted last, and came back as a follower of 1's and 2's partitions
        assert sum(m.get("kafka_server_replica_manager_isr_expands_total") for m in scraped) >= 1
        assert (
            sum(m.get("kafka_server_replica_manager_leader_count") for m in scraped)
            == status["partitions"]
        )
        assert all(
            m.get("kafka_controller_kafka_controller_offline_partitions_count") == 0
            for m in scraped
        )
        assert status["offline"] == [], status  # RF 3: every partition has a leader left
        led = sum(n["under_replicated"] for n in status["brokers"])
        assert led == len(status["under_replicated"]), status
    finally:
        os.kill(paused, signal.SIGCONT)

    # a broker added to the file starts and, with rebalance_on_add, gets its share of replicas
    text = (cluster.folder / "sluice.yaml").read_text()
    fourth = f"    - {{id: 4, listen: 127.0.0.1:{free_port()}, metrics: 127.0.0.1:{free_port()}}}\n"
    (cluster.folder / "sluice.yaml").write_text(
        text.replace("  config:\n", fourth + "  rebalance_on_add: true\n  config:\n", 1)
    )
    added = sluice_in(cluster.folder, "up", "-f", "sluice.yaml", timeout=500)
    assert added.returncode == 0, added.stderr + cluster.output()
    assert "broker-4: added to the cluster: rebalancing" in cluster.output()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = cluster_status(cluster)
        placed = replicas_of(bootstrap)
        if not status["reassigning"] and placed[4] and not status["under_replicated"]:
            break
        time.sleep(1)
    total = sum(placed.values())
    assert placed[4] >= total // 4, placed  # its share, within one of the others
    assert max(placed.values()) - min(placed.values()) <= 1, placed
    assert status["reassigning"] == [] and status["under_replicated"] == [], status


def replicas_of(bootstrap: str) -> Counter[int]:
    """How many replicas each broker holds, internal topics included."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    held: Counter[int] = Counter(dict.fromkeys(metadata.brokers, 0))
    for topic in metadata.topics.values():
        for partition in topic.partitions.values():
            held.update(partition.replicas)
    return held


def cluster_status(cluster: Running) -> dict[str, Any]:
    """The ``broker`` part of ``sluice status --json``, run in the folder of ``sluice up``."""
    done = sluice_in(cluster.folder, "status", "--json", timeout=120)
    assert done.returncode in (0, 1), done.stderr
    broker: dict[str, Any] = json.loads(done.stdout)["broker"]
    return broker


def metrics_ports(cluster: Running, ids: tuple[int, ...]) -> list[int]:
    """The metrics ports of brokers ``ids``, from their command lines in ``up.json``."""
    ports = []
    for ident in ids:
        [component] = [c for c in cluster.state()["components"] if c["name"] == f"broker-{ident}"]
        command = component["command"]
        ports.append(int(command[command.index("--metrics-listen") + 1].rpartition(":")[2]))
    return ports


def sluice_in(folder: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """``sluice ARGS`` run to completion in ``folder`` (where ``sluice up`` keeps its home)."""
    return subprocess.run(
        [SLUICE, *args], cwd=folder, capture_output=True, text=True, timeout=timeout, check=False
    )
