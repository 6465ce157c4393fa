"""Kafka's ZooKeeper-era layout: every znode's path and the exact JSON Kafka keeps in it.

Pure functions, no ZooKeeper: an encoder returns the bytes Kafka 3.x (``ZkData.scala``) writes,
compact, with Kafka's keys, value types (a timestamp, the cluster id's version and the bounds of
a producer-id block are strings) and key order (Kafka's JSON comes from Scala hash maps; the
order is the one a Kafka 3.x cluster shows in ZooKeeper). A decoder reads them back, older
versions Kafka still reads too, and raises :class:`MalformedZNodeError`, naming the path and the
bytes, for anything else. Who writes what is in docs/cluster.md ("ZooKeeper layout").

Paths (the JSON of each is in docs/cluster.md and in the encoder's docstring):
``/cluster/id``, ``/controller`` (ephemeral), ``/controller_epoch``, ``/brokers/ids/<id>``
(ephemeral), ``/brokers/topics/<t>``, ``/brokers/topics/<t>/partitions/<p>/state``,
``/config/<type>/<name>``, ``/config/changes/config_change_<n>``, ``/admin/delete_topics/<t>``,
``/admin/preferred_replica_election``, ``/admin/reassign_partitions``,
``/isr_change_notification/isr_change_<n>``, ``/log_dir_event_notification/log_dir_event_<n>``,
``/latest_producer_id_block``.

>>> encode_partition_state(PartitionState(leader=1, leader_epoch=0, isr=(1,), controller_epoch=1))
b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}'
>>> decode_controller_epoch(b"7")
7
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from sluice.broker.cluster.model import (
    BrokerRegistration,
    ConfigChange,
    ControllerRegistration,
    Endpoint,
    PartitionState,
    ProducerIdBlock,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from sluice.broker.log.partition_metadata import format_topic_id, parse_topic_id

T = TypeVar("T")

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONFIG = "/config"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
#: Sluice's own, in the format of the preferred election's: the ElectLeaders API's UNCLEAN
#: elections (Kafka's controller took them as a request).
UNCLEAN_LEADER_ELECTION = "/admin/unclean_leader_election"
#: Sluice's own (Kafka's brokers asked the controller with a ControlledShutdown request): a
#: broker stopping cleanly creates an ephemeral child named by its id.
CONTROLLED_SHUTDOWN = "/admin/controlled_shutdown"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
#: Kafka's: a broker whose log directory failed writes a sequential child. Sluice's carries the
#: broker's offline replicas too (Kafka's controller learned them from LeaderAndIsr responses),
#: and stays until that broker starts again (:func:`encode_log_dir_event`).
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE = 1
"""Kafka's ``LogDirEventNotificationHandler.LogDirFailure``."""
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
#: Kafka's ACL znodes (ZooKeeper era): ``/kafka-acl/<Type>/<name>`` for LITERAL patterns,
#: ``/kafka-acl-extended/prefixed/<Type>/<name>`` for PREFIXED ones (KIP-290), each with the
#: sequential change notifications ``acl_changes_<n>`` of its own change path.
ACL_ROOTS = ("/kafka-acl", "/kafka-acl-extended/prefixed")
ACL_CHANGE_ROOTS = ("/kafka-acl-changes", "/kafka-acl-extended-changes")
ACL_CHANGE_PREFIX = "acl_changes_"

#: Kafka's config entity types (``ConfigType``); the store writes ``topics`` and ``brokers``.
CONFIG_ENTITY_TYPES = ("topics", "clients", "users", "brokers", "ips")
#: The entity name of the cluster-wide default of a config (``ConfigEntityName.Default``).
DEFAULT_ENTITY = "<default>"

#: Created (empty) when a store first connects, as Kafka's ``createTopLevelPaths`` does.
PERSISTENT_PATHS = (
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    *(f"{CONFIG}/{kind}" for kind in CONFIG_ENTITY_TYPES),
    DELETE_TOPICS,
    CONTROLLED_SHUTDOWN,
    ISR_CHANGE_NOTIFICATION,
    LOG_DIR_EVENT_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
)

