"""A cluster whose brokers replicate over a SASL_SSL inter-broker listener while clients use a
PLAINTEXT one (``inter.broker.listener.name``; issue 22): real broker processes on a real
ZooKeeper, certificates made here with ``trustme``.

- Each broker registers every listener's endpoint, and Metadata asked on a listener lists
  every broker at its endpoint on that listener (a broker without the listener left out).
- With acks=all, min.insync.replicas=2, a producer keeps writing while the partition's leader
  is killed (kill -9); nothing acknowledged is lost, read back on the client listener.
- A broker whose own inter-broker password is wrong cannot replicate: it stays out of the ISR
  and its log says that the authentication failed, as whom, with which mechanism, on which
  listener.
"""

from __future__ import annotations

import base64
import http.server
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import jwt
import pytest
import trustme
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.cluster.brokers import BrokerCluster
from tests.cluster.conftest import CLUSTER_CONFIG
from tests.conftest import free_port

pytestmark = pytest.mark.timeout(300)

TIMEOUT = 30.0
SECRET = "broker-secret"


def jaas(password: str) -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="broker" password="{password}" user_broker="{SECRET}";'
    )


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("certs")
    authority = trustme.CA()
    server, ca = root / "broker.pem", root / "ca.pem"
    authority.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        server
    )
    authority.cert_pem.write_to_path(ca)
    return server, ca


def secure_cluster(
    root: Path,
    zk_connect: str,
    certificates: tuple[Path, Path],
    size: int = 3,
    passwords: dict[int, str] | None = None,
    extra_listener_on: int | None = None,
    oauthbearer: dict[str, str] | None = None,
) -> tuple[BrokerCluster, dict[int, int]]:
    """A cluster (not started) whose CLIENT listener (PLAINTEXT) is each broker's bootstrap
    port and whose BROKER listener (SASL_SSL, PLAIN; with ``oauthbearer``, OAUTHBEARER and
    those settings) carries replication; the BROKER ports."""
    server, ca = certificates
    mechanism = "PLAIN" if oauthbearer is None else "OAUTHBEARER"
    config = {
        **CLUSTER_CONFIG,
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_SSL,EXTRA:PLAINTEXT",
        "inter.broker.listener.name": "BROKER",
        "sasl.mechanism.inter.broker.protocol": mechanism,
        "listener.name.broker.sasl.enabled.mechanisms": mechanism,
        "ssl.keystore.location": str(server),
        "ssl.truststore.location": str(ca),
        "min.insync.replicas": "2",
        "replica.lag.time.max.ms": "6000",
        **(oauthbearer or {}),
    }
    cluster = BrokerCluster(root, zk_connect, size, config)
    broker_ports = {}
    for i in cluster.ids:
        process = cluster.broker(i)
        broker_ports[i] = free_port()
        listeners = f"CLIENT://127.0.0.1:{process.port},BROKER://127.0.0.1:{broker_ports[i]}"
        if i == extra_listener_on:
            listeners += f",EXTRA://127.0.0.1:{free_port()}"
        process.config["listeners"] = listeners
        if oauthbearer is None:
            process.config["listener.name.broker.plain.sasl.jaas.config"] = jaas(
                (passwords or {}).get(i, SECRET)
            )
    return cluster, broker_ports


def partition_state(cluster: BrokerCluster, topic: str, via: int) -> tuple[int, list[int]]:
    admin = AdminClient({"bootstrap.servers": cluster.broker(via).bootstrap})
    partition = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return partition.leader, sorted(partition.isrs)


def create_topic(cluster: BrokerCluster, name: str, rf: int, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, 1, rf, config=config)], operation_timeout=30, request_timeout=40
    )
    futures[name].result(timeout=45)


def sasl_ssl(ca: Path) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "broker",
        "sasl.password": SECRET,
        "ssl.ca.location": str(ca),
    }


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: Any, certificates: tuple[Path, Path]
) -> Iterator[tuple[BrokerCluster, dict[int, int]]]:
    chroot = f"{zookeeper.hosts}/sluice-secure-{uuid.uuid4().hex[:12]}"
    built, ports = secure_cluster(
        tmp_path_factory.mktemp("secure-cluster"), chroot, certificates, extra_listener_on=1
    )
    with built:
        built.start_all()
        yield built, ports


