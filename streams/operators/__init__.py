"""The DSL's operators: each a small :class:`~sluice.streams.processor.Processor`.

They stand on the bases of :mod:`sluice.streams.operators.base`: an ``Operator`` calls the
callable returned by ``context.forwarder()`` — its children's ``process`` methods — directly; a
``FusedOperator`` is written once, as a function of a record's fields, that the task chains
from the sources to the sinks (:mod:`sluice.streams.fusion`).
"""
