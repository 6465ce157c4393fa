"""Throttling the connections over their client quota (Kafka's ``ClientQuotaManager`` and
``ClientRequestQuotaManager``, KIP-13/124/219).

Three quotas, each measured by a :class:`~sluice.broker.quotas.rate.SampledRate` per group of
connections sharing it (:mod:`.config`): ``producer_byte_rate`` records the size of each
Produce request, ``consumer_byte_rate`` the records each Fetch response carries (a consumer's;
followers' replica fetches are exempt), ``request_percentage`` the time the broker's loop
spent handling each request, in percent of one second (Kafka's share of one request handler
thread; the broker has one event loop), for every API but ApiVersions and SASL. After a request
is recorded, a rate above its bound gives a throttle time, Kafka's
``(rate - bound) / bound × span`` (:func:`~sluice.broker.quotas.rate.throttle_s`, capped at
``quota.window.num × quota.window.size.seconds``), the largest of the request's quotas; it is
returned at once in the response's ``throttle_time_ms`` and the server reads nothing more from
the connection for that long (KIP-219's muting, which holds clients that ignore the field).

With no quota configured anywhere, :attr:`ClientQuotaManager.enabled` is False and the server
does not call in here: the cost per request is one attribute read. The quotas in force for a
(user, client id) are resolved once and cached until the configuration changes. Not
thread-safe: the broker's event loop only.

>>> from sluice.broker.quotas.config import Entity
>>> now = [0.0]
>>> manager = ClientQuotaManager(samples=11, window_s=1.0, clock=lambda: now[0])
>>> manager.enabled
False
>>> manager.configure({Entity(None, "app"): {"producer_byte_rate": 1000.0}})
>>> manager.record("producer_byte_rate", "ANONYMOUS", "app", 20_000)   # 2000 B/s over 10 s
10000
>>> manager.record("producer_byte_rate", "ANONYMOUS", "other", 20_000)  # no quota
0
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from sluice.broker.quotas.config import QUOTA_KEYS, Quota, QuotaConfigs, resolve
from sluice.broker.quotas.rate import SampledRate, throttle_s

__all__ = ["WINDOW_NUM", "WINDOW_SIZE", "ClientQuotaManager", "user_of"]

WINDOW_NUM: Final = "quota.window.num"
WINDOW_SIZE: Final = "quota.window.size.seconds"

_SWEEP_AT: Final = 1024
"""Groups measured before the idle ones are looked for (then twice those still active)."""
_SensorKey = tuple[str, str, str]
"""(quota key, user, client id) of a group of connections sharing a rate."""


def user_of(principal: str | None) -> str:
    """The user of a principal, as quotas name it: ``User:alice`` → ``alice``.

    >>> user_of("User:alice"), user_of(None)
    ('alice', 'ANONYMOUS')
    """
    if principal is None:
        return "ANONYMOUS"
    return principal.partition(":")[2] or principal


class ClientQuotaManager:
    """The broker's client quotas in force and their measured rates (module docs)."""

    def __init__(
        self,
        *,
        samples: int = 11,
        window_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.samples = samples
        self.window_s = window_s
        self._clock = clock
        self._configs: QuotaConfigs = {}
        self.enabled = False
        """Whether any quota is configured (the server skips all of this when not)."""
        self._resolved: dict[tuple[str, str], dict[str, Quota]] = {}
        self._rates: dict[_SensorKey, SampledRate] = {}
        self._sweep_at = _SWEEP_AT
        self.throttle_time_s: dict[str, float] = dict.fromkeys(QUOTA_KEYS, 0.0)
        """Seconds of throttle time given, per quota (the broker's metrics)."""
        self.throttled: dict[str, int] = dict.fromkeys(QUOTA_KEYS, 0)
        """Responses throttled, per quota."""

    @property
    def configs(self) -> QuotaConfigs:
        """The quotas configured, per entity."""
        return self._configs

    @property
    def measured(self) -> int:
        """How many groups of connections have a measured rate now."""
        return len(self._rates)

    def configure(self, configs: QuotaConfigs) -> None:
        """Put a (new) set of entities' quotas in force."""
        self._configs = {e: dict(q) for e, q in configs.items() if q}
        self.enabled = bool(self._configs)
        self._resolved.clear()

    def windows(self, samples: int, window_s: float) -> None:
        """New ``quota.window.num`` and ``quota.window.size.seconds``."""
        self.samples, self.window_s = samples, window_s
        for rate in self._rates.values():
            rate.reconfigure(samples, window_s)

    def quota(self, key: str, user: str, client_id: str) -> Quota | None:
        """The quota ``key`` in force for ``(user, client_id)`` (None: unlimited)."""
        found = self._resolved.get((user, client_id))
        if found is None:
            found = self._resolved[(user, client_id)] = resolve(self._configs, user, client_id)
        return found.get(key)

    def record(self, key: str, user: str, client_id: str, value: float) -> int:
        """Record ``value`` (bytes; for ``request_percentage``, percent-seconds of handler
        time) against ``(user, client_id)``'s quota ``key``; the throttle time in ms it
        earns now (0: within the quota, or no quota)."""
        quota = self.quota(key, user, client_id)
        if quota is None:
            return 0
        sensor = (key, quota.user, quota.client_id)
        rate = self._rates.get(sensor)
        if rate is None:
            if len(self._rates) >= self._sweep_at:
                self._sweep()
            rate = self._rates[sensor] = SampledRate(
                samples=self.samples, window_s=self.window_s, clock=self._clock
            )
        rate.record(value)
        delay = throttle_s(rate.rate(), quota.bound, rate.span())
        if delay <= 0:
            return 0
        delay = min(delay, self.samples * self.window_s)
        self.throttle_time_s[key] += delay
        self.throttled[key] += 1
        return int(delay * 1000)

    def window_bytes(self, key: str, user: str, client_id: str) -> int | None:
        """The most a single response may carry under quota ``key``: the bound times the
        windows but the current one (Kafka's ``getMaxValueInQuotaWindow``, which caps a
        consumer's Fetch ``max_bytes``); None: no quota."""
        quota = self.quota(key, user, client_id)
        if quota is None:
            return None
        return max(1, int(quota.bound * max(self.samples - 1, 1) * self.window_s))

    def _sweep(self) -> None:
        """Forget the groups whose windows all expired (Kafka expires idle quota sensors),
        and the cached resolutions, so that many short-lived client ids do not pile up."""
        self._rates = {k: r for k, r in self._rates.items() if r.rate() > 0}
        self._resolved.clear()
        self._sweep_at = max(_SWEEP_AT, 2 * len(self._rates))

    def rate(self, key: str, user: str, client_id: str) -> float:
        """The measured rate of ``(user, client_id)``'s group for quota ``key`` (0: none)."""
        quota = self.quota(key, user, client_id)
        if quota is None:
            return 0.0
        rate = self._rates.get((key, quota.user, quota.client_id))
        return 0.0 if rate is None else rate.rate()
