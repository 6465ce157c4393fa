"""Distributed mode: workers that share connectors and tasks through the broker.

Started by ``sluice connect start --group G``. See :mod:`sluice.connect.cluster.runtime` for how
work is placed and moved, :mod:`sluice.connect.cluster.configs` and
:mod:`sluice.connect.cluster.status` for the records of ``connect-configs`` and
``connect-status``, and :mod:`sluice.connect.cluster.herder` for the REST API's view.
"""
