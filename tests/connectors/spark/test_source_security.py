"""The ``sluice`` Spark source on a secured cluster: one broker process for the module with a
single SASL_SSL listener (TLS from a ``trustme`` CA, SCRAM-SHA-512 users made by a PLAIN super
user) and the authorizer on. The source is given Kafka's client settings as Spark's Kafka source
takes them (``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.location`` as PEM) and reads with least-privilege ACLs; a wrong password,
a missing ACL and a bad setting each fail with a message that says what to fix and shows no
password. The ``spark-sink`` connector makes no client of its own: in a worker given the same
settings (a Kafka worker file) it lands a topic read over SASL_SSL, with its sink's ACLs only.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trustme
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclOperation,
    ResourceType,
)

from sluice.connectors.spark._kafka_read import KafkaReadError, read_range
from sluice.connectors.spark._offsets import OffsetRange
from sluice.connectors.spark._options import SourceOptions
from sluice.connectors.spark.source import register
from tests.conftest import CLIENT_TIMEOUT, stop_process
from tests.connect.worker_helpers import standalone_worker, worker_log
from tests.connectors.spark.sink_worker import deploy, rows, wait_until
from tests.security_fixtures import SCRAM, SaslSslBroker, sasl_ssl_broker

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(240)

USERS = {
    "spark-reader": "reader-pw-c91d",
    "spark-stranger": "stranger-pw-04aa",
    "spark-sink-worker": "sink-pw-6f20",
}


def source_options(broker: SaslSslBroker, user: str, password: str | None = None) -> dict[str, str]:
    """The source's options for ``user``: Kafka's (Java client's) security settings."""
    settings = {"bootstrap.servers": broker.bootstrap, **broker.kafka_settings(user, password)}
    return {f"kafka.{key}": value for key, value in settings.items()}


def filled_topic(
    broker: SaslSslBroker, records: int, partitions: int = 3, *, json_values: bool = False
) -> str:
    """A new topic holding ``records`` records ``k<i>``/``v<i>`` (or JSON values
    ``{"id": i}``), round-robin."""
    name = broker.topic("secure-src", partitions)
    producer = Producer(broker.super_user(**{"linger.ms": 5}))
    for i in range(records):
        value = json.dumps({"id": i}) if json_values else f"v{i}"
        producer.produce(name, value.encode(), f"k{i}".encode(), partition=i % partitions)
    assert producer.flush(CLIENT_TIMEOUT) == 0, "the super user's records were not delivered"
    return name


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslSslBroker]:
    yield from sasl_ssl_broker(tmp_path_factory.mktemp("spark-secure-broker"), USERS)


