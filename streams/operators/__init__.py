"""The DSL's operators: each a small :class:`~sluice.streams.processor.Processor`.

Operators call the callable returned by ``context.forwarder()`` — their children's ``process``
methods — directly, so a chain of stateless operators is a chain of plain function calls.
"""
