package dev.snapledger.kafka.seeder;

import dev.snapledger.kafka.seeder.SeedRecordReader.SeedRecord;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.state.internals.PositionSerde;

/**
 * {@code catch-up}: brings one task folder's store up to its changelog partition's end offset
 * as it was when read, from the changelog alone (the application keeps running). The store
 * (opened, or created empty) says the offset of the last record it reflects; the partition is
 * read from offset + 1 (the beginning for an empty store) with {@code read_committed}, each
 * put or delete applied with its record's timestamp as Kafka Streams' restore applies it, and
 * the offset of the last record applied committed into the store before it is closed. It
 * reports the input position the last record applied carries (its "c" header), if any.
 */
final class ChangelogCatchUp {
    /** What a catch-up did: printed as one JSON line. */
    record Outcome(String task, Long previousOffset, Long offset, long applied, long tombstones,
                   long endOffset, long logStartOffset, long endReadAtMs, Position position) {
        String json() {
            return "{\"task\":\"" + task + "\",\"previous_offset\":" + previousOffset + ",\"offset\":" + offset
                + ",\"applied\":" + applied + ",\"tombstones\":" + tombstones
                + ",\"end_offset\":" + endOffset + ",\"log_start_offset\":" + logStartOffset
                + ",\"end_read_at_ms\":" + endReadAtMs + ",\"position\":" + positionJson(position)
                + "}";
        }
    }

    /**
     * The input position a changelog record carries when the application runs with
     * {@code __iq.consistency.offset.vector.enabled__=true}: header "v" = version 0 and header
     * "c" = the store's Position (PositionSerde) after the write it logs; null without them.
     */
    static Position position(final ConsumerRecord<byte[], byte[]> r) throws SeedException {
        final Header version = r.headers().lastHeader("v");
        final Header vector = r.headers().lastHeader("c");
        if (version == null || vector == null) {
            return null;
        }
        if (version.value().length != 1 || version.value()[0] != 0) {
            throw new SeedException(r.topic() + "-" + r.partition() + " offset " + r.offset()
                + ": a changelog header version this seeder does not read (it reads 0)");
        }
        try {
            return PositionSerde.deserialize(ByteBuffer.wrap(vector.value()));
        } catch (final RuntimeException e) {
            throw new SeedException(r.topic() + "-" + r.partition() + " offset " + r.offset()
                + ": its position header does not parse: " + e);
        }
    }

    /** {"topic":{"partition":offset,...},...}, or null. */
    static String positionJson(final Position position) {
        if (position == null) {
            return "null";
        }
        final StringJoiner topics = new StringJoiner(",", "{", "}");
        for (final String topic : new TreeSet<>(position.getTopics())) {
            final StringJoiner parts = new StringJoiner(",", "{", "}");
            for (final var e : new TreeMap<>(position.getPartitionPositions(topic)).entrySet()) {
                parts.add("\"" + e.getKey() + "\":" + e.getValue());
            }
            topics.add("\"" + topic + "\":" + parts);
        }
        return topics.toString();
    }

    private ChangelogCatchUp() { }

    /**
     * Catches up one task's store with {@code consumer} (of the options' bootstrap servers),
     * which the caller owns: one serves every task of a run, and a resident seeder's runs.
     */
    static Outcome run(final SeedOptions options, final KafkaConsumer<byte[], byte[]> consumer)
            throws SeedException, IOException {
        final File folder = options.taskFolder();
        final TopicPartition changelog = options.changelog();
        try (ApplicationDirLock ignored = ApplicationDirLock.acquire(options.applicationDir())) {
            if (!folder.isDirectory() && !folder.mkdirs()) {
                throw new SeedException("cannot create the task folder " + folder);
            }
            final List<TopicPartition> assigned = List.of(changelog);
            consumer.assign(assigned);
            // The time is taken BEFORE the end offset is read: every record past it was
            // written after this time (docs/kafka-streams.md, delete.retention.ms).
            final long endReadAtMs = System.currentTimeMillis();
            final Duration timeout = Duration.ofMillis(options.timeoutMs());
            final long end = consumer.endOffsets(assigned, timeout).get(changelog);
            final long logStart = consumer.beginningOffsets(assigned, timeout).get(changelog);
            try (TaskStore store = TaskStore.open(folder, options.applicationId(), options.task(),
                    options.store(), options.timestamped())) {
                final Long previous = store.committedOffset(changelog);
                if (previous != null && previous + 1 < logStart) {
                    throw new SeedException("the store is at offset " + previous + " of " + changelog
                        + " but the partition starts at " + logStart + ": records after the store"
                        + " may be gone (deleted or compacted away); catch up from an empty store");
                }
                final long from = previous == null ? logStart : previous + 1;
                return apply(consumer, store, options, from, end, logStart, previous, endReadAtMs);
            }
        }
    }

    private static Outcome apply(final KafkaConsumer<byte[], byte[]> consumer,
                                 final TaskStore store, final SeedOptions options,
                                 final long from, final long end, final long logStart,
                                 final Long previous, final long endReadAtMs)
            throws SeedException {
        final TopicPartition changelog = options.changelog();
        consumer.seek(changelog, from);
        final long deadline = System.currentTimeMillis() + options.timeoutMs();
        Long last = null;
        Position position = null;
        long applied = 0;
        long tombstones = 0;
        while (from < end && consumer.position(changelog) < end) {
            if (System.currentTimeMillis() > deadline) {
                throw new SeedException("reading " + changelog + " from " + from + " to " + end
                    + " took over " + options.timeoutMs() + " ms (at "
                    + consumer.position(changelog) + "): give a longer --timeout-ms");
            }
            final List<SeedRecord> batch = new ArrayList<>();
            for (final ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                if (r.offset() >= end) {
                    break; // written after the end offset was read: the next snapshot's
                }
                batch.add(checked(r));
                last = r.offset();
                position = position(r);
                tombstones += r.value() == null ? 1 : 0;
            }
            store.apply(batch);
            applied += batch.size();
        }
        if (last != null) {
            store.commit(changelog, last);
        }
        return new Outcome(options.task().toString(), previous, last != null ? last : previous, applied, tombstones, end,
            logStart, endReadAtMs, position);
    }

    static SeedRecord checked(final ConsumerRecord<byte[], byte[]> r)
            throws SeedException {
        final String where = r.topic() + "-" + r.partition() + " offset " + r.offset();
        if (r.key() == null || r.key().length == 0
                || r.key().length > SeedRecordReader.MAX_KEY_BYTES) {
            throw new SeedException(where + ": a changelog record's key has 1.."
                + SeedRecordReader.MAX_KEY_BYTES + " bytes; is this a key-value store's changelog?");
        }
        if (r.value() != null && r.value().length > SeedRecordReader.MAX_VALUE_BYTES) {
            throw new SeedException(where + ": a value over " + SeedRecordReader.MAX_VALUE_BYTES
                + " bytes is beyond what the seeder applies");
        }
        return new SeedRecord(r.key(), r.value(), Math.max(0, r.timestamp()));
    }

    static KafkaConsumer<byte[], byte[]> consumer(final String bootstrapServers) {
        final Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "snapledger-catch-up");
        return new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }
}