#: ``/controller_epoch`` starts at 0 (``KafkaController.InitialControllerEpoch``); the first
#: controller has epoch 1.
INITIAL_CONTROLLER_EPOCH = 0


class MalformedZNodeError(ValueError):
    """A znode holds something that is not the JSON Kafka writes there."""

    def __init__(self, path: str, data: bytes, reason: str) -> None:
        text = data.decode("utf-8", "replace")
        super().__init__(f"Failed to parse the ZooKeeper data at {path}: {text!r} ({reason})")
        self.path = path
        self.data = data


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/<id>``."""
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    """``/brokers/topics/<t>``."""
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    """``/brokers/topics/<t>/partitions``."""
    return f"{topic_path(topic)}/partitions"


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<t>/partitions/<p>/state``."""
    return f"{partitions_path(topic)}/{partition}/state"


def acl_changes_path(acl_path: str) -> str:
    """The change path of an ACL znode: literal's or extended's."""
    extended = acl_path.startswith(ACL_ROOTS[1] + "/")
    return ACL_CHANGE_ROOTS[1] if extended else ACL_CHANGE_ROOTS[0]


def config_path(entity_type: str, name: str) -> str:
    """``/config/<type>/<name>``: ``/config/topics/orders``, ``/config/brokers/<default>``."""
    return f"{CONFIG}/{entity_type}/{name}"


def delete_topic_path(topic: str) -> str:
    """``/admin/delete_topics/<t>``: a request to the controller to delete the topic."""
    return f"{DELETE_TOPICS}/{topic}"


def sequence_number(child: str, prefix: str) -> int:
    """The number ZooKeeper appended to a sequential znode's name.

    >>> sequence_number("config_change_0000000012", CONFIG_CHANGE_PREFIX)
    12
    """
    if not child.startswith(prefix) or not child[len(prefix) :].isdigit():
        raise ValueError(f"{child!r} is not a sequential znode named {prefix}<number>")
    return int(child[len(prefix) :])


def _dumps(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _decode(path: str, data: bytes, read: Callable[[Any], T]) -> T:
    """Parse ``data`` as JSON and hand it to ``read``; any failure becomes MalformedZNodeError."""
    try:
        return read(json.loads(data))
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        if isinstance(e, MalformedZNodeError):
            raise
        reason = f"missing key {e}" if isinstance(e, KeyError) else str(e) or type(e).__name__
        raise MalformedZNodeError(path, data, reason) from e


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r} is not an integer")
    return value


