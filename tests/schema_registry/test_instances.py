"""Registry instances agree: a restart after kill -9 serves the same ids and versions, two
instances share one history (the follower forwards writes to the leader), and the topic holds
Confluent's records."""

from __future__ import annotations

import json

from confluent_kafka import OFFSET_BEGINNING, Consumer, ConsumerGroupState, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from tests.conftest import BrokerProcess
from tests.schema_registry.conftest import (
    ClientFactory,
    RegistryFactory,
    RegistryProcess,
    call,
    wait_for,
)


def record(*fields: str) -> Schema:
    body = {
        "type": "record",
        "name": "Event",
        "fields": [{"name": f, "type": "string", "default": ""} for f in fields],
    }
    return Schema(json.dumps(body), "AVRO")


def state(url: str) -> dict[str, object]:
    """Everything a client can see of the subjects, ids and settings."""
    seen: dict[str, object] = {}
    for subject in call(url, "GET", "/subjects?deleted=true")[1]:
        versions = call(url, "GET", f"/subjects/{subject}/versions?deleted=true")[1]
        seen[subject] = [
            call(url, "GET", f"/subjects/{subject}/versions/{v}?deleted=true")[1] for v in versions
        ]
        seen[f"live {subject}"] = call(url, "GET", f"/subjects/{subject}/versions")[1]
    seen["config"] = call(url, "GET", "/config")[1]
    return seen


def test_restart_after_kill_serves_the_same_state(
    registry_factory: RegistryFactory, sr_client: ClientFactory
) -> None:
    first = registry_factory()
    client = sr_client(first.url)
    ids = [client.register_schema("events-value", record(*"abc"[:n])) for n in range(1, 4)]
    client.register_schema("other-value", record("a"))
    client.delete_version("events-value", 1)
    client.set_compatibility(level="FULL")
    before = state(first.url)

    first.kill()
    first.start()
    assert state(first.url) == before
    assert [client.get_version("events-value", v).schema_id for v in (2, 3)] == ids[1:]
    # the next id follows the highest one read back
    fresh = sr_client(first.url)
    assert fresh.register_schema("events-value", record("a", "b", "c", "d")) == max(ids) + 1


def test_two_instances_share_writes(
    registry_factory: RegistryFactory, sr_client: ClientFactory
) -> None:
    one = registry_factory()
    two = registry_factory(like=one)
    clients = [sr_client(r.url) for r in (one, two)]
    # writes through either instance (one of them forwards to the leader)
    a = clients[0].register_schema("shared-value", record("a"))
    assert call(one.url, "GET", "/subjects/shared-value/versions")[1] == [1]  # read-your-write
    b = clients[1].register_schema("shared-value", record("a", "b"))
    assert call(two.url, "GET", "/subjects/shared-value/versions")[1] == [1, 2]
    c = clients[1].register_schema("elsewhere-value", record("a"))
    assert c == a  # the same schema has one id, whichever instance was asked
    assert b == a + 1
    for url in (one.url, two.url):
        # reads are served from each instance's own copy: wait for the reader to catch up
        wait_for(lambda u=url: call(u, "GET", "/subjects/shared-value/versions")[1] == [1, 2],
                 f"both versions on {url}")  # fmt: skip
        assert call(url, "GET", "/subjects")[1] == ["elsewhere-value", "shared-value"]
        assert call(url, "GET", "/subjects/shared-value/versions/2")[1]["id"] == b
    # settings written through the second instance are seen by the first
    assert clients[1].update_mode("shared-value", "READONLY") == "READONLY"
    wait_for(lambda: call(one.url, "GET", "/mode/shared-value")[1] == {"mode": "READONLY"},
             "the mode on the first instance")  # fmt: skip


