"""``sluice connect apply|status`` and ``sluice status`` against a real standalone worker whose
REST API is on HTTPS (a ``trustme`` CA) with HTTP basic authentication (Kafka's
``BasicAuthSecurityRestExtension``): the CA from ``--rest-ca-file`` or ``--rest-config``, the
password from a file, the environment or ``--rest-config`` — never from the command line, never
printed; a wrong password and an untrusted certificate each end with a clear message and exit 1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme

from sluice.connect.rest_security import BASIC_AUTH_EXTENSION
from sluice.connect_rest import RestClientSecurity, load_rest_config, write_rest_config
from sluice.up.spec import ConnectSpec, SecuritySpec
from sluice.up.supervisor import _rest_client
from tests.cli.conftest import Result, run_sluice
from tests.conftest import BrokerProcess, create_topic, free_port, stop_process
from tests.connect.worker_helpers import standalone_worker, worker_log

pytestmark = pytest.mark.timeout(180)

USER, PASSWORD = "operator", "rest-pw-6e1"


@dataclass
class SecuredWorker:
    """A standalone worker's REST API on HTTPS with basic auth, and the files to reach it."""

    url: str
    ca: Path
    password_file: Path
    root: Path
    bootstrap: str
    jaas: Path
    keystore: Path


def _jaas(root: Path, users: str) -> Path:
    (root / "rest-users.properties").write_text(users)
    jaas = root / "connect-jaas.conf"
    jaas.write_text(
        "KafkaConnect {\n"
        "  org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required\n"
        f'  file="{root / "rest-users.properties"}";\n'
        "};\n"
    )
    return jaas


@pytest.fixture(scope="module")
def worker(
    shared_broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecuredWorker]:
    root = tmp_path_factory.mktemp("secured-rest")
    ca = trustme.CA()
    keystore, ca_pem = root / "rest.pem", root / "ca.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(keystore)
    ca.cert_pem.write_to_path(ca_pem)
    jaas = _jaas(root, f"{USER}={PASSWORD}\nother=other-pw\n")
    port = free_port()
    settings = {
        "listeners": f"https://127.0.0.1:{port}",
        "listeners.https.ssl.keystore.location": str(keystore),
        "rest.extension.classes": BASIC_AUTH_EXTENSION,
        "java.security.auth.login.config": str(jaas),
    }
    worker_file = root / "worker.properties"
    worker_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    empty = root / "none"
    empty.mkdir()
    process = standalone_worker(
        empty, shared_broker.bootstrap, root, "--worker-config", str(worker_file)
    )
    password_file = root / "password.txt"
    password_file.write_text(PASSWORD + "\n")
    secured = SecuredWorker(
        f"https://127.0.0.1:{port}", ca_pem, password_file, root, shared_broker.bootstrap, jaas,
        keystore,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # up once an authenticated status answers
            assert process.poll() is None, worker_log(root)
            if _connect(secured, "status", *_login(secured)).code == 0:
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"the REST API did not come up:\n{worker_log(root)}")
        yield secured
    finally:
        stop_process(process)
    assert PASSWORD not in worker_log(root), "the password reached the worker's log"


def _login(worker: SecuredWorker) -> tuple[str, ...]:
    return ("--rest-ca-file", str(worker.ca), "--rest-user", USER,
            "--rest-password-file", str(worker.password_file))  # fmt: skip


def _connect(worker: SecuredWorker, *args: str, env: dict[str, str] | None = None) -> Result:
    command, *rest = args
    env = {"SLUICE_BOOTSTRAP": worker.bootstrap, **(env or {})}
    return _no_password(run_sluice("connect", command, *rest, "--url", worker.url, env=env))


def _platform_status(home: Path, *args: str) -> Result:
    """``sluice status --json`` with its home in ``home``."""
    return _no_password(
        run_sluice("status", "--json", "--interval", "0", "--home", str(home), *args)
    )


def _no_password(result: Result) -> Result:
    assert PASSWORD not in result.out + result.err, f"the password was printed:\n{result}"
    return result


def _deployment(worker: SecuredWorker, name: str) -> Path:
    topic = create_topic(worker.bootstrap)
    path = worker.root / f"{name}.yaml"
    path.write_text(
        f"name: {name}\nclass: file-sink\nconfig:\n"
        f"    topics: {topic}\n    file: {worker.root / f'{name}.out'}\n"
    )
    return path


def _rows(result: Result, name: str) -> list[list[str]]:
    return [line.split() for line in result.out.splitlines() if line.split()[:1] == [name]]


