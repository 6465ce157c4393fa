"""Single message transforms and predicates, under Kafka Connect's names and config keys.

Every transformation Kafka ships is here, with its ``$Key``/``$Value`` variants and settings:

- InsertField, ReplaceField, MaskField, ValueToKey: :mod:`~sluice.connect.transforms.fields`;
- ExtractField, HoistField, Flatten: :mod:`~sluice.connect.transforms.nesting`;
- Cast: :mod:`~sluice.connect.transforms.cast`;
- SetSchemaMetadata: :mod:`~sluice.connect.transforms.metadata`;
- TimestampConverter, TimestampRouter: :mod:`~sluice.connect.transforms.timestamps`;
- RegexRouter: :mod:`~sluice.connect.transforms.routing`;
- Filter: :mod:`~sluice.connect.transforms.filter`;
- HeaderFrom, InsertHeader, DropHeaders: :mod:`~sluice.connect.transforms.headers`;
- the predicates TopicNameMatches, HasHeaderKey, RecordIsTombstone:
  :mod:`~sluice.connect.transforms.predicates`.
:class:`TransformChain` builds a connector's chain from Kafka's ``transforms=...`` /
``predicates=...`` settings.

>>> from sluice.connect.api.data import ConnectRecord
>>> chain = TransformChain.from_config({
...     "transforms": "key,mask",
...     "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
...     "transforms.key.fields": "id",
...     "transforms.mask.type": "MaskField$Value",
...     "transforms.mask.fields": "card",
... })
>>> out = chain.apply(ConnectRecord("pay", 0, None, None, None, {"id": 3, "card": "4111"}))
>>> out.key, out.value
({'id': 3}, {'id': 3, 'card': ''})
"""

from sluice.connect.api.transform import (
    ConfigKey,
    KeyOrValueTransformation,
    Predicate,
    Settings,
    Transformation,
)
from sluice.connect.transforms.chain import TransformChain, TransformStage
from sluice.connect.transforms.registry import (
    PREDICATES,
    TRANSFORMS,
    predicate_class,
    transform_class,
)

__all__ = [
    "PREDICATES",
    "TRANSFORMS",
    "ConfigKey",
    "KeyOrValueTransformation",
    "Predicate",
    "Settings",
    "TransformChain",
    "TransformStage",
    "Transformation",
    "predicate_class",
    "transform_class",
]
