"""Client quotas in a cluster: set through one broker, kept in ZooKeeper in Kafka's layout
(``/config/users/<user>``, ``/config/clients/<client-id>``,
``/config/users/<user>/clients/<client-id>``, ``<default>``) beside the user's SCRAM
credentials without clobbering them, described and enforced through another broker, which
hears of the change by the ``/config/changes`` notification."""

from __future__ import annotations

import time

from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from sluice import wire
from tests.broker.quotas.wire_quotas import alter, describe
from tests.cluster.brokers import BrokerCluster


def throttle_ms(bootstrap: str, client_id: str) -> int:
    """The ``throttle_time_ms`` of a Metadata request of ``client_id`` on a new connection."""
    with wire.connect(bootstrap, timeout=10, client_id=client_id) as conn:
        answer = conn.call(
            wire.METADATA,
            topics=(),
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
    return int(answer.throttle_time.total_seconds() * 1000)


def test_quotas_set_through_one_broker_apply_on_another(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    via_1, via_2 = cluster.broker(1).bootstrap, cluster.broker(2).bootstrap
    admin = AdminClient({"bootstrap.servers": via_2})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)
    [future] = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("dave", info, b"dave-secret")]
    ).values()
    future.result(30)

    assert throttle_ms(via_2, "slow-app") == 0
    assert (
        alter(
            via_1,
            [
                ({"user": "dave"}, {"producer_byte_rate": 1024.0}),
                ({"user": "dave", "client-id": None}, {"consumer_byte_rate": 2048.0}),
                ({"client-id": "slow-app"}, {"request_percentage": 0.001}),
            ],
        )
        == [("none", None)] * 3
    )
    set_at = time.monotonic()
    while throttle_ms(via_2, "slow-app") == 0:
        assert time.monotonic() - set_at < 5, "broker 2 did not apply the quota within 5 s"
        time.sleep(0.05)
    applied_after = time.monotonic() - set_at
    assert applied_after < 3, f"broker 2 applied the quota after {applied_after:.1f} s"
    assert throttle_ms(via_2, "other-app") == 0, "another client id was throttled"

    _, _, found = describe(via_2)
    assert found[(("user", "dave"),)] == {"producer_byte_rate": 1024.0}
    assert found[(("user", "dave"), ("client-id", None))] == {"consumer_byte_rate": 2048.0}
    store = cluster.store()
    user = store.configs.get("users", "dave")
    assert user["producer_byte_rate"] == "1024" and user["SCRAM-SHA-256"].startswith("salt=")
    assert store.configs.get("users", "dave/clients/<default>") == {"consumer_byte_rate": "2048"}
    assert store.configs.get("clients", "slow-app") == {"request_percentage": "0.001"}

    # removing the quota keeps the credential (the znode is shared), and lifts the throttle
    assert (
        alter(
            via_1,
            [
                ({"user": "dave"}, {"producer_byte_rate": None}),
                ({"client-id": "slow-app"}, {"request_percentage": None}),
            ],
        )
        == [("none", None)] * 2
    )
    assert list(store.configs.get("users", "dave")) == ["SCRAM-SHA-256"]
    [(_, described)] = admin.describe_user_scram_credentials(["dave"]).items()
    assert len(described.result(30).scram_credential_infos) == 1
    lifted_at = time.monotonic()
    while throttle_ms(via_2, "slow-app") != 0:
        assert time.monotonic() - lifted_at < 5, "broker 2 kept the removed quota"
        time.sleep(0.05)