@pytest.fixture(scope="module")
def session(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


def _values(rows: list[Any]) -> list[tuple[int, int, str, str]]:
    return sorted(
        (r["partition"], r["offset"], bytes(r["key"]).decode(), bytes(r["value"]).decode())
        for r in rows
    )


def _expected(records: int, partitions: int = 3) -> list[tuple[int, int, str, str]]:
    return sorted((i % partitions, i // partitions, f"k{i}", f"v{i}") for i in range(records))


def test_reads_over_sasl_ssl_with_least_privilege_acls(
    session: SparkSession, secured: SaslSslBroker, tmp_path: Path
) -> None:
    topic = filled_topic(secured, 60)
    # Read on the topic only: the consumers carry a group id (librdkafka wants one) but never
    # join the group nor commit, so the source needs no ACL on it
    secured.grant("spark-reader", (ResourceType.TOPIC, topic, AclOperation.READ))
    options = source_options(secured, "spark-reader")

    df = session.read.format("sluice").options(**options).option("subscribe", topic).load()
    assert _values(df.collect()) == _expected(60)

    query = (
        session.readStream.format("sluice")
        .options(**options)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 25)
        .load()
        .writeStream.format("memory")
        .queryName(f"secure_{uuid.uuid4().hex[:8]}")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "the AvailableNow query did not finish"
        assert query.exception() is None, query.exception()
        table = query.name
        assert _values(session.sql(f"SELECT * FROM {table}").collect()) == _expected(60)
        progress = "".join(str(p) for p in query.recentProgress)
        assert USERS["spark-reader"] not in progress, "the password shows in the progress"
    finally:
        query.stop()

    shown = df._jdf.queryExecution().toString()  # the plans, as explain(True) prints them
    assert USERS["spark-reader"] not in shown, "the password shows in the DataFrame's plan"


def test_a_wrong_password_fails_at_once_and_says_so(
    session: SparkSession, secured: SaslSslBroker
) -> None:
    topic = filled_topic(secured, 3)
    wrong = "not-the-password-77f"
    options = source_options(secured, "spark-reader", password=wrong)
    df = session.read.format("sluice").options(**options).option("subscribe", topic).load()
    started = time.monotonic()
    with pytest.raises(Exception) as info:  # Spark wraps the Python error
        df.collect()
    elapsed = time.monotonic() - started
    message = str(info.value)
    assert "Authentication failed" in message, message[-3000:]
    assert "kafka.sasl.jaas.config" in message, message[-3000:]
    assert wrong not in message, "the password shows in the error"
    assert elapsed < 20, f"took {elapsed:.1f} s: the source waited for its timeout"


def test_a_task_with_a_wrong_password_fails_at_once(secured: SaslSslBroker) -> None:
    """On an executor (a password changed between planning and reading): no waiting for
    ``kafkaConsumer.pollTimeoutMs``."""
    topic = filled_topic(secured, 3)
    wrong = source_options(secured, "spark-reader", password="wrong-pw-31")
    options = {**wrong, "subscribe": topic}
    config = SourceOptions.parse(options, batch=True).consumer_config()
    started = time.monotonic()
    with pytest.raises(KafkaReadError, match="Authentication failed") as info:
        list(
            read_range(
                config,
                OffsetRange(topic, 0, 0, 1),
                include_headers=False,
                rows_per_batch=10,
                poll_timeout_s=60,
            )
        )
    assert time.monotonic() - started < 15, "the task waited for its poll timeout"
    assert "kafka.sasl.jaas.config" in str(info.value) and "wrong-pw-31" not in str(info.value)


def test_a_principal_without_read_on_the_topic_is_told_so(
    session: SparkSession, secured: SaslSslBroker
) -> None:
    topic = filled_topic(secured, 3)
    options = source_options(secured, "spark-stranger")
    df = session.read.format("sluice").options(**options).option("subscribe", topic).load()
    with pytest.raises(Exception) as info:  # Spark wraps the Python error
        df.collect()
    message = str(info.value)
    assert f"{topic} do not exist" in message and "grant" in message, message[-3000:]


def test_a_bad_setting_fails_load_naming_the_option(session: SparkSession, tmp_path: Path) -> None:
    jaas = f'{SCRAM} required username="u" password="secret-in-jaas-9d";'
    options = {
        "kafka.bootstrap.servers": "127.0.0.1:1",
        "subscribe": "t",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.jaas.config": jaas,
        "kafka.ssl.truststore.location": str(tmp_path / "missing.pem"),
    }
    with pytest.raises(Exception) as info:  # an AnalysisException
        session.read.format("sluice").options(**options).load()
    message = str(info.value)
    assert "option 'kafka.ssl.truststore.location': cannot read" in message, message[-2000:]
    assert "secret-in-jaas-9d" not in message


def _parse(tmp_path: Path, **settings: str) -> SourceOptions:
    base = {"kafka.bootstrap.servers": "b:9093", "subscribe": "t"}
    return SourceOptions.parse({**base, **{f"kafka.{k}": v for k, v in settings.items()}})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"sasl.jaas.config": f'{SCRAM} required username="u";'},
            "option 'kafka.sasl.jaas.config': ScramLoginModule needs password",
        ),
        (
            {"sasl.jaas.config": f'{SCRAM} required username="u" password="pw-0a9;'},
            "option 'kafka.sasl.jaas.config': the quote at character",
        ),
        (
            {"ssl.truststore.type": "JKS", "ssl.truststore.location": "/x.jks"},
            "option 'kafka.ssl.truststore.type': JKS: only PEM files are supported",
        ),
        ({"ssl.truststore.location": "NOT_PEM"}, "option 'kafka.ssl.truststore.location': "),
        ({"ssl.truststore.password": "pw-0a9"}, "option 'kafka.ssl.truststore.password': PEM"),
        ({"ssl.enabled.protocols": "TLSv1.3"}, "option 'kafka.ssl.enabled.protocols': a Java"),
    ],
)
def test_bad_security_settings_name_the_option(
    tmp_path: Path, settings: dict[str, str], message: str
) -> None:
    if settings.get("ssl.truststore.location") == "NOT_PEM":
        store = tmp_path / "store.jks"
        store.write_bytes(b"\xfe\xed\xfe\xed" + bytes(200))
        settings = {"ssl.truststore.location": str(store)}
    with pytest.raises(ValueError, match=r"^option 'kafka\.") as info:
        _parse(tmp_path, **settings)
    assert str(info.value).startswith(message), str(info.value)
    assert "pw-0a9" not in str(info.value), "the password shows in the error"


