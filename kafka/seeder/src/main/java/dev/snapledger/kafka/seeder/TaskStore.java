package dev.snapledger.kafka.seeder;

import dev.snapledger.kafka.seeder.SeedRecordReader.SeedRecord;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.state.TimestampedKeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

/**
 * One persistent key-value store of a task, opened in a task folder with Kafka Streams' own
 * classes: {@code Stores.persistentTimestampedKeyValueStore} (the DSL's default for
 * {@code Materialized.as(name)}: a RocksDBTimestampedStore) or
 * {@code Stores.persistentKeyValueStore}, logging and caching disabled, initialised through
 * kafka-streams-test-utils' MockProcessorContext with the task folder as its state dir.
 */
final class TaskStore implements AutoCloseable {
    /** One entry as the store holds it; timestamp is null for a plain (untimestamped) store. */
    record Entry(byte[] key, byte[] value, Long timestamp) { }

    private final StateStore store;
    private final TimestampedKeyValueStore<Bytes, byte[]> timestamped;
    private final KeyValueStore<Bytes, byte[]> plain;

    private TaskStore(final StateStore store,
                      final TimestampedKeyValueStore<Bytes, byte[]> timestamped,
                      final KeyValueStore<Bytes, byte[]> plain) {
        this.store = store;
        this.timestamped = timestamped;
        this.plain = plain;
    }

    static TaskStore open(final File taskFolder, final String applicationId, final TaskId task,
                          final String storeName, final boolean isTimestamped) {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        // Silences a warning about global threads, which a seed has none of.
        props.put("processing.exception.handler.global.enabled", true);
        final MockProcessorContext<Object, Object> context =
            new MockProcessorContext<>(props, task, taskFolder);
        final StateStore built;
        TimestampedKeyValueStore<Bytes, byte[]> ts = null;
        KeyValueStore<Bytes, byte[]> kv = null;
        if (isTimestamped) {
            ts = Stores.timestampedKeyValueStoreBuilder(
                    Stores.persistentTimestampedKeyValueStore(storeName),
                    Serdes.Bytes(), Serdes.ByteArray())
                .withLoggingDisabled().withCachingDisabled().build();
            built = ts;
        } else {
            kv = Stores.keyValueStoreBuilder(
                    Stores.persistentKeyValueStore(storeName), Serdes.Bytes(), Serdes.ByteArray())
                .withLoggingDisabled().withCachingDisabled().build();
            built = kv;
        }
        built.init(context.getStateStoreContext(), built);
        return new TaskStore(built, ts, kv);
    }

    /** Applies records in order, in one RocksDB write batch: a tombstone deletes its key. */
    void apply(final List<SeedRecord> records) {
        if (timestamped != null) {
            final List<KeyValue<Bytes, ValueAndTimestamp<byte[]>>> batch =
                new ArrayList<>(records.size());
            for (final SeedRecord r : records) {
                batch.add(KeyValue.pair(Bytes.wrap(r.key()),
                    r.value() == null ? null : ValueAndTimestamp.make(r.value(), r.timestamp())));
            }
            timestamped.putAll(batch);
        } else {
            final List<KeyValue<Bytes, byte[]>> batch = new ArrayList<>(records.size());
            for (final SeedRecord r : records) {
                batch.add(KeyValue.pair(Bytes.wrap(r.key()), r.value()));
            }
            plain.putAll(batch);
        }
    }

    /** Records the changelog offset the store reflects, as Kafka Streams 4.4 commits it. */
    void commit(final TopicPartition changelog, final long offset) {
        store.commit(Map.of(changelog, offset));
    }

    Long committedOffset(final TopicPartition changelog) {
        return store.committedOffset(changelog);
    }

    /** The entry of {@code key}, or null when the store lacks it. */
    Entry get(final byte[] key) {
        if (timestamped != null) {
            final ValueAndTimestamp<byte[]> found = timestamped.get(Bytes.wrap(key));
            return found == null ? null : new Entry(key, found.value(), found.timestamp());
        }
        final byte[] found = plain.get(Bytes.wrap(key));
        return found == null ? null : new Entry(key, found, null);
    }

    List<Entry> entries() {
        final List<Entry> out = new ArrayList<>();
        if (timestamped != null) {
            try (KeyValueIterator<Bytes, ValueAndTimestamp<byte[]>> it = timestamped.all()) {
                while (it.hasNext()) {
                    final KeyValue<Bytes, ValueAndTimestamp<byte[]>> kv = it.next();
                    out.add(new Entry(kv.key.get(), kv.value.value(), kv.value.timestamp()));
                }
            }
        } else {
            try (KeyValueIterator<Bytes, byte[]> it = plain.all()) {
                while (it.hasNext()) {
                    final KeyValue<Bytes, byte[]> kv = it.next();
                    out.add(new Entry(kv.key.get(), kv.value, null));
                }
            }
        }
        return out;
    }

    @Override
    public void close() {
        store.close();
    }
}
