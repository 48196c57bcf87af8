"""Kafka Streams state: the seeder's input format, task folders and ``.checkpoint`` files
(docs/kafka-streams-format.md)."""
