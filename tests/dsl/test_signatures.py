"""A DSL function that cannot be called as its operator calls it is refused when the topology
is built — naming the operator, the call it makes and where the function is — not at the first
record as ``TypeError: <lambda>() takes 1 positional argument but 2 were given``."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import pytest

from sluice.dsl import App, JoinWindows, SessionWindows, TimeWindows
from sluice.streams import TopologyError

HERE = __file__


def one(a):
    return a


def two(a, b):
    return a


def three(a, b, c):
    return a


def nothing():
    return 0


def _app() -> App:
    return App("app", stores="memory")


# operator, the call it makes, and how to give it a function `f` (everything else right)
CASES: list[tuple[str, str, Callable[[App, Any], Any]]] = [
    ("KStream.filter", "predicate(key, value)", lambda app, f: app.stream("s").filter(f)),
    ("KStream.filter_not", "predicate(key, value)", lambda app, f: app.stream("s").filter_not(f)),
    ("KStream.map", "mapper(key, value)", lambda app, f: app.stream("s").map(f)),
    ("KStream.map_values", "mapper(value)", lambda app, f: app.stream("s").map_values(f)),
    (
        "KStream.map_values",
        "mapper(key, value)",
        lambda app, f: app.stream("s").map_values(f, with_key=True),
    ),
    ("KStream.flat_map", "mapper(key, value)", lambda app, f: app.stream("s").flat_map(f)),
    (
        "KStream.flat_map_values",
        "mapper(value)",
        lambda app, f: app.stream("s").flat_map_values(f),
    ),
    ("KStream.select_key", "selector(key, value)", lambda app, f: app.stream("s").select_key(f)),
    ("KStream.peek", "action(key, value)", lambda app, f: app.stream("s").peek(f)),
    ("KStream.foreach", "action(key, value)", lambda app, f: app.stream("s").foreach(f)),
    ("KStream.process", "supplier()", lambda app, f: app.stream("s").process(f)),
    ("KStream.to", "topic(record)", lambda app, f: app.stream("s").to(f)),
    ("KStream.group_by", "selector(key, value)", lambda app, f: app.stream("s").group_by(f)),
    (
        "Split.branch",
        "predicate(key, value)",
        lambda app, f: app.stream("s").split().branch("a", f),
    ),
    (
        "KStream.join",
        "joiner(value, other_value)",
        lambda app, f: app.stream("s").join(app.table("t"), f),
    ),
    (
        "KStream.left_join",
        "joiner(value, other_value)",
        lambda app, f: app.stream("s").left_join(app.stream("u"), f, JoinWindows.of("1s")),
    ),
    (
        "KStream.outer_join",
        "joiner(value, other_value)",
        lambda app, f: app.stream("s").outer_join(app.stream("u"), f, JoinWindows.of("1s")),
    ),
    (
        "KStream.join",
        "key_selector(key, value)",
        lambda app, f: app.stream("s").join(app.global_table("g"), two, key_selector=f),
    ),
    (
        "App.stream",
        "timestamp_extractor(record, partition_time)",
        lambda app, f: app.stream("s", timestamp_extractor=f),
    ),
    (
        "App.table",
        "timestamp_extractor(record, partition_time)",
        lambda app, f: app.table("t", timestamp_extractor=f),
    ),
    ("KTable.filter", "predicate(key, value)", lambda app, f: app.table("t").filter(f)),
    ("KTable.filter_not", "predicate(key, value)", lambda app, f: app.table("t").filter_not(f)),
    ("KTable.map_values", "mapper(value)", lambda app, f: app.table("t").map_values(f)),
    ("KTable.group_by", "selector(key, value)", lambda app, f: app.table("t").group_by(f)),
    (
        "KTable.join",
        "joiner(value, other_value)",
        lambda app, f: app.table("t").join(app.table("u"), f),
    ),
    (
        "KTable.left_join",
        "joiner(value, other_value)",
        lambda app, f: app.table("t").left_join(app.table("u"), f),
    ),
    (
        "KTable.outer_join",
        "joiner(value, other_value)",
        lambda app, f: app.table("t").outer_join(app.table("u"), f),
    ),
    (
        "KTable.join",
        "foreign_key(value)",
        lambda app, f: app.table("t").join(app.table("u"), two, foreign_key=f),
    ),
    (
        "KGroupedStream.reduce",
        "reducer(aggregate, value)",
        lambda app, f: app.stream("s").group_by_key().reduce(f),
    ),
    (
        "KGroupedStream.aggregate",
        "initializer()",
        lambda app, f: app.stream("s").group_by_key().aggregate(f, three),
    ),
    (
        "KGroupedStream.aggregate",
        "aggregator(key, value, aggregate)",
        lambda app, f: app.stream("s").group_by_key().aggregate(nothing, f),
    ),
    (
        "WindowedKStream.reduce",
        "reducer(aggregate, value)",
        lambda app, f: app.stream("s").group_by_key().windowed_by(TimeWindows.of("1m")).reduce(f),
    ),
    (
        "WindowedKStream.aggregate",
        "initializer()",
        lambda app, f: (
            app.stream("s").group_by_key().windowed_by(TimeWindows.of("1m")).aggregate(f, three)
        ),
    ),
    (
        "WindowedKStream.aggregate",
        "aggregator(key, value, aggregate)",
        lambda app, f: (
            app.stream("s").group_by_key().windowed_by(TimeWindows.of("1m")).aggregate(nothing, f)
        ),
    ),
    (
        "WindowedKStream.aggregate",
        "merger(key, aggregate_a, aggregate_b)",
        lambda app, f: (
            app.stream("s")
            .group_by_key()
            .windowed_by(SessionWindows.with_inactivity_gap("1m"))
            .aggregate(nothing, three, merger=f)
        ),
    ),
    (
        "KGroupedTable.reduce",
        "adder(aggregate, value)",
        lambda app, f: app.table("t").group_by(two).reduce(f, two),
    ),
    (
        "KGroupedTable.reduce",
        "subtractor(aggregate, value)",
        lambda app, f: app.table("t").group_by(two).reduce(two, f),
    ),
    (
        "KGroupedTable.aggregate",
        "initializer()",
        lambda app, f: app.table("t").group_by(two).aggregate(f, three, three),
    ),
    (
        "KGroupedTable.aggregate",
        "adder(key, value, aggregate)",
        lambda app, f: app.table("t").group_by(two).aggregate(nothing, f, three),
    ),
    (
        "KGroupedTable.aggregate",
        "subtractor(key, value, aggregate)",
        lambda app, f: app.table("t").group_by(two).aggregate(nothing, three, f),
    ),
]
ARITY = {0: nothing, 1: one, 2: two, 3: three}


def _arity(call: str) -> int:
    inside = call[call.index("(") + 1 : -1]
    return len(inside.split(",")) if inside else 0


def _ids() -> list[str]:
    return [f"{operator}:{call}" for operator, call, _ in CASES]


@pytest.mark.parametrize(("operator", "call", "use"), CASES, ids=_ids())
def test_the_right_number_of_parameters_is_taken(operator, call, use):
    use(_app(), ARITY[_arity(call)])


@pytest.mark.parametrize(("operator", "call", "use"), CASES, ids=_ids())
def test_one_parameter_too_few_is_refused_naming_the_operator_and_the_call(operator, call, use):
    arity = _arity(call)
    wrong = ARITY[arity - 1] if arity else ARITY[1]
    with pytest.raises(TopologyError) as refused:
        use(_app(), wrong)
    line = wrong.__code__.co_firstlineno
    parameters = ", ".join("abc"[: wrong.__code__.co_argcount])
    count = wrong.__code__.co_argcount
    problem = (
        f"needs {count} positional argument{'s' * (count != 1)}"
        if count > arity
        else f"takes {count} positional argument{'s' * (count != 1)}"
    )
    assert str(refused.value) == (
        f"{operator} calls {call}, but {wrong.__name__}({parameters}) "
        f"(defined at {HERE}:{line}) {problem}"
    )


@pytest.mark.parametrize(("operator", "call", "use"), CASES, ids=_ids())
def test_one_parameter_too_many_is_refused(operator, call, use):
    wrong = ARITY.get(_arity(call) + 1, lambda a, b, c, d: a)
    with pytest.raises(TopologyError, match=rf"^{re.escape(operator)} calls .* needs "):
        use(_app(), wrong)


def test_the_issue_s_one_argument_filter_is_refused_before_any_record():
    app = _app()
    orders = app.stream("orders")
    with pytest.raises(TopologyError) as refused:
        orders.filter(lambda order: order["amount"] > 100)
    message = str(refused.value)
    assert message.startswith(
        "KStream.filter calls predicate(key, value), but <lambda>(order) (defined at "
    )
    assert message.endswith(") takes 1 positional argument")
    assert "KSTREAM-FILTER" not in app.describe()  # nothing was added


class _Callable:
    def __call__(self, key, value):
        return True


class _Holder:
    def keep(self, key, value):
        return True


@pytest.mark.parametrize(
    "predicate",
    [
        lambda *args: True,
        lambda key, value=None: True,
        lambda key, *rest: True,
        lambda key, value, extra=1: True,
        functools.partial(lambda flag, key, value: flag, True),
        _Callable(),
        _Holder().keep,
        lambda key, value, *, option=1: True,
    ],
    ids=[
        "varargs",
        "default",
        "key-and-varargs",
        "extra-default",
        "partial",
        "object",
        "method",
        "keyword-default",
    ],
)
def test_functions_that_can_be_called_so_are_taken(predicate):
    app = _app()
    app.stream("in").filter(predicate).to("out")
    with app.test_driver() as driver:
        driver.pipe("in", "k", 1, timestamp=1)
        assert [r.value for r in driver.read_output("out")] == [1]


def test_builtins_without_a_signature_are_taken_as_they_are():
    app = _app()
    app.stream("in").map_values(str).flat_map_values(str.split).map_values(len).to("out")
    with app.test_driver() as driver:
        driver.pipe("in", "k", "ab cde", timestamp=1)
        assert [r.value for r in driver.read_output("out")] == [2, 3]


def test_a_required_keyword_only_parameter_is_refused():
    with pytest.raises(
        TopologyError,
        match=r"calls mapper\(value\), but .* needs keyword-only "
        r"unit$",
    ):
        _app().stream("s").map_values(lambda value, *, unit: value)


def test_something_not_callable_is_refused():
    with pytest.raises(
        TopologyError,
        match=r"^KStream.peek calls action\(key, value\): it needs a function, "
        r"not 'print'$",
    ):
        _app().stream("s").peek("print")
