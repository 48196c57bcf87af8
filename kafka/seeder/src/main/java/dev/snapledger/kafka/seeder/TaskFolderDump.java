package dev.snapledger.kafka.seeder;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.state.internals.OffsetCheckpoint;

/**
 * Prints a task folder as Kafka Streams' classes read it, one fact a line:
 * {@code checkpoint-file absent} or {@code checkpoint-file <topic> <partition> <offset>} per
 * entry, {@code store-offset <topic> <partition> <offset|none>}, then
 * {@code entry <key hex> <value hex> <timestamp|->} in key order. Opening the store writes
 * its open/closed marker as Kafka Streams does: dump a copy where the bytes matter.
 */
final class TaskFolderDump {
    private TaskFolderDump() { }

    static void dump(final SeedOptions options, final PrintStream out)
            throws SeedException, IOException {
        final File folder = options.taskFolder();
        final File storeDir = new File(new File(folder, "rocksdb"), options.store());
        if (!storeDir.isDirectory()) {
            throw new SeedException("no store " + options.store() + " in " + folder + " (" + storeDir
                + " is not a folder): check --state-dir, --application-id, --task and --store");
        }
        try (ApplicationDirLock ignored = ApplicationDirLock.acquire(options.applicationDir())) {
            final File checkpoint = new File(folder, ".checkpoint");
            if (checkpoint.exists()) {
                final Map<TopicPartition, Long> sorted = new TreeMap<>(
                    (a, b) -> a.toString().compareTo(b.toString()));
                sorted.putAll(new OffsetCheckpoint(checkpoint).read());
                for (final Map.Entry<TopicPartition, Long> e : sorted.entrySet()) {
                    out.println("checkpoint-file " + e.getKey().topic() + " "
                        + e.getKey().partition() + " " + e.getValue());
                }
            } else {
                out.println("checkpoint-file absent");
            }
            final HexFormat hex = HexFormat.of();
            try (TaskStore store = TaskStore.open(folder, options.applicationId(), options.task(),
                    options.store(), options.timestamped())) {
                final Long offset = store.committedOffset(options.changelog());
                out.println("store-offset " + options.changelog().topic() + " "
                    + options.changelog().partition() + " " + (offset == null ? "none" : offset));
                for (final TaskStore.Entry e : store.entries()) {
                    out.println("entry " + hex.formatHex(e.key()) + " " + hex.formatHex(e.value())
                        + " " + (e.timestamp() == null ? "-" : e.timestamp()));
                }
            }
        }
    }
}
