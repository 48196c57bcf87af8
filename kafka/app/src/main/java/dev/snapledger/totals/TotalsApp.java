package dev.snapledger.totals;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Totals per customer: reads {@code orders} (key = customer id, value = an amount as the
 * decimal text of a long, or "delete": the key's total is deleted), sums the amounts per key into
 * the persistent RocksDB store
 * {@code totals} (changelog {@code {application.id}-totals-changelog}) and writes each new
 * total to {@code totals-output}. An ordinary Kafka Streams application: nothing in it
 * knows about snapshots.
 *
 * <p>For the tests and the demo it prints machine-readable lines to stdout (see {@link
 * Lines}) and serves {@code GET /totals} on a loopback port: every key of this instance's
 * local {@code totals} stores as one JSON object.
 */
public final class TotalsApp {
    public static final String STORE = "totals";

    private TotalsApp() {}

    /** The topology: kept apart from {@link #main} so it reads as what users write. */
    static Topology topology(String inputTopic, String outputTopic) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(inputTopic, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(Amounts::parse)
                .groupByKey(Grouped.with(Serdes.String(), Serdes.Long()))
                .aggregate(
                        () -> 0L,
                        (customer, amount, total) -> Amounts.add(total, amount),
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
                                .withKeySerde(Serdes.String())
                                .withValueSerde(Serdes.Long()))
                .toStream()
                .to(outputTopic, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        Options options;
        try {
            options = Options.parse(args, System.getenv());
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.println(Options.USAGE);
            System.exit(2);
            return;
        }
        if (options.help()) {
            System.out.println(Options.USAGE);
            return;
        }
        Properties props = streamsProperties(options);
        KafkaStreams streams = new KafkaStreams(topology(options.inputTopic(), options.outputTopic()), props);
        Lines.listen(streams);
        TotalsHttp http = TotalsHttp.start(streams, new InetSocketAddress("127.0.0.1", options.httpPort()));
        Lines.emit("HTTP " + http.port());

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // close() commits and writes each store's offsets: the next start resumes after them.
            // Leaving the group lets the next instance take the tasks at once instead of after
            // this member's session timeout.
            boolean clean = streams.close(CloseOptions.groupMembershipOperation(
                    CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(60)));
            http.stop();
            Lines.emit("STOPPED " + (clean ? "clean" : "timeout"));
            stopped.countDown();
        }, "totals-shutdown"));
        streams.setUncaughtExceptionHandler(e -> {
            Lines.emit("ERROR " + e.getClass().getName() + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();
        stopped.await();
    }

    static Properties streamsProperties(Options options) throws IOException {
        Properties props = new Properties();
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        if (options.configFile() != null) {
            try (InputStream in = Files.newInputStream(Path.of(options.configFile()))) {
                props.load(in);
            }
        }
        for (Map.Entry<String, String> entry : options.overrides().entrySet()) {
            props.put(entry.getKey(), entry.getValue());
        }
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, options.bootstrapServers());
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, options.applicationId());
        props.put(StreamsConfig.STATE_DIR_CONFIG, options.stateDir());
        return props;
    }
}
