"""The metadata store on ZooKeeper: :class:`ZooKeeperMetadataStore` (:mod:`.store`) over one
kazoo session (:mod:`.session`). This package is the only code of Sluice that imports kazoo.
"""

from sluice.broker.cluster.zookeeper.session import split_connect_string
from sluice.broker.cluster.zookeeper.store import ZooKeeperMetadataStore

__all__ = ["ZooKeeperMetadataStore", "split_connect_string"]
