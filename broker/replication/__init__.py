"""Replication of partitions between brokers (Kafka's replication protocol).

The follower's side: the inter-broker client (:mod:`.client`) and the replica fetcher
(:mod:`.fetcher`), which copies the partitions a broker follows from their leaders with Kafka's
replica Fetch. The leader answers that Fetch in :mod:`sluice.broker.handlers.fetch`.
"""
