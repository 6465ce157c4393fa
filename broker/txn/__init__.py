"""The transaction coordinator: Kafka's transactions for exactly-once produce and consume."""
