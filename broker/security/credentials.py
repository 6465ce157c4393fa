"""What users authenticate against: SCRAM credentials (KIP-84, KIP-554) and the users of a
PLAIN listener, read from Kafka's JAAS configuration text.

A SCRAM credential is never the password: it is the salt, the iteration count and two keys
derived from the salted password (RFC 5802) — ``StoredKey = H(HMAC(salted, "Client Key"))`` and
``ServerKey = HMAC(salted, "Server Key")``. That is all the server needs to check a client's
proof, and all it stores. Kafka's text form, the value of a ``SCRAM-SHA-256`` or
``SCRAM-SHA-512`` key of ``/config/users/<user>``::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=4096

AlterUserScramCredentials (KIP-554) sends the salted password, the salt and the iteration count
— the password itself never reaches the broker — so the credential is made from those
(:meth:`ScramCredential.from_salted_password`); :meth:`ScramCredential.from_password` is for
credentials made from a configuration file or the CLI. Kafka bounds the iterations to
4096–16384 (``ScramMechanism``).

>>> cred = ScramCredential.from_password("SCRAM-SHA-256", "alice-secret", salt=b"0123456789abcdef")
>>> ScramCredential.parse(cred.to_text()) == cred
True
>>> jaas_options('org.apache.kafka.common.security.plain.PlainLoginModule required '
...              'username="admin" password="admin-secret" user_alice="alice-secret";')
{'username': 'admin', 'password': 'admin-secret', 'user_alice': 'alice-secret'}
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "SCRAM_MECHANISMS",
    "ScramCredential",
    "jaas_options",
    "plain_users",
]

SCRAM_MECHANISMS: Final = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
"""The SCRAM mechanisms Kafka supports, with their hash."""
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384

_JAAS: Final = re.compile(
    r"""^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)
        (?P<options>.*?);?\s*$""",
    re.VERBOSE | re.DOTALL,
)
_OPTION: Final = re.compile(r'\s*([\w.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s";]+)')


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """A user's SCRAM credential for one mechanism (see the module docstring)."""

    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salted_password: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        """The credential AlterUserScramCredentials makes; ValueError for a mechanism or an
        iteration count Kafka refuses."""
        digest = _digest(mechanism)
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(
                f"iterations must be {MIN_ITERATIONS}-{MAX_ITERATIONS} for {mechanism}, "
                f"not {iterations}"
            )
        client_key = hmac.new(salted_password, b"Client Key", digest).digest()
        stored_key = hashlib.new(digest, client_key).digest()
        server_key = hmac.new(salted_password, b"Server Key", digest).digest()
        return cls(mechanism, salt, stored_key, server_key, iterations)

    @classmethod
    def from_password(
        cls,
        mechanism: str,
        password: str,
        iterations: int = MIN_ITERATIONS,
        salt: bytes | None = None,
    ) -> ScramCredential:
        """The credential of ``password`` (a random salt unless given)."""
        salt = os.urandom(16) if salt is None else salt
        salted = hashlib.pbkdf2_hmac(_digest(mechanism), password.encode(), salt, iterations)
        return cls.from_salted_password(mechanism, salted, salt, iterations)

    def to_text(self) -> str:
        """Kafka's text form (the mechanism is the key it is stored under)."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def parse(cls, text: str, mechanism: str = "SCRAM-SHA-256") -> ScramCredential:
        """A credential from Kafka's text form; ValueError names what is wrong."""
        try:
            fields = dict(part.split("=", 1) for part in text.split(","))
            return cls(
                mechanism,
                base64.b64decode(fields["salt"], validate=True),
                base64.b64decode(fields["stored_key"], validate=True),
                base64.b64decode(fields["server_key"], validate=True),
                int(fields["iterations"]),
            )
        except (ValueError, KeyError) as error:
            raise ValueError(f"not a SCRAM credential ({type(error).__name__}: {error})") from None


def _digest(mechanism: str) -> str:
    try:
        return SCRAM_MECHANISMS[mechanism]
    except KeyError:
        known = ", ".join(SCRAM_MECHANISMS)
        raise ValueError(f"unknown SCRAM mechanism {mechanism!r} (known: {known})") from None


def jaas_options(text: str) -> dict[str, str]:
    """The options of a ``sasl.jaas.config`` value (one login module), quotes removed;
    ValueError names what does not parse."""
    match = _JAAS.match(text)
    if match is None:
        raise ValueError(
            "expected '<LoginModule> required key=\"value\" ...;', "
            f"not {text[:60]!r}" + ("..." if len(text) > 60 else "")
        )
    options: dict[str, str] = {}
    rest = match["options"]
    position = 0
    while rest[position:].strip():
        found = _OPTION.match(rest, position)
        if found is None:
            raise ValueError(f"cannot read an option at {rest[position:][:30].strip()!r}")
        key, value = found.group(1), found.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[key] = value
        position = found.end()
    return options


def plain_users(options: dict[str, str]) -> dict[str, str]:
    """The users of a PLAIN listener — ``user_<name>="<password>"`` options, Kafka's
    ``PlainServerCallbackHandler`` — by name.

    >>> plain_users({"username": "admin", "user_admin": "s1", "user_bob": "s2"})
    {'admin': 's1', 'bob': 's2'}
    """
    return {key[5:]: value for key, value in options.items() if key.startswith("user_")}
