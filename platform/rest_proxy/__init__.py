"""Sluice's HTTP proxy: Confluent REST Proxy's API v3 and v2 consumer instances over
confluent-kafka clients (``sluice rest-proxy start``).

>>> from sluice.rest_proxy import ProxyConfig
>>> ProxyConfig("localhost:9092").consumer_instance_timeout_ms
300000

The modules, one concept each: :mod:`~sluice.rest_proxy.errors` (Confluent's error codes),
:mod:`~sluice.rest_proxy.formats` (embedded formats), :mod:`~sluice.rest_proxy.schemas`
(the registry and confluent-kafka's serializers), :mod:`~sluice.rest_proxy.pool` (the shared
clients), :mod:`~sluice.rest_proxy.delivery` (records to the producer and back),
:mod:`~sluice.rest_proxy.produce` (v3 produce records), :mod:`~sluice.rest_proxy.records` (v3
produce's endpoint, plain ASGI in front of FastAPI), :mod:`~sluice.rest_proxy.admin` and
:mod:`~sluice.rest_proxy.resources` (v3's operations and bodies), :mod:`~sluice.rest_proxy.v3`
and :mod:`~sluice.rest_proxy.v2` (routes), :mod:`~sluice.rest_proxy.consumers` (v2 consumer
instances), :mod:`~sluice.rest_proxy.app`, :mod:`~sluice.rest_proxy.server` and
:mod:`~sluice.rest_proxy.workers` (several processes on one address).
"""

from sluice.rest_proxy.app import create_app
from sluice.rest_proxy.errors import RestError
from sluice.rest_proxy.server import ProxyConfig, RestProxy, serve

__all__ = ["ProxyConfig", "RestError", "RestProxy", "create_app", "serve"]
