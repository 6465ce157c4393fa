"""Failed log directories as the metadata store records them
(``/log_dir_event_notification``) and as the controller acts on them, against a real
ZooKeeper, without broker processes (the brokers are store sessions, as in test_controller.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sluice.broker.cluster import znodes
from sluice.broker.cluster.model import TopicPartition
from tests.cluster.test_controller import (
    StoreFactory,
    brokers,
    controller_on,
    create,
    state_of,
)


def test_the_store_records_offline_replicas_until_the_broker_clears_them(
    store_factory: StoreFactory,
) -> None:
    store, other = store_factory(), store_factory()
    seen: list[int] = []
    watch = other.admin.watch_log_dir_failures(lambda: seen.append(1))
    try:
        assert store.admin.offline_replicas() == {}
        store.admin.notify_log_dir_failure(3, [TopicPartition("t", 1), TopicPartition("t", 0)])
        store.admin.notify_log_dir_failure(3, [TopicPartition("u", 0)])
        store.admin.notify_log_dir_failure(2, [TopicPartition("t", 0)])
        assert other.admin.offline_replicas() == {
            3: frozenset({TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("u", 0)}),
            2: frozenset({TopicPartition("t", 0)}),
        }
        (child, *_) = sorted(store._client.get_children(znodes.LOG_DIR_EVENT_NOTIFICATION))
        assert child.startswith(znodes.LOG_DIR_EVENT_PREFIX) and child[-10:].isdigit(), child
        data, _ = store._client.get(f"{znodes.LOG_DIR_EVENT_NOTIFICATION}/{child}")
        assert data == (
            b'{"version":1,"broker":3,"event":1,"partitions":'
            b'[{"topic":"t","partition":0},{"topic":"t","partition":1}]}'
        )
        _wait_for(lambda: len(seen) >= 2, "the watch to fire for the new failures", seen)
        fired = len(seen)
        store.admin.clear_log_dir_failures(3)
        assert other.admin.offline_replicas() == {2: frozenset({TopicPartition("t", 0)})}
        _wait_for(lambda: len(seen) > fired, "the watch to fire for the cleared ones", seen)
    finally:
        watch.cancel()


def test_offline_replicas_leave_the_isr_and_lose_leadership_cleanly(
    store_factory: StoreFactory,
) -> None:
    sessions = brokers(store_factory, [1, 2, 3])
    controller = controller_on(sessions[1], 1)
    try:
        # broker 3 leads 0 and 1 and follows 2; only its replicas of 0 and 2 fail
        create(sessions[1], "t", {0: (3, 1, 2), 1: (3, 2, 1), 2: (1, 3, 2), 3: (3, 2)})
        for index in range(4):
            state_of(sessions[1], "t", index, lambda s: len(s.isr) >= 2)
        sessions[2].close()  # broker 2 goes: "t"-3's ISR is broker 3 alone
        state_of(sessions[1], "t", 3, lambda s: s.isr == (3,))
        sessions[3].admin.notify_log_dir_failure(
            3, [TopicPartition("t", 0), TopicPartition("t", 2), TopicPartition("t", 3)]
        )
        led = state_of(sessions[1], "t", 0, lambda s: s.leader != 3)
        assert (led.leader, sorted(led.isr)) == (1, [1]), led  # broker 2 is gone too
        followed = state_of(sessions[1], "t", 2, lambda s: 3 not in s.isr)
        assert followed.leader == 1 and sorted(followed.isr) == [1]
        # no unclean election: "t"-3's only in-sync replica is offline, nobody may take over
        waiting = state_of(sessions[1], "t", 3, lambda s: s.leader == -1)
        assert waiting.isr == (3,), waiting
        time.sleep(0.5)  # and broker 3 keeps what is on its healthy directory
        untouched = sessions[1].partition_state("t", 1)
        assert untouched is not None and untouched.value.leader == 3, untouched
        assert 3 in untouched.value.isr
        # broker 3 starts again with its directories healthy: its replicas count again
        sessions[3].admin.clear_log_dir_failures(3)
        back = state_of(sessions[1], "t", 3, lambda s: s.leader == 3)
        assert back.isr == (3,)
    finally:
        controller.close()


def _wait_for(condition: Callable[[], bool], what: str, seen: list[int]) -> None:
    deadline = time.monotonic() + 10
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert condition(), f"expected {what}; the watch fired {len(seen)} times"
