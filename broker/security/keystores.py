"""Certificates renewed on a running broker: the TLS listeners' keystores, reloaded on AlterConfigs.

Kafka lets an operator replace a listener's certificate without a restart: an AlterConfigs of
``listener.name.<l>.ssl.keystore.location`` (or of the inline ``ssl.keystore.key`` /
``ssl.keystore.certificate.chain``, and ``ssl.key.password``) on the broker's own BROKER
resource (``kafka-configs --entity-type brokers --entity-name <id>``), after which new
connections get the new certificate and connections already made keep theirs. Kafka's
``SslFactory`` also reloads a keystore whose file changed since it was read, at the next such
AlterConfigs, even one that sets the same path again — the way to pick up a certificate renewed
in place.

:class:`ListenerKeystores` does that for the TLS listeners of this broker process: as a
reconfigurable of the broker (:meth:`sluice.broker.broker.Broker.apply_config`), it first
*validates* a new configuration by building each TLS listener's whole context from it (a file
that does not load refuses the AlterConfigs, naming the key and the file, and nothing
changes), then *reconfigures* by loading the key and chain into the listener's live
``ssl.SSLContext`` — the object the server hands each new connection — when the listener's
keystore keys or its file's modification time differ from what was last loaded. Only the
keystore is reloaded: the truststore, client authentication, protocols and suites stay as the
broker started (changing them takes a restart).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence

from sluice.broker.config import BrokerConfig
from sluice.broker.config_keys.security_keys import DYNAMIC_LISTENER_SSL_KEYS
from sluice.broker.security.listeners import Listener, ListenerTls, listener_tls, tls_keys
from sluice.broker.security.tls import TlsConfigError, load_keystore
from sluice.errors import ConfigError

__all__ = ["ListenerKeystores"]

log = logging.getLogger(__name__)

_Loaded = tuple[tuple[tuple[str, str | None], ...], float | None]
"""What a listener's keystore was loaded from: its keystore keys, and its file's mtime."""


class ListenerKeystores:
    """The keystores of ``listeners``' TLS listeners, as loaded from ``config`` at start."""

    def __init__(self, listeners: Sequence[Listener], config: BrokerConfig) -> None:
        self._listeners: list[tuple[str, ListenerTls]] = [
            (listener.name, listener.tls) for listener in listeners if listener.tls is not None
        ]
        self._loaded: dict[str, _Loaded] = {
            name: _source(config, name) for name, _ in self._listeners
        }

    def validate(self, config: BrokerConfig) -> None:
        """Raise :class:`ConfigError` (naming the key) unless the context of every TLS listener
        whose keystore changed can be built from ``config``."""
        for name, _, _ in self._changed(config):
            listener_tls(config, name)

    def reconfigure(self, config: BrokerConfig) -> None:
        """Load each TLS listener's keystore again if its keys or its file changed; the
        handshakes that follow present it. Raises :class:`ConfigError` if one does not load
        (into a scratch context first: the listener keeps the certificate it had)."""
        for name, tls, source in self._changed(config):
            listener_tls(config, name)  # a key and a chain that do not match fail here
            try:
                load_keystore(tls.context, tls_keys(config, name))
            except TlsConfigError as error:
                key = f"listener.name.{name.lower()}.ssl.keystore.location"
                raise ConfigError(f"listener {name}: {error}", key=key) from None
            self._loaded[name] = source
            log.info("listener %s: keystore reloaded (%s)", name, _where(config, name))

    def _changed(self, config: BrokerConfig) -> Iterator[tuple[str, ListenerTls, _Loaded]]:
        """The TLS listeners whose keystore keys or file differ from what was last loaded."""
        for name, tls in self._listeners:
            source = _source(config, name)
            if source != self._loaded[name]:
                yield name, tls, source


def _source(config: BrokerConfig, listener: str) -> _Loaded:
    keys = tls_keys(config, listener)
    location = keys.get("ssl.keystore.location")
    mtime = None
    if location:
        try:
            mtime = os.stat(location).st_mtime
        except OSError:
            mtime = -1.0  # gone: loading it says so
    return tuple(sorted((k, keys.get(k)) for k in DYNAMIC_LISTENER_SSL_KEYS)), mtime


def _where(config: BrokerConfig, listener: str) -> str:
    return tls_keys(config, listener).get("ssl.keystore.location") or "inline PEM"
