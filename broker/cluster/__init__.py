"""Cluster mode (being built, issue 20): the metadata store brokers and the controller share,
and the rules of Kafka's replication as pure functions.

:mod:`.metadata_store` names what the broker and the controller need from a store;
:mod:`.zookeeper` implements it on kazoo with Kafka's ZooKeeper-era znodes and JSON
(:mod:`.znodes`); :mod:`.model` holds the small values they exchange. :mod:`.placement` places a
new partition's replicas (Kafka's assignment, rack-aware), :mod:`.election` picks leaders
(offline, unclean, controlled shutdown, preferred, reassignment), :mod:`.replica_state` is a
leader's view of its followers (high watermark, ISR shrink and expand, ``acks=all``).
"""
