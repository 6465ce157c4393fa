"""`sluice up --secure` with `schema_registry:` and `rest_proxy:`: both served on HTTPS with HTTP
basic authentication (the generated CA, the admin's password), the file's schema registered over
it, the proxy producing an AVRO record through it to a topic the broker validates against it
(the broker logs in too), and a process given the registry's https:// URL and an owner-only
login file (``$SLUICE_SCHEMA_REGISTRY_CONFIG``)."""

from __future__ import annotations

import base64
import json
import ssl
import stat
import textwrap
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from sluice.schemas.registry_client import registry_client_config
from tests.conftest import free_port
from tests.platform.fixtures import Running

SCHEMA = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}


def _call(url: str, ca: Path, user_info: str | None, body: Any = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if user_info is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode()
    data = None if body is None else json.dumps(body).encode()
    context = ssl.create_default_context(cafile=str(ca))
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data, headers), context=context, timeout=30
        ) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, json.loads(refused.read())


@pytest.mark.timeout(300)
def test_secure_up_serves_the_registry_and_the_proxy_on_https_with_basic_auth(
    tmp_path: Path,
) -> None:
    broker, registry, proxy = free_port(), free_port(), free_port()
    (tmp_path / "order.avsc").write_text(json.dumps(SCHEMA))
    (tmp_path / "show.py").write_text(
        "import os, pathlib\n"
        "pathlib.Path('registry.txt').write_text(os.environ['SLUICE_SCHEMA_REGISTRY_URL'] + ' '"
        " + os.environ['SLUICE_SCHEMA_REGISTRY_CONFIG'])\n"
    )
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
    run = Running(tmp_path, "--secure")
    secure = tmp_path / ".sluice" / "secure"
    try:
        run.wait_component("show-0", {"state": "completed"}, timeout=180)
        ca, admin = secure / "ca.pem", "admin:" + (secure / "admin.pass").read_text()
        registry_url, proxy_url = f"https://127.0.0.1:{registry}", f"https://127.0.0.1:{proxy}"
        shown_url, config = (tmp_path / "registry.txt").read_text().split(" ")
        assert shown_url == registry_url
        assert stat.S_IMODE(Path(config).stat().st_mode) == 0o600
        assert "basic.auth.user.info=streams:" in Path(config).read_text()

        # the registry: the file's schema registered at start; credentials required
        assert _call(f"{registry_url}/subjects", ca, None)[0] == 401
        settings = {"basic.auth.user.info": admin, "ssl.ca.location": str(ca)}
        client = SchemaRegistryClient(registry_client_config(registry_url, settings))
        try:
            latest = client.get_latest_version("orders-value")
        finally:
            client.close()
        assert latest.version == 1

        # the proxy: credentials required; it produces through the secured registry, and the
        # broker (logging in to the registry too) accepts the record of the topic's schema
        assert _call(f"{proxy_url}/v3/clusters", ca, None) == (
            401,
            {"error_code": 401, "message": "Unauthorized"},
        )
        status, clusters = _call(f"{proxy_url}/v3/clusters", ca, admin)
        assert status == 200, clusters
        cluster = clusters["data"][0]["cluster_id"]
        status, produced = _call(
            f"{proxy_url}/v3/clusters/{cluster}/topics/orders/records",
            ca,
            admin,
            {"value": {"type": "AVRO", "schema_id": latest.schema_id, "data": {"id": 7}}},
        )
        assert (status, produced.get("error_code")) == (200, 200), produced
    finally:
        run.stop()
    assert (secure / "admin.pass").read_text() not in run.output()