def _ints(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise TypeError(f"{value!r} is not a list of integers")
    return tuple(_int(v) for v in value)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def _check_version(doc: Any, supported: Iterable[int | str]) -> None:
    version = doc["version"]
    if version not in tuple(supported):
        raise ValueError(f"unsupported version {version!r}")


# /cluster/id


def encode_cluster_id(cluster_id: str) -> bytes:
    """``{"version":"1","id":...}`` (the version is a string in Kafka's JSON).

    >>> encode_cluster_id("Sfr7YvlkRHSHrmSrwq9mug")
    b'{"version":"1","id":"Sfr7YvlkRHSHrmSrwq9mug"}'
    """
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    """The id in ``/cluster/id``."""
    return _decode(CLUSTER_ID, data, lambda doc: _str(doc["id"]))


# /controller and /controller_epoch


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    """``/controller`` as Kafka 3.x writes it (version 2, never migrated to KRaft).

    >>> encode_controller(2, 1688524276281)
    b'{"version":2,"brokerid":2,"timestamp":"1688524276281","kraftControllerEpoch":-1}'
    """
    return _dumps(
        {
            "version": 2,
            "brokerid": broker_id,
            "timestamp": str(timestamp_ms),
            "kraftControllerEpoch": -1,
        }
    )


def decode_controller(data: bytes) -> ControllerRegistration:
    """Who holds ``/controller`` (versions 1 and 2)."""

    def read(doc: Any) -> ControllerRegistration:
        _check_version(doc, (1, 2))
        return ControllerRegistration(_int(doc["brokerid"]), int(_str(doc["timestamp"])))

    return _decode(CONTROLLER, data, read)


def encode_controller_epoch(epoch: int) -> bytes:
    """The epoch as a decimal string, as Kafka writes it."""
    return str(epoch).encode()


def decode_controller_epoch(data: bytes, path: str = CONTROLLER_EPOCH) -> int:
    """The integer in ``/controller_epoch``."""
    text = data.decode("utf-8", "replace").strip()
    if not text.lstrip("-").isdigit():
        raise MalformedZNodeError(path, data, "not an integer")
    return int(text)


# /brokers/ids/<id>


def encode_broker(registration: BrokerRegistration) -> bytes:
    """Kafka's version 5 registration. ``host``/``port`` name the first PLAINTEXT endpoint
    (null/-1 without one), for clients older than listeners; ``rack`` appears only when set.

    >>> reg = BrokerRegistration(1, (Endpoint("PLAINTEXT", "localhost", 9091),),
    ...                          {"PLAINTEXT": "PLAINTEXT"}, timestamp_ms=1707276552023)
    >>> doc = json.loads(encode_broker(reg))
    >>> list(doc)
    ['features', 'listener_security_protocol_map', 'endpoints', 'jmx_port', 'port', 'host',
     'version', 'timestamp']
    >>> doc["endpoints"], doc["host"], doc["port"], doc["timestamp"]
    (['PLAINTEXT://localhost:9091'], 'localhost', 9091, '1707276552023')
    """
    plaintext = next(
        (
            e
            for e in registration.endpoints
            if registration.security_protocols.get(e.listener) == "PLAINTEXT"
        ),
        None,
    )
    doc: dict[str, Any] = {
        "features": {
            name: {"min_version": low, "max_version": high}
            for name, (low, high) in registration.features.items()
        },
        "listener_security_protocol_map": {
            e.listener: registration.security_protocols[e.listener] for e in registration.endpoints
        },
        "endpoints": [str(e) for e in registration.endpoints],
    }
    if registration.rack is not None:
        doc["rack"] = registration.rack
    doc["jmx_port"] = registration.jmx_port
    doc["port"] = plaintext.port if plaintext else -1
    doc["host"] = plaintext.host if plaintext else None
    doc["version"] = 5
    doc["timestamp"] = str(registration.timestamp_ms)
    return _dumps(doc)


def decode_broker(broker_id: int, data: bytes) -> BrokerRegistration:
    """A broker registration of version 2 to 5 (version 1 had one PLAINTEXT host/port)."""

    def read(doc: Any) -> BrokerRegistration:
        version = _int(doc["version"])
        if version == 1:
            endpoints: tuple[Endpoint, ...] = (
                Endpoint("PLAINTEXT", _str(doc["host"]), _int(doc["port"])),
            )
        elif 2 <= version <= 5:
            endpoints = tuple(Endpoint.parse(_str(e)) for e in doc["endpoints"])
        else:
            raise ValueError(f"unsupported version {version}")
        protocols = doc.get("listener_security_protocol_map")
        if protocols is None:  # before version 4 the listener name was the protocol
            protocols = {e.listener: e.listener for e in endpoints}
        features = {
            name: (_int(v["min_version"]), _int(v["max_version"]))
            for name, v in (doc.get("features") or {}).items()
        }
        return BrokerRegistration(
            broker_id=broker_id,
            endpoints=endpoints,
            security_protocols={_str(k): _str(v) for k, v in protocols.items()},
            rack=doc.get("rack"),
            jmx_port=_int(doc.get("jmx_port", -1)),
            timestamp_ms=int(_str(doc.get("timestamp", "0"))),
            features=features,
        )

    return _decode(broker_path(broker_id), data, read)


# /brokers/topics/<t>


def encode_topic(assignment: TopicAssignment) -> bytes:
    """Kafka's version 3 assignment; ``adding``/``removing`` list only partitions that have some.

    >>> encode_topic(TopicAssignment({0: ReplicaAssignment((1, 2))}))
    b'{"removing_replicas":{},"partitions":{"0":[1,2]},"adding_replicas":{},"version":3}'
    """
    parts = sorted(assignment.partitions.items())
    doc: dict[str, Any] = {
        "removing_replicas": {str(p): list(a.removing) for p, a in parts if a.removing},
        "partitions": {str(p): list(a.replicas) for p, a in parts},
    }
    if assignment.topic_id is not None:
        doc["topic_id"] = format_topic_id(assignment.topic_id)
    doc["adding_replicas"] = {str(p): list(a.adding) for p, a in parts if a.adding}
    doc["version"] = 3
    return _dumps(doc)


def decode_topic(topic: str, data: bytes) -> TopicAssignment:
    """A topic assignment of version 1 to 3 (missing ``adding``/``removing``/``topic_id`` are
    empty)."""

    def read(doc: Any) -> TopicAssignment:
        _check_version(doc, (1, 2, 3))
        adding = doc.get("adding_replicas") or {}
        removing = doc.get("removing_replicas") or {}
        partitions = {
            int(p): ReplicaAssignment(
                _ints(replicas), _ints(adding.get(p, [])), _ints(removing.get(p, []))
            )
            for p, replicas in doc["partitions"].items()
        }
        topic_id = doc.get("topic_id")
        return TopicAssignment(
            partitions, parse_topic_id(_str(topic_id)) if topic_id is not None else None
        )

    return _decode(topic_path(topic), data, read)


# /brokers/topics/<t>/partitions/<p>/state


def encode_partition_state(state: PartitionState) -> bytes:
    """Kafka's version 1 state; ``leader_recovery_state`` only while recovering (KIP-704)."""
    doc: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "version": 1,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
    }
    if state.leader_recovery_state != 0:
        doc["leader_recovery_state"] = state.leader_recovery_state
    return _dumps(doc)


