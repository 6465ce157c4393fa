"""Distributed mode: workers that share connectors and tasks through the broker.

Started by ``sluice connect start --group G``. See :mod:`.worker` for how work is placed and
moved, :mod:`.configs` and :mod:`.status` for the records of ``connect-configs`` and
``connect-status``, :mod:`.membership` and :mod:`.slots` for the group, and :mod:`.herder` for
the REST API's view.
"""
