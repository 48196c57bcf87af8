package dev.snapledger.totals;

import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.processor.StandbyUpdateListener;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;

/**
 * The machine-readable lines on stdout, one event each, fields separated by one space:
 *
 * <pre>
 * HTTP port
 * STATE newState oldState
 * TASKS task,task,...            (this instance's active tasks, when it turns RUNNING)
 * RESTORED store topic partition count startOffset endOffset
 * SUSPENDED store topic partition count   (a restore stopped before its end)
 * STANDBY store topic partition count batchEndOffset   (records a standby or warm-up task
 *                                                      loaded: one line per batch)
 * SKIPPED "value": reason
 * ERROR exception: message
 * STOPPED clean|timeout
 * </pre>
 *
 * A store partition whose local state is already at its changelog's end prints a count of 0
 * (seen with Kafka Streams 4.4.0), or no line.
 */
final class Lines {
    private Lines() {}

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void listen(KafkaStreams streams) {
        streams.setStateListener((newState, oldState) -> {
            emit("STATE " + newState + " " + oldState);
            if (newState == KafkaStreams.State.RUNNING) {
                TreeSet<String> tasks = new TreeSet<>();
                for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                    for (TaskMetadata task : thread.activeTasks()) {
                        tasks.add(task.taskId().toString());
                    }
                }
                emit("TASKS " + String.join(",", tasks));
            }
        });
        streams.setGlobalStateRestoreListener(new Restores());
        streams.setStandbyUpdateListener(new Standbys());
    }

    /** A standby (or KIP-441 warm-up) task's loads: not restores, so not in RESTORED lines. */
    private static final class Standbys implements StandbyUpdateListener {
        @Override
        public void onUpdateStart(TopicPartition partition, String store, long startingOffset) {}

        @Override
        public void onBatchLoaded(TopicPartition partition, String store, TaskId task, long batchEndOffset,
                long batchSize, long currentEndOffset) {
            emit(String.join(" ", "STANDBY", store, partition.topic(), Integer.toString(partition.partition()),
                    Long.toString(batchSize), Long.toString(batchEndOffset)));
        }

        @Override
        public void onUpdateSuspended(TopicPartition partition, String store, long storeOffset, long currentEndOffset,
                SuspendReason reason) {}
    }

    /** Counts each store partition's restored records from start to end. */
    private static final class Restores implements StateRestoreListener {
        private record Key(String store, TopicPartition partition) {}

        private final Map<Key, long[]> progress = new ConcurrentHashMap<>();

        @Override
        public void onRestoreStart(TopicPartition partition, String store, long startOffset, long endOffset) {
            progress.put(new Key(store, partition), new long[] {0L, startOffset, endOffset});
        }

        @Override
        public void onBatchRestored(TopicPartition partition, String store, long batchEndOffset, long numRestored) {
            progress.computeIfAbsent(new Key(store, partition), k -> new long[] {0L, -1L, -1L})[0] += numRestored;
        }

        @Override
        public void onRestoreEnd(TopicPartition partition, String store, long totalRestored) {
            long[] seen = progress.remove(new Key(store, partition));
            long start = seen == null ? -1L : seen[1];
            long end = seen == null ? -1L : seen[2];
            emit(String.join(" ", "RESTORED", store, partition.topic(), Integer.toString(partition.partition()),
                    Long.toString(totalRestored), Long.toString(start), Long.toString(end)));
        }

        @Override
        public void onRestoreSuspended(TopicPartition partition, String store, long totalRestored) {
            progress.remove(new Key(store, partition));
            emit(String.join(" ", "SUSPENDED", store, partition.topic(), Integer.toString(partition.partition()),
                    Long.toString(totalRestored)));
        }
    }
}