def decode_partition_state(topic: str, partition: int, data: bytes) -> PartitionState:
    """A partition's leader, epoch and ISR."""

    def read(doc: Any) -> PartitionState:
        _check_version(doc, (1,))
        return PartitionState(
            leader=_int(doc["leader"]),
            leader_epoch=_int(doc["leader_epoch"]),
            isr=_ints(doc["isr"]),
            controller_epoch=_int(doc["controller_epoch"]),
            leader_recovery_state=_int(doc.get("leader_recovery_state", 0)),
        )

    return _decode(partition_state_path(topic, partition), data, read)


# /config/<type>/<name> and /config/changes


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """``{"version":1,"config":{...}}`` with string values.

    >>> encode_entity_config({"retention.ms": "1000"})
    b'{"version":1,"config":{"retention.ms":"1000"}}'
    """
    return _dumps({"version": 1, "config": dict(config)})


def decode_entity_config(path: str, data: bytes) -> dict[str, str]:
    """The config map of a config znode (an empty znode is an empty config, as in Kafka)."""
    if not data:
        return {}
    return _decode(path, data, lambda doc: {_str(k): _str(v) for k, v in doc["config"].items()})


def encode_config_change(entity_path: str) -> bytes:
    """A change notification (version 2) naming ``<type>/<name>``.

    >>> encode_config_change("topics/orders")
    b'{"version":2,"entity_path":"topics/orders"}'
    """
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(child: str, data: bytes) -> ConfigChange:
    """A version 2 change notification read from ``/config/changes/<child>``."""
    path = f"{CONFIG_CHANGES}/{child}"

    def read(doc: Any) -> ConfigChange:
        _check_version(doc, (2,))
        return ConfigChange(sequence_number(child, CONFIG_CHANGE_PREFIX), _str(doc["entity_path"]))

    return _decode(path, data, read)


# /admin/... and /isr_change_notification


def encode_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    """The JSON of ``/admin/preferred_replica_election`` and of an ISR change notification.

    >>> encode_partitions([TopicPartition("t", 0)])
    b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    """
    items = [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]
    return _dumps({"version": 1, "partitions": items})


def decode_partitions(path: str, data: bytes) -> frozenset[TopicPartition]:
    """The partitions named by :func:`encode_partitions`' JSON."""

    def read(doc: Any) -> frozenset[TopicPartition]:
        _check_version(doc, (1,))
        return frozenset(
            TopicPartition(_str(p["topic"]), _int(p["partition"])) for p in doc["partitions"]
        )

    return _decode(path, data, read)


