"""Running a topology against Kafka-protocol brokers (Sluice's, or any Kafka cluster).

:class:`~sluice.streams.runtime.streams.KafkaStreams` is the entry point; it runs one
:class:`~sluice.streams.runtime.thread.StreamThread` per process. More processes with the same
application id share the partitions through the consumer group.
"""
