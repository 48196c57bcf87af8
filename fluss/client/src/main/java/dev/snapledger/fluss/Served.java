package dev.snapledger.fluss;

import com.alibaba.fluss.client.Connection;
import com.alibaba.fluss.client.ConnectionFactory;
import com.alibaba.fluss.client.lookup.Lookuper;
import com.alibaba.fluss.client.table.Table;
import com.alibaba.fluss.config.Configuration;
import com.alibaba.fluss.metadata.TablePath;
import com.alibaba.fluss.row.GenericRow;
import com.alibaba.fluss.row.InternalRow;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@code await}: the moment a table serves again (a restarted tablet server having restored its
 * buckets), seen by a client already running: the sampled rows looked up, with a new connection
 * each try so no stale leader is kept, until every one answers at the expected version.
 */
final class Served {
    static final long PAUSE_MS = 100;

    private Served() {}

    static List<Integer> sample(int[] range, int step) {
        List<Integer> ids = new ArrayList<>();
        for (int id = range[0]; id < range[1]; id += step) {
            ids.add(id);
        }
        if (range[1] > range[0] && ids.get(ids.size() - 1) != range[1] - 1) {
            ids.add(range[1] - 1);
        }
        return ids;
    }

    static void await(String bootstrap, TablePath path, List<Integer> ids, long version, int timeoutS)
            throws InterruptedException {
        Configuration conf = new Configuration();
        conf.setString("bootstrap.servers", bootstrap);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutS);
        int attempts = 0;
        String last = "no attempt";
        while (System.nanoTime() < deadline) {
            attempts++;
            try (Connection connection = ConnectionFactory.createConnection(conf);
                    Table table = connection.getTable(path)) {
                String missing = firstMissing(table.newLookup().createLookuper(), ids, version);
                if (missing == null) {
                    Probe.print(Probe.ordered("served_at_ms", System.currentTimeMillis(), "attempts", attempts,
                            "checked", ids.size()));
                    return;
                }
                last = missing;
            } catch (Exception e) {
                last = e.toString();
            }
            Thread.sleep(PAUSE_MS);
        }
        System.err.println("fluss-probe: not served after " + timeoutS + " s (" + attempts + " tries; last: "
                + last + ")");
        System.exit(3);
    }

    /** Null when every row is there at the version, else what is not. */
    private static String firstMissing(Lookuper lookuper, List<Integer> ids, long version) {
        List<CompletableFuture<com.alibaba.fluss.client.lookup.LookupResult>> pending = new ArrayList<>();
        for (int id : ids) {
            pending.add(lookuper.lookup(GenericRow.of(id)));
        }
        for (int i = 0; i < ids.size(); i++) {
            InternalRow row = pending.get(i).join().getSingletonRow();
            if (row == null) {
                return "row " + ids.get(i) + " missing";
            }
            if (row.getLong(2) != version) {
                return "row " + ids.get(i) + " at version " + row.getLong(2);
            }
        }
        return null;
    }
}
