"""``ConnectorSpec``: one connector as a deployment file declares it; ``DeploymentError``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from sluice.connect.runtime.config_providers import HIDDEN, is_sensitive, masked
from sluice.errors import ConfigError

__all__ = ["STATES", "ConnectorSpec", "DeploymentError", "State"]

State = Literal["running", "paused", "stopped"]
STATES: tuple[State, ...] = ("running", "paused", "stopped")


@dataclass(frozen=True, kw_only=True)
class ConnectorSpec:
    """A connector declared in a YAML file, its settings flattened to Kafka Connect's keys.

    ``config`` is what ``PUT /connectors/{name}/config`` would receive: text values, with
    ``name``, ``connector.class`` and ``tasks.max`` always present and secrets resolved — so it
    must not be printed: use :meth:`masked_config`. ``repr()`` leaves the config out.
    ``key_lines`` gives the line of each key that was written (not of defaults); ``labels``
    how the file spelled a key that the structured form renames (``connector.class`` →
    ``class``, ``tasks.max`` → ``tasks_max``).
    """

    name: str
    connector_class: str
    """As written: an alias (``file-source``), a Kafka class name or a dotted path."""
    tasks_max: int
    state: State
    config: dict[str, str] = field(repr=False)
    source: str
    """The YAML file."""
    line: int
    """The line of the connector's mapping."""
    key_lines: dict[str, int] = field(default_factory=dict, repr=False)
    secret_keys: frozenset[str] = field(default_factory=frozenset, repr=False)
    """Keys whose value came from a ``${env:...}`` or ``${file:...}`` placeholder."""
    labels: dict[str, str] = field(default_factory=dict, repr=False)

    def where(self, key: str | None = None) -> str:
        """``file:line`` of ``key`` (of the connector when the key was not written)."""
        return f"{self.source}:{self.key_lines.get(key or '', self.line)}"

    def error(self, key: str, message: str) -> ConfigError:
        """A :class:`ConfigError` about ``key`` (a flat key) at its file and line.

        Secret values (see :meth:`masked_config`) are blanked out of ``message`` wherever they
        stand as a whole word, so a validator that quotes the value it refused cannot leak one.

        >>> spec = ConnectorSpec(name="a", connector_class="x", tasks_max=1, state="running",
        ...     config={"db.password": "a", "token": "s3cret"}, source="c.yaml", line=1,
        ...     key_lines={"token": 4})
        >>> print(spec.error("token", "invalid value 's3cret' for an int"))
        c.yaml:4: token: invalid value '[hidden]' for an int
        """
        values = {self.config[key] for key in self.config if self._hidden(key)} - {""}
        for value in sorted(values, key=len, reverse=True):
            # Whole occurrences only, so that a short secret does not garble the words around.
            message = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", HIDDEN, message)
        return ConfigError(
            message,
            key=self.labels.get(key, key),
            source=self.source,
            line=self.key_lines.get(key, self.line),
        )

    def masked_config(self) -> dict[str, str]:
        """``config`` with secrets shown as ``[hidden]`` (for REST answers and logs).

        Hidden are the keys in :attr:`secret_keys` and those that look secret by name (see
        :func:`~sluice.connect.runtime.config_providers.is_sensitive`).
        """
        return masked(self.config, self.secret_keys)

    def _hidden(self, key: str) -> bool:
        return key in self.secret_keys or is_sensitive(key)


class DeploymentError(ConfigError):
    """Every problem found in the deployment files, each a ConfigError at its file:line:key.

    ``str()`` lists one problem per line; ``key``, ``source`` and ``line`` are the first's.

    >>> error = DeploymentError([ConfigError("bad", key="a", source="x.yaml", line=3),
    ...                          ConfigError("worse", key="b", source="y.yaml", line=1)])
    >>> print(error)
    x.yaml:3: a: bad
    y.yaml:1: b: worse
    """

    def __init__(self, problems: Sequence[ConfigError]) -> None:
        if not problems:
            raise ValueError("a DeploymentError needs at least one problem")
        first = problems[0]
        rest = "".join(f"\n{problem}" for problem in problems[1:])
        super().__init__(first.reason + rest, key=first.key, source=first.source, line=first.line)
        self.reason = first.reason
        self.problems = tuple(problems)