def test_metadata_on_each_listener_advertises_that_listeners_endpoints(
    cluster: tuple[BrokerCluster, dict[int, int]], certificates: tuple[Path, Path]
) -> None:
    brokers, broker_ports = cluster
    client_ports = {i: brokers.broker(i).port for i in brokers.ids}
    brokers.wait_until(
        lambda: sorted(brokers.metadata_brokers(1)) == [1, 2, 3], "broker 1 lists the three"
    )
    plain = AdminClient({"bootstrap.servers": brokers.broker(2).bootstrap}).list_topics(timeout=10)
    assert {b.id: b.port for b in plain.brokers.values()} == client_ports
    secure = AdminClient(
        {"bootstrap.servers": f"127.0.0.1:{broker_ports[3]}", **sasl_ssl(certificates[1])}
    ).list_topics(timeout=10)
    assert {b.id: b.port for b in secure.brokers.values()} == broker_ports
    registration = brokers.store().live_brokers()[1].registration
    assert [e.listener for e in registration.endpoints] == ["CLIENT", "BROKER", "EXTRA"]
    assert registration.security_protocols == {
        "CLIENT": "PLAINTEXT",
        "BROKER": "SASL_SSL",
        "EXTRA": "PLAINTEXT",
    }
    extra = registration.endpoint("EXTRA")
    assert extra is not None
    only = AdminClient({"bootstrap.servers": f"127.0.0.1:{extra.port}"}).list_topics(timeout=10)
    assert {b.id: b.port for b in only.brokers.values()} == {1: extra.port}, (
        "brokers without the EXTRA listener are left out"
    )


