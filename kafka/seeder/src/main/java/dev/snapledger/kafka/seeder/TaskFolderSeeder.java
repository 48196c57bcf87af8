package dev.snapledger.kafka.seeder;

import dev.snapledger.kafka.seeder.SeedRecordReader.SeedRecord;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.state.internals.OffsetCheckpoint;

/**
 * Writes one task folder: the store's RocksDB from the records, then the changelog offset it
 * reflects inside the store (the offsets column family, as Kafka Streams 4.4 commits it) and,
 * on request, in the legacy {@code .checkpoint} file too. Everything is written in a sibling
 * folder whose name Kafka Streams ignores and renamed into place when complete.
 */
final class TaskFolderSeeder {
    static final int BATCH = 10_000;

    /** What a seed did, for the summary line. */
    record Outcome(long records, long tombstones) { }

    private TaskFolderSeeder() { }

    static Outcome seed(final SeedOptions options, final InputStream input)
            throws SeedException, IOException {
        final File target = options.taskFolder();
        try (ApplicationDirLock ignored = ApplicationDirLock.acquire(options.applicationDir())) {
            refuseNonEmpty(target);
            final File staging = new File(options.applicationDir(),
                ".seeding-" + options.task() + "-" + UUID.randomUUID());
            try {
                final Outcome outcome = write(options, staging, input);
                if (target.exists()) {
                    Files.delete(target.toPath()); // empty: refuseNonEmpty checked it
                }
                Files.move(staging.toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE);
                Utils.flushDir(options.applicationDir().toPath());
                return outcome;
            } finally {
                if (staging.exists()) {
                    Utils.delete(staging);
                }
            }
        }
    }

    private static void refuseNonEmpty(final File target) throws SeedException {
        if (!target.exists()) {
            return;
        }
        final String[] inside = target.list();
        if (inside == null) {
            throw new SeedException(target + " exists and is not a folder: remove it first");
        }
        if (inside.length > 0) {
            throw new SeedException("refusing to seed " + target + ": the task folder is not"
                + " empty (" + inside.length + " entries, e.g. " + inside[0] + "); seeding only"
                + " fills an empty state directory: delete the folder if its state is stale");
        }
    }

    private static Outcome write(final SeedOptions options, final File staging,
                                 final InputStream input) throws SeedException, IOException {
        Files.createDirectory(staging.toPath());
        final SeedRecordReader reader = new SeedRecordReader(input);
        long count = 0;
        long tombstones = 0;
        try (TaskStore store = TaskStore.open(staging, options.applicationId(), options.task(),
                options.store(), options.timestamped())) {
            final List<SeedRecord> batch = new ArrayList<>(BATCH);
            for (SeedRecord r = reader.next(); r != null; r = reader.next()) {
                batch.add(r);
                count++;
                tombstones += r.value() == null ? 1 : 0;
                if (batch.size() == BATCH) {
                    store.apply(batch);
                    batch.clear();
                }
            }
            store.apply(batch);
            store.commit(options.changelog(), options.offset());
        }
        if (options.legacyCheckpoint()) {
            new OffsetCheckpoint(new File(staging, ".checkpoint"))
                .write(Map.of(options.changelog(), options.offset()));
        }
        return new Outcome(count, tombstones);
    }
}
