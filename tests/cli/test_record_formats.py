"""``-f``/``--format`` means the same in ``sluice produce`` and ``sluice consume`` (rpk's habit):
what ``consume -f FMT`` prints, ``produce -f FMT`` reads back. ``--file`` has no short form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.cli.conftest import Sluice


def test_what_consume_prints_produce_reads_back(
    sluice: Sluice, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    fmt = r"%p|%T|%h|%k|%v\n"
    lines = [
        '1|1700000000001|origin=a,flag|alice|{"amount": 1}',
        "0|1700000000002||bob|x|y",
        "1|1700000000003|n=1|carol|",
    ]
    source = tmp_path / "records.txt"
    source.write_text("".join(f"{line}\n" for line in lines))
    first = topic_factory(2)
    produced = sluice("produce", first, "-f", fmt, "--file", str(source))
    assert produced.code == 0, str(produced)
    assert "produced 3 records" in produced.err, produced.err

    copied = sluice("consume", first, "--from-beginning", "-e", "-f", fmt)
    assert copied.code == 0, str(copied)
    assert sorted(copied.out.splitlines()) == sorted(lines)

    second = topic_factory(2)  # and through a pipe, the long names this time
    again = sluice("produce", second, "--format", fmt, input=copied.out)
    assert again.code == 0, str(again)
    back = sluice("consume", second, "--from-beginning", "--end", "--format", fmt)
    assert sorted(back.out.splitlines()) == sorted(lines)


def test_a_format_without_a_value_produces_tombstones(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(1)
    assert sluice("produce", topic, "-f", "[%k]", input="[a]\n[b]\n").code == 0
    consumed = sluice("consume", topic, "--from-beginning", "-e", "-f", "%k %S")
    assert consumed.out.splitlines() == ["a -1", "b -1"]  # %S: -1 for a null value


def test_lines_that_do_not_match_are_reported_and_skipped(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic = topic_factory(1)
    produced = sluice(
        "produce", topic, "-f", "%T %k=%v", input="5 a=1\n5 broken\nsoon b=2\n7 c=3\n"
    )
    assert produced.code == 1, str(produced)
    assert "error: line 2: no '=' after the key" in produced.err, produced.err
    assert "error: line 3: timestamp 'soon' is not a number" in produced.err, produced.err
    assert "produced 2 records" in produced.err and "2 failed" in produced.err
    consumed = sluice("consume", topic, "--from-beginning", "-e", "-f", "%T %k=%v")
    assert consumed.out.splitlines() == ["5 a=1", "7 c=3"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "records.txt"], "the format has no token"),  # -f is not --file any more
        (["-f", "%k%v"], "%k and %v need a separator between them"),
        (["-f", "%v %v"], "%v appears twice"),
        (["-f", "%t %v"], "unknown token %t"),
        (["-f", "%k:%v", "-K", ":"], "give --key-separator or --format, not both"),
        (["-f", "%p:%v", "-p", "0"], "give --partition or a format with %p, not both"),
        (["-f", r"%k\n%v"], r"a record is one line"),
    ],
)
def test_produce_format_usage_errors(sluice: Sluice, args: list[str], message: str) -> None:
    result = sluice("produce", "whatever", *args, input="x\n")
    assert result.code == 2, str(result)
    assert message in result.err, result.err