def test_apply_and_status_with_a_ca_file_and_a_password_file(worker: SecuredWorker) -> None:
    applied = _connect(worker, "apply", str(_deployment(worker, "secure-copy")), *_login(worker))
    assert applied.code == 0, str(applied)
    assert "secure-copy: created (running)" in applied.err
    again = _connect(worker, "apply", str(worker.root / "secure-copy.yaml"), *_login(worker))
    assert again.code == 0 and "secure-copy: unchanged (running)" in again.err, str(again)

    deadline = time.monotonic() + 30
    while True:
        status = _connect(worker, "status", "secure-copy", *_login(worker))
        assert status.code == 0, str(status)
        rows = _rows(status, "secure-copy")
        if (rows and rows[0][3] == "RUNNING") or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert rows[0][:4] == ["secure-copy", "-", "sink", "RUNNING"], status.out


def test_the_password_from_the_environment_or_a_rest_config_file(worker: SecuredWorker) -> None:
    by_env = _connect(
        worker, "status", "--rest-ca-file", str(worker.ca), "--rest-user", USER,
        env={"SLUICE_CONNECT_PASSWORD": PASSWORD},
    )  # fmt: skip
    assert by_env.code == 0, str(by_env)
    assert by_env.out.splitlines()[0].split()[:2] == ["CONNECTOR", "TASK"], by_env.out

    config = write_rest_config(
        worker.root / "rest-client.properties", RestClientSecurity(worker.ca, USER, PASSWORD)
    )
    assert config.stat().st_mode & 0o777 == 0o600
    assert load_rest_config(config) == RestClientSecurity(worker.ca, USER, PASSWORD)
    by_file = _connect(worker, "status", "--rest-config", str(config))
    assert by_file.code == 0, str(by_file)
    by_env_file = _connect(worker, "status", env={"SLUICE_CONNECT_CONFIG": str(config)})
    assert by_env_file.code == 0, str(by_env_file)


def test_a_wrong_password_or_none_is_refused_clearly(worker: SecuredWorker) -> None:
    wrong = worker.root / "wrong.txt"
    wrong.write_text("not-the-password\n")
    for command in (("status",), ("apply", str(_deployment(worker, "refused")))):
        result = _connect(
            worker, *command, "--rest-ca-file", str(worker.ca), "--rest-user", USER,
            "--rest-password-file", str(wrong),
        )  # fmt: skip
        assert result.code == 1, str(result)
        assert "the Connect REST API refused the credentials of user 'operator'" in result.err
        assert "not-the-password" not in result.out + result.err
    anonymous = _connect(worker, "status", "--rest-ca-file", str(worker.ca))
    assert anonymous.code == 1, str(anonymous)
    assert "asks for credentials" in anonymous.err and "--rest-user" in anonymous.err
    no_terminal = _connect(worker, "status", "--rest-ca-file", str(worker.ca), "--rest-user", USER)
    assert no_terminal.code == 2, str(no_terminal)
    assert "--rest-password-file" in no_terminal.err


def test_an_untrusted_certificate_names_the_ca_option(worker: SecuredWorker) -> None:
    other = worker.root / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(other)
    for ca in (("--rest-ca-file", str(other)), ()):  # another CA; the system's CAs
        result = _connect(
            worker, "status", *ca, "--rest-user", USER,
            "--rest-password-file", str(worker.password_file),
        )  # fmt: skip
        assert result.code == 1, str(result)
        assert "cannot be verified" in result.err and "--rest-ca-file" in result.err, result.err
    # the worker's own certificate (its key and chain file) will do as the CA, as with curl
    own = _connect(
        worker, "status", "--rest-ca-file", str(worker.keystore), "--rest-user", USER,
        "--rest-password-file", str(worker.password_file),
    )  # fmt: skip
    assert own.code == 0, str(own)
    missing = _connect(worker, "status", "--rest-ca-file", str(worker.root / "nope.pem"))
    assert missing.code == 2 and "--rest-ca-file" in missing.err, str(missing)


def test_sluice_status_reaches_the_secured_worker(worker: SecuredWorker, tmp_path: Path) -> None:
    given = _platform_status(tmp_path, "-b", worker.bootstrap, "--url", worker.url, *_login(worker))
    assert given.code == 0, str(given)
    connect = json.loads(given.out)["connect"]
    assert connect["reachable"], connect
    wrong = worker.root / "wrong.txt"
    wrong.write_text("nope\n")
    login = ("--rest-ca-file", str(worker.ca), "--rest-user", USER,
             "--rest-password-file", str(wrong))  # fmt: skip
    refused = _platform_status(tmp_path, "-b", worker.bootstrap, "--url", worker.url, *login)
    connect = json.loads(refused.out)["connect"]
    assert not connect["reachable"] and "refused the credentials" in connect["error"], connect

    # what `sluice up` leaves for a worker it runs with a secured REST API: up.json names
    # the URL and an owner-only REST client file, which `sluice status` uses by itself
    spec = ConnectSpec(config=(
        ("listeners", worker.url),
        ("listeners.https.ssl.keystore.location", str(worker.keystore)),
        ("rest.extension.classes", BASIC_AUTH_EXTENSION),
        ("java.security.auth.login.config", str(worker.jaas)),
    ))  # fmt: skip
    assert spec.url == worker.url
    security = _rest_client(spec, SecuritySpec(truststore=worker.ca))
    assert security == RestClientSecurity(worker.ca.absolute(), USER, PASSWORD)
    rest_file = write_rest_config(tmp_path / "connect-rest.properties", security)
    state = {
        "pid": None, "file": None, "updated": time.time(), "bootstrap": worker.bootstrap,
        "connect_url": worker.url, "connect_config": str(rest_file), "components": [],
    }  # fmt: skip
    (tmp_path / "up.json").write_text(json.dumps(state))
    from_up = _platform_status(tmp_path)
    assert from_up.code == 0, str(from_up)
    connect = json.loads(from_up.out)["connect"]
    assert connect["reachable"] and connect["url"] == worker.url, connect