def encode_log_dir_event(broker_id: int, partitions: Iterable[TopicPartition]) -> bytes:
    """A ``/log_dir_event_notification/log_dir_event_<n>``: Kafka's JSON (``version``,
    ``broker``, ``event`` 1 = a log directory failed) plus Sluice's ``partitions``, the
    replicas the failure took offline on that broker.

    >>> encode_log_dir_event(2, [TopicPartition("t", 0)])
    b'{"version":1,"broker":2,"event":1,"partitions":[{"topic":"t","partition":0}]}'
    """
    items = [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]
    doc = {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE, "partitions": items}
    return _dumps(doc)


def decode_log_dir_event(path: str, data: bytes) -> tuple[int, frozenset[TopicPartition]]:
    """``(broker, offline partitions)`` of :func:`encode_log_dir_event`'s JSON (a Kafka
    notification, without ``partitions``, names none).

    >>> decode_log_dir_event("/n", b'{"version":1,"broker":2,"event":1}')
    (2, frozenset())
    """

    def read(doc: Any) -> tuple[int, frozenset[TopicPartition]]:
        _check_version(doc, (1,))
        partitions = frozenset(
            TopicPartition(_str(p["topic"]), _int(p["partition"]))
            for p in doc.get("partitions", ())
        )
        return _int(doc["broker"]), partitions

    return _decode(path, data, read)


def encode_reassignment(reassignment: Mapping[TopicPartition, tuple[int, ...]]) -> bytes:
    """``/admin/reassign_partitions``: the target replicas of each partition.

    >>> encode_reassignment({TopicPartition("t", 0): (2, 3)})
    b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3]}]}'
    """
    items = [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
        for tp, replicas in reassignment.items()
    ]
    return _dumps({"version": 1, "partitions": items})


def decode_reassignment(data: bytes) -> dict[TopicPartition, tuple[int, ...]]:
    """The target replicas of each partition of ``/admin/reassign_partitions``."""

    def read(doc: Any) -> dict[TopicPartition, tuple[int, ...]]:
        _check_version(doc, (1,))
        return {
            TopicPartition(_str(p["topic"]), _int(p["partition"])): _ints(p["replicas"])
            for p in doc["partitions"]
        }

    return _decode(REASSIGN_PARTITIONS, data, read)


# /latest_producer_id_block


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    """Kafka's version 1 block, bounds as strings.

    >>> encode_producer_id_block(ProducerIdBlock(1, 0, 999))
    b'{"version":1,"broker":1,"block_start":"0","block_end":"999"}'
    """
    return _dumps(
        {
            "version": 1,
            "broker": block.broker_id,
            "block_start": str(block.first),
            "block_end": str(block.last),
        }
    )


def decode_producer_id_block(data: bytes) -> ProducerIdBlock:
    """The last block claimed."""

    def read(doc: Any) -> ProducerIdBlock:
        _check_version(doc, (1,))
        return ProducerIdBlock(
            _int(doc["broker"]), int(_str(doc["block_start"])), int(_str(doc["block_end"]))
        )

    return _decode(LATEST_PRODUCER_ID_BLOCK, data, read)


def sanitize(name: str) -> str:
    """A user or client id as a znode name under ``/config/<type>/`` (Kafka's
    ``Sanitizer.sanitize``: Java's URL encoding of the UTF-8 bytes, with ``*`` as ``%2A`` and a
    space as ``%20``; only ASCII letters, digits, ``.``, ``-`` and ``_`` stay as they are).

    >>> sanitize("alice"), sanitize("CN=a b,O=c"), sanitize("x~*")
    ('alice', 'CN%3Da%20b%2CO%3Dc', 'x%7E%2A')
    """
    return urllib.parse.quote(name, safe="-_.").replace("~", "%7E")


def desanitize(name: str) -> str:
    """The name a znode under ``/config/<type>/`` stands for (Kafka's ``Sanitizer.desanitize``).

    >>> desanitize(sanitize("CN=a b,O=c~"))
    'CN=a b,O=c~'
    """
    return urllib.parse.unquote(name)
