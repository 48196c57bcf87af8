package dev.snapledger.kafka.seeder;

import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * {@code seed} writes one Kafka Streams task folder from a record stream on stdin;
 * {@code dump} prints one; {@code catch-up} brings one's store (or, with {@code --tasks}, each
 * named task's, in one JVM) to its changelog's end offset; {@code rewind} makes each named
 * task's changelog agree with the generation snapshot in its folder (ChangelogRewind); {@code serve}
 * runs catch-up requests read from stdin in one resident JVM (SeederServer). Exit 0 done, 2 refused (the message says why and what to do),
 * 1 an unexpected failure. docs/kafka-streams-format.md documents both.
 */
public final class SeederMain {
    static final String USAGE = "usage: kafka-seeder seed --state-dir D --application-id A"
        + " --task 0_3 --store totals --offset N [--changelog-topic T] [--partition 3]"
        + " [--timestamped true|false] [--legacy-checkpoint true|false] < records\n"
        + "       kafka-seeder dump --state-dir D --application-id A --task 0_3 --store totals"
        + " [--changelog-topic T] [--partition 3] [--timestamped true|false]\n"
        + "       kafka-seeder catch-up --state-dir D --application-id A --task 0_3|--tasks 0_0,0_1"
        + " --store totals --bootstrap-servers B [--changelog-topic T] [--partition 3]"
        + " [--timestamped true|false] [--timeout-ms 600000]\n"
        + "       kafka-seeder rewind --state-dir D --application-id A --tasks 0_0,0_1"
        + " --store totals --bootstrap-servers B [--timeout-ms 600000]"
        + " < lines 'task topic:partition:offset,...'\n"
        + "       kafka-seeder serve < lines of tab-separated catch-up arguments";
    private static final List<String> COMMANDS = List.of("seed", "dump", "catch-up", "rewind",
        "serve");

    private SeederMain() { }

    public static void main(final String[] args) {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        System.exit(run(args));
    }

    static int run(final String[] args) {
        if (args.length == 0 || !COMMANDS.contains(args[0])) {
            System.err.println(USAGE);
            return 2;
        }
        if (args[0].equals("serve")) {
            if (args.length > 1) {
                System.err.println("kafka-seeder serve: error: it takes no arguments (its"
                    + " requests come on stdin)\n" + USAGE);
                return 2;
            }
            try {
                return SeederServer.serve(new BufferedReader(new InputStreamReader(
                    System.in, StandardCharsets.UTF_8)), System.out);
            } catch (final IOException e) {
                System.err.println("kafka-seeder serve: failed: " + e);
                return 1;
            }
        }
        final List<String> rest = Arrays.asList(args).subList(1, args.length);
        try {
            final boolean perTask = args[0].equals("catch-up") || args[0].equals("rewind");
            final SeedOptions options = perTask
                ? SeedOptions.perTask(args[0], rest).get(0) : SeedOptions.parse(args[0], rest);
            if (args[0].equals("seed")) {
                final TaskFolderSeeder.Outcome outcome = TaskFolderSeeder.seed(
                    options, new BufferedInputStream(System.in, 1 << 16));
                System.out.println("seeded " + options.taskFolder() + ": " + outcome.records()
                    + " records (" + outcome.tombstones() + " tombstones), store "
                    + options.store() + " at changelog " + options.changelog() + " offset "
                    + options.offset());
            } else if (args[0].equals("catch-up")) {
                // One JVM and one consumer for every task named (--tasks): one line each, in
                // their order.
                try (var consumer = ChangelogCatchUp.consumer(options.bootstrapServers())) {
                    for (final SeedOptions each : SeedOptions.perTask("catch-up", rest)) {
                        System.out.println(ChangelogCatchUp.run(each, consumer).json());
                    }
                }
            } else if (args[0].equals("rewind")) {
                final var positions = ChangelogRewind.readPositions(System.in);
                for (final SeedOptions each : SeedOptions.perTask("rewind", rest)) {
                    System.out.println(ChangelogRewind.run(each, positions).json());
                }
            } else {
                TaskFolderDump.dump(options, System.out);
            }
            return 0;
        } catch (final SeedException e) {
            System.err.println("kafka-seeder " + args[0] + ": error: " + e.getMessage());
            return 2;
        } catch (final Exception e) {
            System.err.println("kafka-seeder " + args[0] + ": failed: " + e);
            e.printStackTrace(System.err);
            return 1;
        }
    }
}
