package dev.snapledger.kafka.seeder;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * {@code serve}: a resident seeder, so a process that catches stores up again and again (the
 * snapshot sidecar) pays the JVM's start, its classes' loading and a consumer's set-up once.
 * It reads one request per line on stdin: the arguments of a {@code catch-up} command,
 * separated by tabs ({@code catch-up<TAB>--state-dir<TAB>D<TAB>...}). It runs each as that
 * command would, prints its JSON lines, then one last line: {@code {"served":0}} (done),
 * {@code {"served":2,"error":"..."}} (refused: the message says why and what to do) or
 * {@code {"served":1,"error":"..."}} (an unexpected failure; its stack trace on stderr). One
 * consumer per bootstrap servers serves every request (after a failure it is closed and made
 * again). The end of stdin stops it (exit 0).
 */
final class SeederServer {
    private final Map<String, KafkaConsumer<byte[], byte[]>> consumers = new HashMap<>();
    private final PrintStream out;

    private SeederServer(final PrintStream out) {
        this.out = out;
    }

    static int serve(final BufferedReader in, final PrintStream out) throws IOException {
        final SeederServer server = new SeederServer(out);
        try {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.isBlank()) {
                    out.println(server.answer(List.of(line.split("\t", -1))));
                    out.flush();
                }
            }
        } finally {
            server.closeConsumers();
        }
        return 0;
    }

    private String answer(final List<String> request) {
        if (!request.get(0).equals("catch-up")) {
            return served(2, "kafka-seeder serve: error: it serves catch-up requests (a line"
                + " of tab-separated arguments beginning with catch-up), not " + request.get(0));
        }
        try {
            for (final SeedOptions each
                    : SeedOptions.perTask("catch-up", request.subList(1, request.size()))) {
                final KafkaConsumer<byte[], byte[]> consumer = consumers.computeIfAbsent(
                    each.bootstrapServers(), ChangelogCatchUp::consumer);
                out.println(ChangelogCatchUp.run(each, consumer).json());
            }
            return served(0, null);
        } catch (final SeedException e) {
            return served(2, "kafka-seeder catch-up: error: " + e.getMessage());
        } catch (final Exception e) {
            closeConsumers(); // in a state no one knows: made again by the next request
            e.printStackTrace(System.err);
            return served(1, "kafka-seeder catch-up: failed: " + e);
        }
    }

    private void closeConsumers() {
        for (final KafkaConsumer<byte[], byte[]> consumer : consumers.values()) {
            try {
                consumer.close();
            } catch (final RuntimeException e) {
                System.err.println("kafka-seeder serve: closing a consumer failed: " + e);
            }
        }
        consumers.clear();
    }

    static String served(final int status, final String error) {
        return error == null ? "{\"served\":" + status + "}"
            : "{\"served\":" + status + ",\"error\":" + jsonString(error) + "}";
    }

    static String jsonString(final String text) {
        final StringBuilder quoted = new StringBuilder("\"");
        for (final char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                quoted.append('\\').append(c);
            } else if (c < 0x20) {
                quoted.append(String.format("\\u%04x", (int) c));
            } else {
                quoted.append(c);
            }
        }
        return quoted.append('"').toString();
    }
}
