package dev.snapledger.totals;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.TreeMap;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * {@code GET /totals}: every key of this instance's local {@code totals} stores (all its
 * active tasks) as one JSON object of longs; 503 with the reason while they cannot be queried
 * (the instance is not RUNNING).
 */
final class TotalsHttp {
    private final HttpServer server;

    private TotalsHttp(HttpServer server) {
        this.server = server;
    }

    static TotalsHttp start(KafkaStreams streams, InetSocketAddress address) throws IOException {
        HttpServer server = HttpServer.create(address, 0);
        server.createContext("/totals", exchange -> serve(streams, exchange));
        server.start();
        return new TotalsHttp(server);
    }

    int port() {
        return server.getAddress().getPort();
    }

    void stop() {
        server.stop(0);
    }

    private static void serve(KafkaStreams streams, HttpExchange exchange) throws IOException {
        try (exchange) {
            if (!"GET".equals(exchange.getRequestMethod())) {
                reply(exchange, 405, "only GET /totals\n");
                return;
            }
            TreeMap<String, Long> totals = new TreeMap<>();
            try {
                ReadOnlyKeyValueStore<String, Long> store = streams.store(
                        StoreQueryParameters.fromNameAndType(TotalsApp.STORE, QueryableStoreTypes.keyValueStore()));
                try (KeyValueIterator<String, Long> all = store.all()) {
                    while (all.hasNext()) {
                        KeyValue<String, Long> entry = all.next();
                        totals.put(entry.key, entry.value);
                    }
                }
            } catch (InvalidStateStoreException e) {
                reply(exchange, 503, "store not queryable (state " + streams.state() + "): " + e.getMessage() + "\n");
                return;
            }
            reply(exchange, 200, Json.object(totals));
        }
    }

    private static void reply(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", status == 200 ? "application/json" : "text/plain");
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }
}
