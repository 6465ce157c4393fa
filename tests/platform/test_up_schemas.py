"""`sluice up` with `schema_registry:` and `rest_proxy:`: both run as children on the file's
broker, a topic's declared schema is registered at start (an incompatible one refused with the
registry's reasons), the registry's URL reaches the other processes, and a record produced
through the proxy with an Avro value reads back by schema id, and the broker, told the
registry's URL, refuses a record without a schema on a topic that validates them."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.connect.deploy import DeploymentError
from sluice.up import load
from tests.conftest import free_port
from tests.platform.fixtures import SLUICE, Running

pytestmark = pytest.mark.timeout(300)

SCHEMA = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "int"}, {"name": "amount", "type": "double"}],
}


def _post(url: str, body: Any, content_type: str) -> Any:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": content_type}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_the_registry_and_the_proxy_run_beside_the_broker(tmp_path: Path) -> None:
    broker, registry, proxy = free_port(), free_port(), free_port()
    (tmp_path / "show.py").write_text(
        "import os, pathlib\n"
        "pathlib.Path('registry.txt').write_text(os.environ['SLUICE_SCHEMA_REGISTRY_URL'])\n"
    )
    (tmp_path / "order.avsc").write_text(json.dumps(SCHEMA))
    (tmp_path / "sluice.yaml").write_text(
        textwrap.dedent(
            f"""\
            broker: {{listen: "127.0.0.1:{broker}"}}
            topics:
              - name: orders
                value_schema: order.avsc
                config: {{confluent.value.schema.validation: "true"}}
            schema_registry: {{listen: "127.0.0.1:{registry}"}}
            rest_proxy: {{listen: "127.0.0.1:{proxy}"}}
            processes: [{{name: show, app: show.py}}]
            """
        )
    )
    deployment = load(tmp_path / "sluice.yaml")
    assert deployment.schema_registry is not None and deployment.rest_proxy is not None
    assert deployment.schema_registry.topic == "_schemas"
    run = Running(tmp_path)
    try:
        run.wait_component("show-0", {"state": "completed"}, timeout=120)
        registry_url = f"http://127.0.0.1:{registry}"
        assert (tmp_path / "registry.txt").read_text() == registry_url
        client = SchemaRegistryClient({"url": registry_url})
        # the file's schema was registered at start: registering it again finds it
        latest = client.get_latest_version("orders-value")
        schema_id = client.register_schema("orders-value", Schema(json.dumps(SCHEMA), "AVRO"))
        assert (latest.version, latest.schema_id) == (1, schema_id)
        with urllib.request.urlopen(f"http://127.0.0.1:{proxy}/v3/clusters", timeout=30) as r:
            [cluster] = json.loads(r.read())["data"]
        produced = _post(
            f"http://127.0.0.1:{proxy}/v3/clusters/{cluster['cluster_id']}/topics/orders/records",
            {"value": {"type": "AVRO", "schema_id": schema_id, "data": {"id": 7, "amount": 2.5}}},
            "application/json",
        )
        assert produced["error_code"] == 200, produced
        consumer = Consumer(
            {"bootstrap.servers": f"127.0.0.1:{broker}", "group.id": "t",
             "auto.offset.reset": "earliest"}
        )  # fmt: skip
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 60
        message = None
        while message is None and time.monotonic() < deadline:
            got = consumer.poll(0.5)
            message = got if got is not None and got.error() is None else None
        consumer.close()
        assert message is not None, run.output()
        value = AvroDeserializer(client)(
            message.value(), SerializationContext("orders", MessageField.VALUE)
        )
        client.close()
        assert value == {"id": 7, "amount": 2.5}
        # the broker knows the registry: the topic accepts only records of its schemas
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{broker}"})
        errors: list[Any] = []
        producer.produce("orders", b"not avro", on_delivery=lambda e, _m: errors.append(e))
        producer.flush(30)
        assert [e.code() for e in errors] == [KafkaError.INVALID_RECORD], errors
        states = {c["name"]: c["state"] for c in run.state()["components"]}
        assert states["schema-registry"] == states["rest-proxy"] == "running", states

        # an incompatible schema in the file is refused, with the registry's reasons
        evolved = {**SCHEMA, "fields": [*SCHEMA["fields"], {"name": "note", "type": "string"}]}
        (tmp_path / "order.avsc").write_text(json.dumps(evolved))
        again = subprocess.run(
            [SLUICE, "up", "-f", "sluice.yaml"], cwd=tmp_path, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert again.returncode != 0, again.stdout + again.stderr
        assert "orders-value" in again.stdout + again.stderr, again.stdout + again.stderr
        assert "READER_FIELD_MISSING_DEFAULT_VALUE" in again.stdout + again.stderr
    finally:
        run.stop()


def test_a_topic_schema_is_checked_when_the_file_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "bad.avsc").write_text('{"type": "record", "name": "X"}')  # no fields
    (tmp_path / "sluice.yaml").write_text(
        "topics:\n"
        "  - {name: a, value_schema: bad.avsc}\n"
        "  - {name: b, key_schema: {file: missing.json}}\n"
        "  - {name: c, value_schema: notes.txt}\n"
        "  - {name: d, value_schema: good.avsc}\n"
    )
    (tmp_path / "good.avsc").write_text(json.dumps(SCHEMA))
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path / "sluice.yaml")
    found = {(p.line, p.key) for p in caught.value.problems}
    assert (2, "topics[0].value_schema") in found, caught.value
    assert (3, "topics[1].key_schema") in found, caught.value
    assert (4, "topics[2].value_schema") in found, caught.value
    assert (5, "topics") in found, "a schema without schema_registry: is named"
    reasons = " ".join(p.reason for p in caught.value.problems)
    assert "not a valid AVRO schema" in reasons and "cannot read" in reasons, reasons
