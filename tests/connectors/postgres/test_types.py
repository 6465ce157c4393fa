"""Text forms of PostgreSQL values → Debezium's Connect values (no server needed)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from sluice.connect.api.errors import ConnectError
from sluice.connectors.postgres.events import ColumnSpec, TableSchema
from sluice.connectors.postgres.types import column_type, numeric_modifier, parse_array


@pytest.mark.parametrize(
    ("oid", "modifier", "text", "value"),
    [
        (16, -1, "f", False),
        (1700, numeric_modifier(5, 2), "NaN", None),
        (1700, numeric_modifier(5, 2), "-0.50", Decimal("-0.50")),
        (1082, -1, "1969-12-31", -1),
        (1082, -1, "infinity", None),
        (1083, -1, "24:00:00", 86_400_000_000),
        (1083, 2, "00:00:01.25", 1250),
        (1114, -1, "1969-12-31 23:59:59.999999", -1),
        (1184, -1, "2024-01-01 00:30:00+02", "2023-12-31T22:30:00Z"),
        (1266, -1, "23:30:00-01:30", "01:00:00Z"),
        (1186, -1, "P1M-1DT-0.5S", 2_629_800_000_000 - 86_400_000_000 - 500_000),
        (1186, -1, "PT0S", 0),
        (701, -1, "-Infinity", float("-inf")),
        (17, -1, "\\x", b""),
        (1009, -1, "{}", []),
        (1231, numeric_modifier(4, 1), "{1.5,NULL}", [Decimal("1.5"), None]),
    ],
)
def test_text_forms_parse_as_debezium_maps_them(
    oid: int, modifier: int, text: str, value: object
) -> None:
    assert column_type(oid, modifier, optional=True).parse(text) == value


def test_numeric_handling_modes() -> None:
    scaled = numeric_modifier(10, 3)
    assert column_type(1700, scaled, optional=True, decimal_mode="double").parse("1.250") == 1.25
    assert column_type(1700, scaled, optional=True, decimal_mode="string").parse("1.250") == "1.250"
    variable = column_type(1700, -1, optional=True).parse("-1.5")
    assert variable is not None and variable.values == {"scale": 1, "value": b"\xf1"}


def test_array_literals() -> None:
    assert parse_array('{"",NULL,"NULL"," x "}', str) == ["", None, "NULL", " x "]
    assert parse_array("[0:1]={3,4}", int) == [3, 4]
    with pytest.raises(ValueError, match="multi-dimensional"):
        parse_array("{{1,2},{3,4}}", int)


def test_an_unreadable_value_names_its_table_and_column() -> None:
    table = TableSchema(
        "shop", "public", "grid", [ColumnSpec("cells", column_type(1007, -1, optional=True))], []
    )
    with pytest.raises(ConnectError, match=r"shop.public.grid: column cells: .*multi-dimensional"):
        table.row(["{{1,2},{3,4}}"])