def test_the_other_instance_takes_over_when_the_leader_stops(
    shared_broker: BrokerProcess, registry_factory: RegistryFactory, sr_client: ClientFactory
) -> None:
    one = registry_factory()
    two = registry_factory(like=one)
    sr_client(one.url).register_schema("t-value", record("a"))
    leader_url = wait_for(lambda: _leader(shared_broker.bootstrap, one), "a leader")
    assert leader_url in (one.url, two.url)
    leader, follower = (one, two) if leader_url == one.url else (two, one)
    leader.stop()  # a clean stop leaves the group: the follower gets the partition
    wait_for(lambda: _leader(shared_broker.bootstrap, one) == follower.url, "the new leader")
    survivor = sr_client(follower.url)
    assert wait_for(lambda: _try_register(survivor), "a write after the leader stopped") == 2


def _leader(bootstrap: str, proc: RegistryProcess, members: int | None = None) -> str | None:
    """The URL (client.id) of the group member holding partition 0: the leader (None while the
    group is not stable, or has not ``members`` members)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    description = admin.describe_consumer_groups([proc.group])[proc.group].result(30)
    if members is not None and (
        len(description.members) != members or description.state != ConsumerGroupState.STABLE
    ):
        return None
    for member in description.members:
        partitions = member.assignment.topic_partitions if member.assignment else []
        if any(tp.topic == proc.topic and tp.partition == 0 for tp in partitions or ()):
            return str(member.client_id)
    return None


def _try_register(client: SchemaRegistryClient) -> int | None:
    try:
        return client.register_schema("t-value", record("a", "b"))
    except Exception:
        return None


def test_the_topic_holds_confluent_records(
    shared_broker: BrokerProcess, registry: RegistryProcess, sr_client: ClientFactory
) -> None:
    client = sr_client(registry.url)
    schema_id = client.register_schema("rec-value", record("a"))
    client.set_compatibility(level="FULL")
    client.delete_subject("rec-value")
    client.delete_subject("rec-value", permanent=True)

    consumer = Consumer({"bootstrap.servers": shared_broker.bootstrap, "group.id": "sr-reader"})
    consumer.assign([TopicPartition(registry.topic, 0, OFFSET_BEGINNING)])
    records = []
    try:
        while True:
            message = consumer.poll(5)
            if message is None:
                break
            assert message.error() is None
            value = message.value()
            records.append(
                (json.loads(message.key()), None if value is None else json.loads(value))
            )
    finally:
        consumer.close()
    schema_key = {"keytype": "SCHEMA", "subject": "rec-value", "version": 1, "magic": 1}
    assert records[0][0] == schema_key
    assert records[0][1] == {
        "subject": "rec-value",
        "version": 1,
        "id": schema_id,
        "schema": records[0][1]["schema"],
        "deleted": False,
    }
    assert json.loads(records[0][1]["schema"]) == json.loads(record("a").schema_str)
    assert (
        {"keytype": "CONFIG", "subject": None, "magic": 0},
        {"compatibilityLevel": "FULL"},
    ) in records
    assert (schema_key, {**records[0][1], "deleted": True}) in records
    assert (
        {"keytype": "DELETE_SUBJECT", "subject": "rec-value", "magic": 0},
        {"subject": "rec-value", "version": 1},
    ) in records
    assert records[-1] == (schema_key, None)  # the permanent delete: a tombstone


def test_a_killed_leader_is_50003_until_the_group_moves_on(
    shared_broker: BrokerProcess, registry_factory: RegistryFactory
) -> None:
    one = registry_factory()
    two = registry_factory(like=one)
    # both in the group and its rebalance over: else the partition may still move to the
    # instance that joined second, which would then lead
    leader_url = wait_for(
        lambda: _leader(shared_broker.bootstrap, one, members=2), "a leader of two members"
    )
    leader, follower = (one, two) if leader_url == one.url else (two, one)
    body = {"schema": record("a").schema_str}
    leader.kill()  # no goodbye: the group keeps it as the leader until its session times out
    status, answer = call(follower.url, "POST", "/subjects/k-value/versions", body)
    assert (status, answer["error_code"]) == (500, 50003), answer
    assert leader.url in answer["message"]
    # after the session timeout (10 s) the follower holds the partition and writes itself
    wait_for(
        lambda: call(follower.url, "POST", "/subjects/k-value/versions", body) == (200, {"id": 1}),
        "a write once the follower leads",
    )
