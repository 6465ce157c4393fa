"""Single message transforms and predicates, under Kafka Connect's names and config keys."""