def test_acks_all_survives_a_leader_kill_with_replication_on_sasl_ssl(
    cluster: tuple[BrokerCluster, dict[int, int]],
) -> None:
    brokers, _ = cluster
    topic = "secured"
    create_topic(brokers, topic, 3)
    brokers.wait_until(
        lambda: partition_state(brokers, topic, 1)[1] == [1, 2, 3],
        "the three replicate over SASL_SSL (a full ISR)",
        timeout=TIMEOUT,
    )
    acked: list[int] = []
    failed: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": brokers.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
        }
    )

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked.append(int(msg.value()))
        else:
            failed.append(str(err))

    stop = threading.Event()

    def produce() -> None:
        n = 0
        while not stop.is_set():
            producer.produce(topic, str(n).encode(), partition=0, on_delivery=delivered)
            producer.poll(0)
            n += 1
            time.sleep(0.002)
        producer.flush(60)

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        brokers.wait_until(lambda: len(acked) >= 300, "300 acknowledged", timeout=TIMEOUT)
        leader = partition_state(brokers, topic, 1)[0]
        brokers.kill(leader)
        other = next(i for i in brokers.ids if i != leader)
        brokers.wait_until(
            lambda: partition_state(brokers, topic, other)[0] not in (-1, leader),
            "a new leader",
            timeout=TIMEOUT,
        )
        before = len(acked)
        brokers.wait_until(
            lambda: len(acked) >= before + 300, "300 more acknowledged", timeout=TIMEOUT
        )
    finally:
        stop.set()
        writer.join(90)
    assert not writer.is_alive(), "the producer did not flush"
    assert acked, "nothing was acknowledged"
    consumer = Consumer(
        {
            "bootstrap.servers": brokers.broker(other).bootstrap,
            "group.id": "secured-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    read: set[int] = set()
    deadline = time.monotonic() + TIMEOUT
    try:
        while not set(acked) <= read and time.monotonic() < deadline:
            for msg in consumer.consume(500, 1.0):
                if msg.error() is None:
                    read.add(int(msg.value()))
    finally:
        consumer.close()
    lost = sorted(set(acked) - read)
    assert not lost, f"{len(lost)} acknowledged records lost (first {lost[:10]}); {failed[:3]}"
    brokers.start(leader)  # the module's cluster whole again


def test_a_broker_with_wrong_inter_broker_credentials_cannot_replicate(
    tmp_path: Path, zk_connect: str, certificates: tuple[Path, Path]
) -> None:
    built, _ = secure_cluster(tmp_path, zk_connect, certificates, 2, passwords={2: "wrong"})
    with built:
        built.start_all()
        create_topic(built, "guarded", 2)
        built.wait_until(
            lambda: partition_state(built, "guarded", 1)[0] in (1, 2), "a leader", timeout=TIMEOUT
        )
        leader, _ = partition_state(built, "guarded", 1)
        if leader == 2:  # broker 2 must follow: hand the leadership to broker 1
            built.stop(2)
            built.wait_until(
                lambda: partition_state(built, "guarded", 1)[0] == 1, "1 leads", timeout=TIMEOUT
            )
            built.start(2)
        expected = (
            "SASL authentication failed as inter-broker user 'broker' with PLAIN on listener BROKER"
        )
        built.wait_until(
            lambda: expected in built.broker(2).log_text(),
            "broker 2 logs its refused authentication",
            timeout=TIMEOUT,
        )
        assert "Invalid username or password" in built.broker(2).log_text()
        built.wait_until(
            lambda: partition_state(built, "guarded", 1)[1] == [1],
            "the leader drops broker 2 from the ISR",
            timeout=TIMEOUT,
        )


class _IdentityProvider(http.server.BaseHTTPRequestHandler):
    """An OAuth token endpoint: client ``broker``/``idp-secret`` gets an RS256 token (issuer
    ``test-idp``, audience ``sluice``, 10 s) signed by the key whose JWKS the brokers check."""

    key: ClassVar[Any] = None
    asked: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        expected = "Basic " + base64.b64encode(b"broker:idp-secret").decode()
        if self.headers["Authorization"] != expected:
            self.send_response(401)
            self.end_headers()
            return
        self.asked.append(self.client_address[0])
        now = int(time.time())
        claims = {"sub": "broker", "iss": "test-idp", "aud": "sluice", "iat": now, "exp": now + 10}
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "idp"})
        body = json.dumps({"access_token": token, "token_type": "Bearer", "expires_in": 10})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_brokers_replicate_logging_in_with_oauthbearer_tokens_from_an_endpoint(
    tmp_path: Path, zk_connect: str, certificates: tuple[Path, Path]
) -> None:
    """KIP-768 between brokers: each gets its token from the identity provider (client
    credentials) and the others check its signature against the provider's JWKS; tokens live
    10 s, so the brokers fetch fresh ones and re-authenticate with them (KIP-368) while
    replicating."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**public, "kid": "idp", "alg": "RS256"}]}))
    _IdentityProvider.key = key
    idp = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _IdentityProvider)
    serving = threading.Thread(target=idp.serve_forever, daemon=True)
    serving.start()
    prefix = "listener.name.broker.oauthbearer."
    oauthbearer = {
        prefix + "sasl.jaas.config": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'clientId="broker" clientSecret="idp-secret";'
        ),
        prefix + "sasl.login.callback.handler.class": (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
        ),
        prefix + "sasl.oauthbearer.token.endpoint.url": (
            f"http://127.0.0.1:{idp.server_address[1]}/token"
        ),
        prefix + "sasl.oauthbearer.jwks.endpoint.url": f"file://{jwks}",
        prefix + "sasl.oauthbearer.expected.issuer": "test-idp",
        prefix + "sasl.oauthbearer.expected.audience": "sluice",
    }
    built, _ = secure_cluster(tmp_path, zk_connect, certificates, 2, oauthbearer=oauthbearer)
    try:
        with built:
            built.start_all()
            create_topic(built, "tokens", 2)
            built.wait_until(
                lambda: partition_state(built, "tokens", 1)[1] == [1, 2],
                "both replicate over OAUTHBEARER (a full ISR)",
                timeout=TIMEOUT,
            )
            producer = Producer({"bootstrap.servers": built.bootstrap, "acks": "all"})
            for n in range(100):
                producer.produce("tokens", str(n).encode(), partition=0)
            assert producer.flush(TIMEOUT) == 0, "acks=all records over an OAUTHBEARER ISR"
            built.wait_until(
                lambda: len(_IdentityProvider.asked) >= 4,
                "fresh tokens asked for as the first ones age",
                timeout=TIMEOUT,
            )
            producer.produce("tokens", b"after", partition=0)
            assert producer.flush(TIMEOUT) == 0, "acks=all after the brokers re-authenticated"
            assert partition_state(built, "tokens", 2)[1] == [1, 2]
    finally:
        idp.shutdown()
        idp.server_close()
        serving.join(5)
