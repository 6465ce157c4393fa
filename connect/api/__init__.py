"""The public connector API: what a connector, task or transformation author sees.

Kafka Connect's ``connect/api``: the connector and task classes (:mod:`.connector`), records,
schemas and structs (:mod:`.data`), config definitions (:mod:`.config_def`), logical types
(:mod:`.logical`), errors (:mod:`.errors`) and the transformation base (:mod:`.transform`).
These modules import nothing of Connect beyond each other. Authors import the names from
:mod:`sluice.connect`, which re-exports them.
"""
