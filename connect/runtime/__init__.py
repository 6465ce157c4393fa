"""The Connect runtime (Kafka's ``connect/runtime``): what runs connectors and their tasks.

- :mod:`.worker` runs connectors and tasks on this process; :mod:`.task_runner`,
  :mod:`.source_runner`, :mod:`.sink_runner` and :mod:`.exactly_once` run one task each;
- :mod:`.reconciler` drives the worker from a config store (:mod:`.config_store`), writes to a
  status store (:mod:`.status_store`) and runs the share of the work its assignment gives it
  (:mod:`.slots`); :mod:`.herder` answers the REST API from it. The modes differ in where the
  stores live (:mod:`.backing_map`): in memory on a :mod:`.standalone` worker, in the
  ``connect-configs`` and ``connect-status`` topics (:mod:`.topic_store`) on a
  :mod:`.distributed` one, whose slots the group gives;
- storage and policy: :mod:`.offsets` and :mod:`.offset_admin` (source and sink offsets),
  :mod:`.tolerance` (``errors.*``),
  :mod:`.config_providers` (``${env:...}``, ``${file:...}``), :mod:`.plugins`,
  :mod:`.validation`, :mod:`.metrics`.

Nothing here is the connector API: connectors import :mod:`sluice.connect` only.
"""
