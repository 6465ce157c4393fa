"""The Streams DSL: streams, tables, grouped and windowed streams, joins.

>>> from sluice.dsl import App, TimeWindows
>>> app = App("shop-analytics")
>>> orders = app.stream("orders")
>>> big = orders.filter(lambda key, order: order["amount"] > 100)
>>> big.to("big-orders")
"""

from sluice.dsl.app import App
from sluice.dsl.grouped import KGroupedStream, KGroupedTable, WindowedKStream
from sluice.dsl.stream import KStream, Split
from sluice.dsl.table import GlobalKTable, KTable
from sluice.streams.operators.suppress import BufferConfig
from sluice.streams.record import Windowed
from sluice.streams.windows import JoinWindows, SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "App",
    "BufferConfig",
    "GlobalKTable",
    "JoinWindows",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "SessionWindows",
    "SlidingWindows",
    "Split",
    "TimeWindows",
    "Windowed",
    "WindowedKStream",
]
