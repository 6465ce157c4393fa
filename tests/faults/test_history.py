"""The history checker finds each anomaly it names, and nothing in a clean history."""

from __future__ import annotations

from tests.faults.history import History, check


def _clean(count: int = 5) -> History:
    """``count`` values sent, acknowledged at offsets 0.. of partition 0, read in order."""
    history = History()
    for n in range(count):
        history.sent(n)
        history.acked(n, 0, n)
    for n in range(count):
        history.polled("c", 0, n, n)
    return history


def test_a_clean_history_has_no_anomaly() -> None:
    report = check(_clean())
    assert report.ok and report.acknowledged == 5 and report.read == 5
    assert str(report) == "5 acknowledged, 5 distinct values read: no anomaly"


def test_an_acknowledged_value_never_read_is_lost() -> None:
    history = _clean()
    history.sent(5)
    history.acked(5, 0, 5)
    report = check(history)
    assert report.lost == [5] and not report.ok
    assert "lost: [5]" in str(report)


def test_an_unacknowledged_value_may_be_missing_or_read() -> None:
    history = _clean()
    history.sent(5)
    history.failed(5, definite=False)  # a timeout: it may or may not be there
    history.sent(6)  # never answered
    assert check(history).ok
    history.polled("c", 0, 5, 5)
    assert check(history).ok


def test_a_value_read_at_two_offsets_is_duplicated() -> None:
    history = _clean()
    history.polled("c", 0, 5, 4)  # a retry written again after the first write was acked
    report = check(history)
    assert report.duplicated == {4: [(0, 4), (0, 5)]}
    assert not report.ok and report.ok_but_duplicates()


def test_one_offset_with_two_values_is_inconsistent() -> None:
    history = _clean()
    history.polled("d", 0, 2, 99)  # another consumer saw another value there
    report = check(history)
    assert report.inconsistent == {(0, 2): [2, 99]}
    history = _clean()
    history.acked(7, 0, 3)  # two leaders acknowledged offset 3
    assert (0, 3) in check(history).inconsistent


def test_a_definitely_failed_write_must_not_be_read() -> None:
    history = _clean()
    history.sent(5)
    history.failed(5, definite=True)  # NOT_ENOUGH_REPLICAS: refused before the append
    history.polled("c", 0, 5, 5)
    assert check(history).failed_but_read == [5]


def test_a_poll_going_back_is_nonmonotonic_unless_the_consumer_moved() -> None:
    history = _clean(3)
    history.polled("c", 0, 1, 1)
    assert check(history).nonmonotonic == [("c", 0, 2, 1)]
    history = _clean(3)
    history.moved("c", 0)  # a rebalance: the consumer resumes from its committed offset
    history.polled("c", 0, 1, 1)
    assert check(history).nonmonotonic == []


def test_jumping_over_a_read_value_is_a_skip_but_over_markers_is_not() -> None:
    history = History()
    for offset, value in [(0, "a"), (1, "b"), (3, "c")]:  # offset 2: a transaction marker
        history.acked(value, 0, offset)
        history.polled("full", 0, offset, value)
    history.polled("c", 0, 0, "a")
    history.polled("c", 0, 3, "c")  # skipped "b" at offset 1
    history.polled("d", 0, 1, "b")
    history.polled("d", 0, 3, "c")  # over the marker only: fine
    report = check(history)
    assert report.skipped == [("c", 0, 0, 3)]


def test_partitions_are_checked_apart() -> None:
    history = History()
    history.polled("c", 0, 5, "a")
    history.polled("c", 1, 0, "b")  # another partition: not going back
    history.polled("c", 0, 6, "c")
    assert check(history).ok
