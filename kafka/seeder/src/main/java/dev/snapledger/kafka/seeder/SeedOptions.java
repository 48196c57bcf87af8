package dev.snapledger.kafka.seeder;

import java.io.File;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.streams.errors.TaskIdFormatException;
import org.apache.kafka.streams.processor.TaskId;

/**
 * The options of {@code seed} and {@code dump}, checked before anything is written: the task
 * folder is {@code {state-dir}/{application-id}/{task}} and the changelog partition is the
 * task's partition of {@code {application-id}-{store}-changelog} unless named.
 */
record SeedOptions(File stateDir, String applicationId, TaskId task, String store,
                   TopicPartition changelog, Long offset, boolean timestamped,
                   boolean legacyCheckpoint, String bootstrapServers, long timeoutMs) {

    private static final Set<String> SEED = Set.of("--state-dir", "--application-id", "--task",
        "--store", "--changelog-topic", "--partition", "--offset", "--timestamped",
        "--legacy-checkpoint");
    private static final Set<String> DUMP = Set.of("--state-dir", "--application-id", "--task",
        "--store", "--changelog-topic", "--partition", "--timestamped");
    private static final Set<String> CATCH_UP = Set.of("--state-dir", "--application-id",
        "--task", "--store", "--changelog-topic", "--partition", "--timestamped",
        "--bootstrap-servers", "--timeout-ms", "--tasks");
    /** Tasks one catch-up brings up to date (--tasks): at most this many. */
    static final int MAX_TASKS = 10_000;
    /** How long catch-up may take to read up to the end offset: at most a day. */
    static final long MAX_TIMEOUT_MS = 86_400_000L;
    File applicationDir() {
        return new File(stateDir, applicationId);
    }

    File taskFolder() {
        return new File(applicationDir(), task.toString());
    }

    /**
     * catch-up's (and rewind's) options, one per task: {@code --tasks 0_0,0_1,...} (instead of {@code --task};
     * without {@code --partition}) names several, each caught up in turn by the same process.
     */
    static List<SeedOptions> perTask(final String command, final List<String> args)
            throws SeedException {
        final int at = args.indexOf("--tasks");
        if (at < 0 || at % 2 != 0) {
            return List.of(parse(command, args));
        }
        if (at + 1 >= args.size()) {
            throw new SeedException(command + ": option --tasks needs a value");
        }
        if (args.contains("--task") || args.contains("--partition")) {
            throw new SeedException(command + ": give --tasks alone, without --task or --partition"
                + " (a task's changelog partition is its partition)");
        }
        final List<String> tasks = List.of(args.get(at + 1).split(",", -1));
        if (tasks.size() > MAX_TASKS || Set.copyOf(tasks).size() != tasks.size()) {
            throw new SeedException("--tasks " + args.get(at + 1) + ": name 1.." + MAX_TASKS
                + " distinct tasks, comma-separated, e.g. 0_0,0_1");
        }
        final List<SeedOptions> out = new java.util.ArrayList<>();
        for (final String task : tasks) {
            final List<String> one = new java.util.ArrayList<>(args);
            one.set(at, "--task");
            one.set(at + 1, task);
            out.add(parse(command, one));
        }
        return out;
    }

    static SeedOptions parse(final String command, final List<String> args) throws SeedException {
        final boolean seed = command.equals("seed");
        final boolean reads = command.equals("catch-up") || command.equals("rewind");
        final Set<String> known = seed ? SEED : reads ? CATCH_UP : DUMP;
        final Map<String, String> given = new HashMap<>();
        for (int i = 0; i < args.size(); i += 2) {
            final String name = args.get(i);
            if (!known.contains(name)) {
                throw new SeedException(command + ": unknown option " + name + "; the options are "
                    + String.join(" ", known.stream().sorted().toList()));
            }
            if (i + 1 >= args.size()) {
                throw new SeedException(command + ": option " + name + " needs a value");
            }
            if (given.put(name, args.get(i + 1)) != null) {
                throw new SeedException(command + ": option " + name + " is given twice");
            }
        }
        final String applicationId = required(given, "--application-id");
        if (!applicationId.matches("[a-zA-Z0-9._-]+")) {
            throw new SeedException("--application-id " + applicationId + ": use letters, digits,"
                + " '.', '_' and '-' (it names a folder and prefixes the changelog topics)");
        }
        final TaskId task = parseTask(required(given, "--task"));
        final String store = required(given, "--store");
        if (store.isEmpty() || ".checkpoint".startsWith(store) || store.contains("/")) {
            throw new SeedException("--store " + store + ": not a store name (Kafka Streams refuses"
                + " a name that is a prefix of \".checkpoint\"; a name holds no '/')");
        }
        final String topic = given.getOrDefault("--changelog-topic",
            applicationId + "-" + store + "-changelog");
        try {
            Topic.validate(topic);
        } catch (final InvalidTopicException e) {
            throw new SeedException("--changelog-topic " + topic + ": " + e.getMessage());
        }
        if (given.containsKey("--partition")
            && parseLong(given.get("--partition"), "--partition") != task.partition()) {
            throw new SeedException("--partition " + given.get("--partition") + " but --task "
                + task + ": a task's changelog partition is the task's partition ("
                + task.partition() + ")");
        }
        Long offset = null;
        if (seed) {
            offset = parseLong(required(given, "--offset"), "--offset");
            if (offset < 0) {
                throw new SeedException("--offset " + offset + ": the changelog offset of the last"
                    + " record the snapshot reflects is >= 0");
            }
        }
        String bootstrapServers = null;
        long timeoutMs = 0;
        if (reads) {
            bootstrapServers = required(given, "--bootstrap-servers");
            timeoutMs = parseLong(given.getOrDefault("--timeout-ms", "600000"), "--timeout-ms");
            if (timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
                throw new SeedException("--timeout-ms " + timeoutMs + ": give 1.." + MAX_TIMEOUT_MS
                    + " (how long reading the changelog up to its end offset may take)");
            }
        }
        return new SeedOptions(new File(required(given, "--state-dir")), applicationId, task,
            store, new TopicPartition(topic, task.partition()), offset,
            parseBoolean(given.getOrDefault("--timestamped", "true"), "--timestamped"),
            parseBoolean(given.getOrDefault("--legacy-checkpoint", "false"), "--legacy-checkpoint"),
            bootstrapServers, timeoutMs);
    }

    private static TaskId parseTask(final String text) throws SeedException {
        if (!text.matches("\\d+_\\d+")) {
            throw new SeedException("--task " + text + ": a task is {subtopology}_{partition},"
                + " for example 0_3");
        }
        try {
            return TaskId.parse(text);
        } catch (final TaskIdFormatException | NumberFormatException e) {
            throw new SeedException("--task " + text + ": the numbers are too large for a task id");
        }
    }

    private static String required(final Map<String, String> given, final String name)
            throws SeedException {
        final String value = given.get(name);
        if (value == null) {
            throw new SeedException("option " + name + " is required");
        }
        return value;
    }

    private static long parseLong(final String text, final String name) throws SeedException {
        try {
            return Long.parseLong(text);
        } catch (final NumberFormatException e) {
            throw new SeedException(name + " " + text + ": not a whole number (int64)");
        }
    }

    private static boolean parseBoolean(final String text, final String name) throws SeedException {
        if (text.equals("true") || text.equals("false")) {
            return text.equals("true");
        }
        throw new SeedException(name + " " + text + ": give true or false");
    }
}
