"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546): what they are per entity and
which applies to a connection (:mod:`.config`), where they are kept (:mod:`.store`), the
sampled rate they are measured with (:mod:`.rate`, shared with the replication throttles) and
the throttling of the connections over their quota (:mod:`.manager`)."""
