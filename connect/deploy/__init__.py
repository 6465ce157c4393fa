"""YAML deployment files: connectors declared in files, loaded and checked before anything runs.

``sluice connect apply FILE.yaml|DIR`` reads connectors with :func:`load`, checks each against
its class with :func:`resolve_class`, and only then reconciles the running connectors: a file
with any problem changes nothing. This package is that pure first half; it starts nothing.

**Files.** A path is one YAML file or a folder whose ``*.yaml``/``*.yml`` files are read in name
order (hidden files skipped). A file holds one connector, a list of them, ``connectors: [...]``,
or several ``---`` documents of these. A connector name is unique across all files.

**Structured form** — YAML's own shapes, with these keys:

- ``name`` (required), ``class`` (required: an alias such as ``file-source``, a Kafka class
  name or a dotted path ``package.module.Class``), ``tasks_max`` (a whole number ≥ 1, default 1),
  ``state`` (``running`` — the default —, ``paused`` or ``stopped``);
- ``config``: the connector's settings under Kafka Connect's keys; nested mappings join their
  keys with dots (``key.converter: {schemas.enable: false}``);
- ``transforms`` and ``predicates``: a list of ``{name: ALIAS, type: CLASS, setting: ...}`` (or
  a mapping ``ALIAS: {type: CLASS, ...}``), flattened to Kafka's ``transforms=ALIAS,...`` and
  ``transforms.ALIAS.type``, ``transforms.ALIAS.setting``;
- ``errors``: ``errors.*`` as a mapping (``{tolerance: all, deadletterqueue: {topic.name: dlq}}``
  is ``errors.tolerance=all``, ``errors.deadletterqueue.topic.name=dlq``).

An unknown key is refused, with the closest valid one suggested.

**Flat form** — Kafka Connect's own keys, as in a ``.properties`` file or a REST body:
``name``, ``connector.class``, ``tasks.max`` and the connector's settings at the top level, or
the REST shape ``{name: ..., config: {connector.class: ..., ...}}``. Any other key is taken as a
setting; ``state`` alone is Sluice's, as in the structured form. Both forms give the same flat
:attr:`ConnectorSpec.config`, the dict of strings that Kafka Connect's REST API takes.

**Values** become text, as Kafka configs are: a number as written, a boolean (YAML 1.1:
``true``/``yes``/``on``…) as ``true``/``false``, a list of plain values joined with commas.
A null value is refused (write ``''``).

**Secrets** come from placeholders resolved when the file is loaded: ``${env:VARIABLE}`` and
``${file:path:key}`` (a key of a Java properties file; a relative path is relative to the YAML
file's folder), as Kafka's ``EnvVarConfigProvider`` and ``FileConfigProvider`` do. Keys whose
value came from one are in :attr:`ConnectorSpec.secret_keys`, and
:meth:`ConnectorSpec.masked_config` shows them — and every key whose name looks secret, see
:func:`is_sensitive` — as ``[hidden]``. No error message contains a secret value.

**Errors** are one :class:`DeploymentError` (a :class:`~sluice.errors.ConfigError`) listing
every problem as ``file:line: key: message``; :meth:`ConnectorSpec.error` makes more, for keys
checked later, at the line the key was written on.

>>> specs = loads('''
... name: orders-in
... class: file-source
... tasks_max: 2
... state: paused
... config:
...   file: /var/log/orders.log
...   topic: orders
...   password: ${env:ORDERS_PASSWORD}
... transforms:
...   - name: addSource
...     type: InsertField$Value
...     static.field: source
...     static.value: shop
... errors:
...   tolerance: all
...   deadletterqueue: {topic.name: orders-dlq}
... ''', "orders.yaml", environ={"ORDERS_PASSWORD": "s3cret"})
>>> [spec] = specs
>>> spec
ConnectorSpec(name='orders-in', connector_class='file-source', tasks_max=2, state='paused', \
source='orders.yaml', line=2)
>>> for key, value in spec.masked_config().items():
...     print(f"{key}={value}")
name=orders-in
connector.class=file-source
tasks.max=2
file=/var/log/orders.log
topic=orders
password=[hidden]
transforms=addSource
transforms.addSource.type=InsertField$Value
transforms.addSource.static.field=source
transforms.addSource.static.value=shop
errors.tolerance=all
errors.deadletterqueue.topic.name=orders-dlq
>>> print(spec.error("topic", "unknown topic"))
orders.yaml:8: topic: unknown topic

The same connector in Kafka's flat keys:

>>> [flat] = loads('''
... name: orders-in
... connector.class: file-source
... tasks.max: 2
... state: paused
... file: /var/log/orders.log
... topic: orders
... password: ${env:ORDERS_PASSWORD}
... transforms: addSource
... transforms.addSource.type: InsertField$Value
... transforms.addSource.static.field: source
... transforms.addSource.static.value: shop
... errors.tolerance: all
... errors.deadletterqueue.topic.name: orders-dlq
... ''', "orders.yaml", environ={"ORDERS_PASSWORD": "s3cret"})
>>> flat.config == spec.config
True

Mistakes are reported all at once, each where it was written:

>>> loads('''
... - name: a
...   class: file-source
...   tasks_max: many
... - name: b
...   clas: file-sink
... ''', "bad.yaml")
Traceback (most recent call last):
  ...
sluice.connect.deploy.spec.DeploymentError: bad.yaml:4: tasks_max: must be a whole number of \
at least 1, not 'many'
bad.yaml:6: clas: unknown key; did you mean class? (the keys are name, class, tasks_max, state, \
config, transforms, predicates, errors)
"""

from sluice.connect.deploy.loader import STRUCTURED_KEYS, from_nodes, load, loads
from sluice.connect.deploy.spec import STATES, ConnectorSpec, DeploymentError, State
from sluice.connect.deploy.validate import COMMON_CONFIG, Lookup, resolve_class
from sluice.connect.runtime.config_providers import HIDDEN, PROVIDERS, is_sensitive, masked

__all__ = [
    "COMMON_CONFIG",
    "HIDDEN",
    "PROVIDERS",
    "STATES",
    "STRUCTURED_KEYS",
    "ConnectorSpec",
    "DeploymentError",
    "Lookup",
    "State",
    "from_nodes",
    "is_sensitive",
    "load",
    "loads",
    "masked",
    "resolve_class",
]
