"""``sluice transactions`` takes client config (``-X``) like every other command; what its
wire client cannot apply is refused, never ignored (its TLS and SASL settings:
``tests/cli/test_command_config.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from tests.conftest import free_port

if TYPE_CHECKING:
    from tests.cli.conftest import Result


def test_x_properties_are_applied(run: Callable[..., Result], bootstrap: str) -> None:
    nowhere = f"127.0.0.1:{free_port()}"  # -b points nowhere: only -X can make it work
    listed = run(
        "transactions", "list", "-b", nowhere,
        "-X", f"bootstrap.servers={bootstrap}",
        "-X", "client.id=ops-console",
        "-X", "security.protocol=plaintext",
    )  # fmt: skip
    assert listed.code == 0, str(listed)
    assert listed.out.splitlines()[0].split() == [
        "TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE",
    ]  # fmt: skip

    described = run(
        "transactions", "describe", "no-such-transactional-id", "-b", nowhere,
        "--client-config", f"bootstrap.servers={bootstrap}",
    )  # fmt: skip
    assert described.code == 1, str(described)
    assert "transactional id 'no-such-transactional-id' does not exist" in described.err

    unreachable = run("transactions", "list", "-b", nowhere, "--timeout", "2")
    assert unreachable.code == 1, str(unreachable)
    assert f"cannot reach a broker at {nowhere}" in unreachable.err


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("security.protocol=SSH", "security.protocol=SSH: expected one of"),
        ("ssl.ca.pem=PEM", "ssl.ca.pem: not applied by sluice.wire"),
        ("no.such.property=1", "no.such.property: not applied by sluice.wire"),
        ("client.id", "expected KEY=VALUE, got 'client.id'"),
    ],
)
@pytest.mark.parametrize("command", [["list"], ["describe", "some-id"]])
def test_what_cannot_be_applied_is_refused(
    run: Callable[..., Result], command: list[str], setting: str, message: str
) -> None:
    result = run("transactions", *command, "-X", setting, "-b", f"127.0.0.1:{free_port()}")
    assert result.code == 2, str(result)
    assert message in " ".join(result.err.replace("│", " ").split()), result.err