def test_sluice_up_reaches_a_worker_by_its_own_settings(tmp_path: Path) -> None:
    """Without a security: CA, the worker's own certificate is trusted; plain REST: nothing."""
    ca = trustme.CA()
    keystore = tmp_path / "rest.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(keystore)
    jaas = _jaas(tmp_path, "ops=pw\n")
    spec = ConnectSpec(config=(
        ("listeners", "https://0.0.0.0:8443"),
        ("listeners.https.ssl.keystore.location", str(keystore)),
        ("rest.extension.classes", BASIC_AUTH_EXTENSION),
        ("java.security.auth.login.config", str(jaas)),
    ))  # fmt: skip
    assert spec.url == "https://127.0.0.1:8443"
    assert _rest_client(spec, None) == RestClientSecurity(keystore.absolute(), "ops", "pw")
    assert "pw" not in repr(_rest_client(spec, None))
    assert _rest_client(ConnectSpec(), None) is None
    assert ConnectSpec().url == "http://127.0.0.1:8083"


def test_a_rest_config_file_names_a_wrong_key(tmp_path: Path) -> None:
    bad = tmp_path / "rest.properties"
    bad.write_text("ssl.truststore.location=/ca.pem\nbasic.auth.user.info=nocolon\n")
    result = run_sluice("connect", "status", "--rest-config", str(bad))
    assert result.code == 2, str(result)
    assert f"{bad}:2: basic.auth.user.info: expected USER:PASSWORD" in result.err
    bad.write_text("password=x\n")
    result = run_sluice("connect", "status", "--rest-config", str(bad))
    assert result.code == 2 and f"{bad}:1: password: unknown key" in result.err, str(result)


def test_a_client_certificate_from_rest_config_when_the_worker_requires_one(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    """``listeners.https.ssl.client.authentication=required``: ``--rest-config``'s
    ``ssl.keystore.location`` (PEM key and chain) is shown; without it the command fails
    clearly; ``sluice up`` shows the worker's own certificate, as workers do."""
    ca = trustme.CA()
    keystore, ca_pem, client = tmp_path / "rest.pem", tmp_path / "ca.pem", tmp_path / "ops.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(keystore)
    ca.cert_pem.write_to_path(ca_pem)
    ca.issue_cert("ops@example.com").private_key_and_cert_chain_pem.write_to_path(client)
    port = free_port()
    settings = {
        "listeners": f"https://127.0.0.1:{port}",
        "listeners.https.ssl.keystore.location": str(keystore),
        "listeners.https.ssl.truststore.location": str(ca_pem),
        "listeners.https.ssl.client.authentication": "required",
    }
    spec = ConnectSpec(config=tuple(settings.items()))
    assert _rest_client(spec, None) == RestClientSecurity(
        ca_pem.absolute(), None, None, keystore.absolute()
    )
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    empty = tmp_path / "none"
    empty.mkdir()
    with_cert, without = tmp_path / "with.properties", tmp_path / "without.properties"
    with_cert.write_text(f"ssl.truststore.location={ca_pem}\nssl.keystore.location={client}\n")
    without.write_text(f"ssl.truststore.location={ca_pem}\n")
    url = f"https://127.0.0.1:{port}"
    process = standalone_worker(
        empty, shared_broker.bootstrap, tmp_path, "--worker-config", str(worker_file)
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, worker_log(tmp_path)
            shown = run_sluice("connect", "status", "--url", url, "--rest-config", str(with_cert))
            if shown.code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert shown.code == 0, f"{shown}\n{worker_log(tmp_path)}"
        refused = run_sluice("connect", "status", "--url", url, "--rest-config", str(without))
        assert refused.code == 1, str(refused)
        assert url.removeprefix("https://") in refused.err or url in refused.err, str(refused)
    finally:
        stop_process(process)
