package dev.snapledger.kafka.seeder;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.query.Position;
import org.apache.kafka.streams.state.internals.PositionSerde;

/**
 * {@code rewind}: makes a task's changelog partition agree with the generation snapshot in its
 * task folder, the application stopped (docs/kafka-streams.md, "Rewind"). The store says the
 * offset g of the last record it reflects; the partition is read from g + 1 to its end (read
 * at start, {@code read_committed}), keeping each key's last value; for every key whose last
 * value differs from the store's, a compensating record is appended: the store's value (with
 * its timestamp) or a tombstone when the store lacks the key, carrying the generation's input
 * position as Kafka Streams' own changelog headers ("v" = 0, "c" = PositionSerde), so a
 * snapshot cut after them reports the generation's input offsets. The store's changelog offset
 * is then set to the partition's last record, so the application restores nothing and its
 * store starts at exactly the generation's state. Running it again appends nothing new (every
 * key then agrees).
 */
final class ChangelogRewind {
    /** What one task's rewind did: printed as one JSON line. */
    record Outcome(String task, long generationOffset, long tailRecords, long tailKeys,
                   long puts, long tombstones, long offset) {
        String json() {
            return "{\"task\":\"" + task + "\",\"generation_offset\":" + generationOffset
                + ",\"tail_records\":" + tailRecords + ",\"tail_keys\":" + tailKeys
                + ",\"puts\":" + puts + ",\"tombstones\":" + tombstones + ",\"offset\":" + offset
                + "}";
        }
    }

    private ChangelogRewind() { }

    /**
     * The generation's input position per task, one line each on stdin:
     * {@code 0_3 orders:3:1234[,topic:partition:offset...]}.
     */
    static Map<String, Position> readPositions(final InputStream in)
            throws IOException, SeedException {
        final Map<String, Position> out = new HashMap<>();
        final BufferedReader reader =
            new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        for (String line = reader.readLine(); line != null; line = reader.readLine()) {
            if (line.isBlank()) {
                continue;
            }
            final String[] pieces = line.trim().split(" ");
            if (pieces.length != 2) {
                throw new SeedException("rewind: stdin line " + line + ": give 'task"
                    + " topic:partition:offset[,...]'");
            }
            final Position position = Position.emptyPosition();
            for (final String component : pieces[1].split(",")) {
                final int last = component.lastIndexOf(':');
                final int mid = component.lastIndexOf(':', last - 1);
                try {
                    position.withComponent(component.substring(0, mid),
                        Integer.parseInt(component.substring(mid + 1, last)),
                        Long.parseLong(component.substring(last + 1)));
                } catch (final RuntimeException e) {
                    throw new SeedException("rewind: " + component + ": not topic:partition:offset");
                }
            }
            if (out.put(pieces[0], position) != null) {
                throw new SeedException("rewind: task " + pieces[0] + " is given twice on stdin");
            }
        }
        return out;
    }

    /**
     * A compensating record's headers: Kafka Streams' own for a changelog record that carries
     * its store's position ("v" = version 0, "c" = PositionSerde), as
     * {@link ChangelogCatchUp#position} and Kafka Streams' restore read them.
     */
    static RecordHeaders positionHeaders(final Position position) {
        final RecordHeaders headers = new RecordHeaders();
        headers.add(new RecordHeader("v", new byte[] {0}));
        headers.add(new RecordHeader("c", PositionSerde.serialize(position).array()));
        return headers;
    }

    static Outcome run(final SeedOptions options, final Map<String, Position> positions)
            throws SeedException, IOException {
        final String task = options.task().toString();
        final Position position = positions.get(task);
        if (position == null) {
            throw new SeedException("rewind: no input position for task " + task + " on stdin");
        }
        final File folder = options.taskFolder();
        final TopicPartition changelog = options.changelog();
        try (ApplicationDirLock ignored = ApplicationDirLock.acquire(options.applicationDir());
             KafkaConsumer<byte[], byte[]> consumer =
                 ChangelogCatchUp.consumer(options.bootstrapServers());
             TaskStore store = TaskStore.open(folder, options.applicationId(), options.task(),
                 options.store(), options.timestamped())) {
            final Long generation = store.committedOffset(changelog);
            if (generation == null) {
                throw new SeedException(folder + ": the store states no offset of " + changelog
                    + ": it is no snapshot of this changelog");
            }
            consumer.assign(List.of(changelog));
            final Duration timeout = Duration.ofMillis(options.timeoutMs());
            final long end = consumer.endOffsets(List.of(changelog), timeout).get(changelog);
            final long logStart = consumer.beginningOffsets(List.of(changelog), timeout)
                .get(changelog);
            if (generation + 1 < logStart) {
                throw new SeedException(changelog + " starts at " + logStart + ", past the"
                    + " generation's offset " + generation + " + 1: the records after it are gone");
            }
            final Map<Bytes, byte[]> last = new LinkedHashMap<>();
            long lastOffset = generation;
            long tailRecords = 0;
            consumer.seek(changelog, generation + 1);
            final long deadline = System.currentTimeMillis() + options.timeoutMs();
            while (generation + 1 < end && consumer.position(changelog) < end) {
                if (System.currentTimeMillis() > deadline) {
                    throw new SeedException("reading " + changelog + " to " + end + " took over "
                        + options.timeoutMs() + " ms: give a longer --timeout-ms");
                }
                for (final ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    if (r.offset() >= end) {
                        break;
                    }
                    ChangelogCatchUp.checked(r);
                    last.put(Bytes.wrap(r.key()), r.value());
                    lastOffset = r.offset();
                    tailRecords++;
                }
            }
            final List<Future<RecordMetadata>> sent = new ArrayList<>();
            long puts = 0;
            long tombstones = 0;
            try (KafkaProducer<byte[], byte[]> producer = producer(options.bootstrapServers())) {
                for (final Map.Entry<Bytes, byte[]> e : last.entrySet()) {
                    final TaskStore.Entry wanted = store.get(e.getKey().get());
                    final byte[] value = wanted == null ? null : wanted.value();
                    if (Arrays.equals(value, e.getValue())) {
                        continue;
                    }
                    final long timestamp = wanted == null || wanted.timestamp() == null
                        ? System.currentTimeMillis() : wanted.timestamp();
                    sent.add(producer.send(new ProducerRecord<>(changelog.topic(),
                        changelog.partition(), timestamp, e.getKey().get(), value,
                        positionHeaders(position))));
                    puts += value == null ? 0 : 1;
                    tombstones += value == null ? 1 : 0;
                }
                producer.flush();
                for (final Future<RecordMetadata> future : sent) {
                    lastOffset = Math.max(lastOffset, future.get().offset());
                }
            } catch (final ExecutionException | InterruptedException e) {
                throw new SeedException("appending to " + changelog + " failed (" + e + "): run"
                    + " the rewind again (it appends only what still differs)");
            }
            store.commit(changelog, lastOffset);
            return new Outcome(task, generation, tailRecords, last.size(), puts, tombstones,
                lastOffset);
        }
    }

    private static KafkaProducer<byte[], byte[]> producer(final String bootstrapServers) {
        final Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "snapledger-rewind");
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
