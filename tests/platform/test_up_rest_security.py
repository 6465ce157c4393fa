"""`sluice up` running a Connect worker whose REST API is on HTTPS with basic authentication
(``listeners=https://…`` and Kafka's ``BasicAuthSecurityRestExtension`` in ``connect: config:``):
it applies the connectors through that API with the worker's own CA and login, writes them to
an owner-only ``<home>/connect-rest.properties`` that ``up.json`` names, and ``sluice status``
reaches the worker with them — no password in the output, the state file or the logs."""

from __future__ import annotations

import json
import stat
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
import trustme

from sluice.connect.rest_security import BASIC_AUTH_EXTENSION
from tests.conftest import free_port
from tests.platform.fixtures import SLUICE, Running

PASSWORD = "up-rest-pw-3b9"


@pytest.mark.timeout(300)
def test_sluice_up_and_status_reach_a_worker_on_https_with_basic_auth(tmp_path: Path) -> None:
    ca = trustme.CA()
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(tmp_path / "rest.pem")
    ca.cert_pem.write_to_path(tmp_path / "ca.pem")
    (tmp_path / "users.properties").write_text(f"operator={PASSWORD}\n")
    (tmp_path / "jaas.conf").write_text(
        "KafkaConnect {\n  org.apache.kafka.connect.rest.basic.auth.extension."
        f'PropertyFileLoginModule required file="{tmp_path / "users.properties"}";\n}};\n'
    )
    port, rest = free_port(), free_port()
    (tmp_path / "sluice.yaml").write_text(
        textwrap.dedent(
            f"""\
            broker: {{listen: "127.0.0.1:{port}"}}
            topics: [{{name: lines}}]
            connect:
              config:
                listeners: "https://127.0.0.1:{rest}"
                listeners.https.ssl.keystore.location: {tmp_path / "rest.pem"}
                listeners.https.ssl.truststore.location: {tmp_path / "ca.pem"}
                rest.extension.classes: {BASIC_AUTH_EXTENSION}
                java.security.auth.login.config: {tmp_path / "jaas.conf"}
            connectors:
              - name: write-lines
                class: file-sink
                config: {{topics: lines, file: {tmp_path / "output.txt"}}}
            """
        )
    )
    run = Running(tmp_path)
    home = tmp_path / ".sluice"
    try:
        run.wait_running({"broker", "connect"}, timeout=180)
        state = run.state()
        assert state["connect_url"] == f"https://127.0.0.1:{rest}", state
        rest_file = Path(state["connect_config"])
        assert rest_file == home.absolute() / "connect-rest.properties"
        assert stat.S_IMODE(rest_file.stat().st_mode) == 0o600
        deadline = time.monotonic() + 120  # applied once the worker joined its group
        while "write-lines: created (running)" not in run.output():
            assert time.monotonic() < deadline and run.process.poll() is None, run.output()
            time.sleep(0.3)
        shown = subprocess.run(
            [SLUICE, "status", "--json", "--interval", "0", "--home", str(home)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert shown.returncode == 0, shown.stderr
        connect = json.loads(shown.stdout)["connect"]
        assert connect["reachable"], connect
        assert [c["name"] for c in connect["connectors"]] == ["write-lines"], connect
        assert PASSWORD not in shown.stdout + shown.stderr
    finally:
        run.stop()
    seen = run.output() + (home / "up.json").read_text()
    seen += "".join(p.read_text(errors="replace") for p in (home / "logs").glob("*"))
    assert PASSWORD not in seen, "the REST password reached sluice up's output, state or logs"
