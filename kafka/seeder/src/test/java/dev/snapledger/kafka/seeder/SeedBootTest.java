package dev.snapledger.kafka.seeder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The seeded folder as the pinned Kafka Streams reads it: TopologyTestDriver runs task 0_0 of
 * an unchanged {@code groupByKey().aggregate(..., Materialized.as("totals"))} in
 * {@code {state.dir}/{application.id}/0_0}, through ProcessorStateManager (under
 * exactly_once_v2 a non-empty store without its changelog offset is TaskCorruptedException).
 */
class SeedBootTest {
    static final String APP = "totals-app";
    static final String CHANGELOG = APP + "-totals-changelog";

    @TempDir
    Path stateDir;

    static byte[] records(final Object... keyValueTimestamp) throws IOException {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final DataOutputStream out = new DataOutputStream(bytes);
        out.write(SeedRecordReader.MAGIC);
        out.write(SeedRecordReader.VERSION);
        for (int i = 0; i < keyValueTimestamp.length; i += 3) {
            final byte[] key = ((String) keyValueTimestamp[i]).getBytes(StandardCharsets.UTF_8);
            out.writeInt(key.length);
            out.write(key);
            final Long value = (Long) keyValueTimestamp[i + 1];
            if (value == null) {
                out.writeInt(-1);
            } else {
                final byte[] v = new LongSerializer().serialize(CHANGELOG, value);
                out.writeInt(v.length);
                out.write(v);
            }
            out.writeLong((Long) keyValueTimestamp[i + 2]);
        }
        return bytes.toByteArray();
    }

    SeedOptions options(final String topic, final boolean legacy) throws SeedException {
        return SeedOptions.parse("seed", List.of("--state-dir", stateDir.toString(),
            "--application-id", APP, "--task", "0_0", "--store", "totals",
            "--changelog-topic", topic, "--offset", "41",
            "--legacy-checkpoint", Boolean.toString(legacy)));
    }

    void seed(final String topic, final boolean legacy) throws Exception {
        // Given the changelog: a=1, b=2, a=3 (overwrites), c=9, c deleted
        TaskFolderSeeder.seed(options(topic, legacy), new ByteArrayInputStream(records(
            "a", 1L, 10L, "b", 2L, 20L, "a", 3L, 30L, "c", 9L, 5L, "c", null, 40L)));
    }

    static Topology totals() {
        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream("input", Consumed.with(Serdes.String(), Serdes.Long()))
            .groupByKey()
            .aggregate(() -> 0L, (key, value, total) -> total + value,
                Materialized.<String, Long, KeyValueStore<org.apache.kafka.common.utils.Bytes,
                    byte[]>>as("totals").withValueSerde(Serdes.Long()));
        return builder.build();
    }

    TopologyTestDriver driver() {
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, APP);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        return new TopologyTestDriver(totals(), props);
    }

    @Test
    void theUnchangedApplicationServesTheSeededStateAndAggregatesOntoIt() throws Exception {
        seed(CHANGELOG, false);
        // When the application's task 0_0 starts on the state directory
        try (TopologyTestDriver driver = driver()) {
            final KeyValueStore<String, ValueAndTimestamp<Long>> store =
                driver.getTimestampedKeyValueStore("totals");
            // Then it serves the seeded values with their record timestamps
            assertEquals(ValueAndTimestamp.make(3L, 30L), store.get("a"));
            assertEquals(ValueAndTimestamp.make(2L, 20L), store.get("b"));
            assertNull(store.get("c"));
            // And new input aggregates onto them
            final TestInputTopic<String, Long> input = driver.createInputTopic("input",
                new StringSerializer(), new LongSerializer());
            input.pipeInput("a", 5L, 50L);
            assertEquals(ValueAndTimestamp.make(8L, 50L), store.get("a"));
        }
    }

    @Test
    void aLegacyCheckpointFileIsReadAndMigratedIntoTheStore() throws Exception {
        seed(CHANGELOG, true);
        final File checkpoint = stateDir.resolve(APP).resolve("0_0").resolve(".checkpoint").toFile();
        assertTrue(checkpoint.exists());
        try (TopologyTestDriver driver = driver()) {
            // Kafka Streams 4.4 moved the offset into the store and deleted the file
            assertFalse(checkpoint.exists());
            assertEquals(3L, driver.<String, Long>getKeyValueStore("totals").get("a"));
        }
    }

    @Test
    void anOffsetForAnotherChangelogIsNoOffsetSoExactlyOnceWipesTheTask() throws Exception {
        seed("another-app-totals-changelog", false);
        final Exception failure = assertThrows(Exception.class, this::driver);
        Throwable cause = failure;
        while (!(cause instanceof TaskCorruptedException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        assertInstanceOf(TaskCorruptedException.class, cause);
    }
}
