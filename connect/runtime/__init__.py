"""The Connect runtime (Kafka's ``connect/runtime``): what runs connectors and their tasks.

- :mod:`.worker` runs connectors and tasks on this process; :mod:`.task_runner`,
  :mod:`.source_runner`, :mod:`.sink_runner` and :mod:`.exactly_once` run one task each;
- :mod:`.herder` is what the REST API asks of a runtime; :mod:`.standalone` serves it from one
  worker with configs in memory, :mod:`.distributed` from a group of workers with configs and
  statuses in the ``connect-configs`` and ``connect-status`` topics;
- storage and policy: :mod:`.offsets` and :mod:`.offset_admin` (source and sink offsets),
  :mod:`.topic_store` (a compacted topic read whole), :mod:`.tolerance` (``errors.*``),
  :mod:`.config_providers` (``${env:...}``, ``${file:...}``), :mod:`.plugins`,
  :mod:`.validation`, :mod:`.metrics`.

Nothing here is the connector API: connectors import :mod:`sluice.connect` only.
"""