def test_java_settings_are_translated_for_the_consumers_and_the_admin(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(ca)
    options = _parse(
        tmp_path,
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": f'{SCRAM} required username="app" password="pw-3e1";',
            "ssl.truststore.location": str(ca),
            "ssl.endpoint.identification.algorithm": "",
            "fetch.max.bytes": "1000000",
        },
    )
    security = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "app",
        "sasl.password": "pw-3e1",
        "ssl.ca.location": str(ca),
        "ssl.endpoint.identification.algorithm": "none",
    }
    consumer = options.consumer_config()
    assert {k: consumer[k] for k in security} == security
    assert consumer["fetch.max.bytes"] == "1000000"
    assert not any(k.startswith(("sasl.jaas", "ssl.truststore")) for k in consumer)
    admin = options.admin_config()
    assert {k: admin[k] for k in security} == security
    assert "fetch.max.bytes" not in admin
    assert "pw-3e1" not in repr(options) and "[hidden]" in repr(options)
    oauth = _parse(
        tmp_path,
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
            'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="app";',
        },
    )
    assert oauth.admin_config()["enable.sasl.oauthbearer.unsecure.jwt"] == "true"
    assert oauth.admin_config()["sasl.oauthbearer.config"] == "principal=app"


def test_spark_sink_in_a_secured_worker_lands_a_topic(
    secured: SaslSslBroker, tmp_path: Path
) -> None:
    topic = filled_topic(secured, 50, json_values=True)
    secured.grant(
        "spark-sink-worker",
        (ResourceType.TOPIC, topic, AclOperation.READ),
        (ResourceType.GROUP, "connect-land-events", AclOperation.READ),
    )
    worker_file = tmp_path / "worker.properties"
    # a Kafka worker file: the settings the source takes with a `kafka.` prefix
    settings = secured.kafka_settings("spark-sink-worker")
    worker_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    config = deploy(tmp_path, topic, register_table="false", flush_size="10")
    worker = standalone_worker(
        config,
        secured.bootstrap,
        tmp_path,
        "--worker-config",
        str(worker_file),
        settings={"value.converter": "json", "value.converter.schemas.enable": "false"},
    )
    table = tmp_path / "warehouse" / "events"
    try:
        wait_until(lambda: len(rows(table)) >= 50, "every record", tmp_path / "worker.log")
    finally:
        stop_process(worker)
    assert sorted(row["id"] for row in rows(table)) == list(range(50))
    assert USERS["spark-sink-worker"] not in worker_log(tmp_path), "the password is in the log"
