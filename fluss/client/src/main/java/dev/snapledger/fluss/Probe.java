package dev.snapledger.fluss;

import com.alibaba.fluss.client.Connection;
import com.alibaba.fluss.client.ConnectionFactory;
import com.alibaba.fluss.client.admin.Admin;
import com.alibaba.fluss.client.admin.OffsetSpec;
import com.alibaba.fluss.client.lookup.LookupResult;
import com.alibaba.fluss.client.lookup.Lookuper;
import com.alibaba.fluss.client.metadata.KvSnapshotMetadata;
import com.alibaba.fluss.client.metadata.KvSnapshots;
import com.alibaba.fluss.client.table.Table;
import com.alibaba.fluss.client.table.writer.UpsertWriter;
import com.alibaba.fluss.config.Configuration;
import com.alibaba.fluss.fs.FsPathAndFileName;
import com.alibaba.fluss.metadata.DatabaseDescriptor;
import com.alibaba.fluss.metadata.Schema;
import com.alibaba.fluss.metadata.TableBucket;
import com.alibaba.fluss.metadata.TableDescriptor;
import com.alibaba.fluss.metadata.TablePath;
import com.alibaba.fluss.row.GenericRow;
import com.alibaba.fluss.row.InternalRow;
import com.alibaba.fluss.types.DataTypes;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;

/**
 * A Fluss 0.7 client for snapledger's tests: every command takes {@code --bootstrap host:port}
 * and {@code --table db.table} and prints one JSON object per line on stdout (the client's log goes
 * to stderr). Rows are {@code (id INT primary key, name STRING, v BIGINT, payload STRING)}, the row
 * of id k at version V being {@code (k, "k<k>", V, <payload-bytes> x 'p')}.
 */
public final class Probe {
    static final String USAGE = String.join("\n",
            "usage: java -jar fluss-probe.jar COMMAND --bootstrap HOST:PORT --table DB.TABLE [options]",
            "  create   --buckets N                       a primary-key table (database created too): {\"table_id\",\"buckets\"}",
            "  upsert   --from A --to B --version V [--payload-bytes N]   rows A..B-1: {\"upserted\"}",
            "  delete   --from A --to B                   rows A..B-1: {\"deleted\"}",
            "  read     --from A --to B                   lookups issued at once: one {\"id\",\"name\",\"v\",\"payload_bytes\"} per present row, then {\"present\",\"missing\"}",
            "  snapshots                                  the latest KV snapshot of each bucket: {\"bucket\",\"snapshot_id\",\"log_offset\",\"files\"}",
            "  offsets                                    each bucket's log end offset: {\"bucket\",\"offset\"}",
            "  write    --from A --to B --version V --delete-from C --delete-to D   upserts then deletes, flushes,",
            "           prints {\"written\",\"deleted\"} and waits (a job before its first checkpoint) until killed",
            "  undo     --offsets 0=12,1=40,...           undoes every change after those offsets from the changelog's",
            "           before-images: {\"records\",\"restored\",\"removed\"}",
            "  await    --from A --to B --step K --version V [--timeout-s T]   looks up rows A, A+K, ... and B-1 (a new",
            "           connection each try, 100 ms apart) until every one is there at version V: {\"served_at_ms\",\"attempts\"}",
            "           (the wall clock's epoch milliseconds); exit 3 after T seconds (600 by default)",
            "  drop                                       drops the table: {\"dropped\"}");

    private Probe() {}

    public static void main(String[] args) throws Exception {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("-help")) {
            System.out.println(USAGE);
            return;
        }
        try {
            Args options = new Args(args, 1);
            Configuration conf = new Configuration();
            conf.setString("bootstrap.servers", options.text("bootstrap"));
            TablePath path = tablePath(options.text("table"));
            Action action = parse(args[0], options);
            if (args[0].equals("await")) {
                action.run(null, path); // its own connections: none can be made while no server is up
            } else {
                try (Connection connection = ConnectionFactory.createConnection(conf)) {
                    action.run(connection, path);
                }
            }
        } catch (Args.UsageError e) {
            System.err.println("fluss-probe: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
        }
        System.exit(0);
    }

    private static TablePath tablePath(String text) {
        String[] parts = text.split("\\.", 2);
        if (parts.length != 2 || parts[0].isEmpty() || parts[1].isEmpty()) {
            throw new Args.UsageError("--table is DB.TABLE (e.g. probe.rows), got '" + text + "'");
        }
        return TablePath.of(parts[0], parts[1]);
    }

    /** A command with its options parsed: run once connected. */
    @FunctionalInterface
    interface Action {
        void run(Connection connection, TablePath path) throws Exception;
    }

    /** The command's options are all read here, before any connection is made. */
    private static Action parse(String command, Args options) {
        switch (command) {
            case "create" -> {
                int buckets = options.integer("buckets", 1, 1024);
                return (connection, path) -> create(connection.getAdmin(), path, buckets);
            }
            case "upsert" -> {
                int[] range = range(options);
                long version = options.number("version", 0, Long.MAX_VALUE);
                int payloadBytes = options.integer("payload-bytes", 100, 0, 1 << 20);
                return (connection, path) -> {
                    try (Table table = connection.getTable(path)) {
                        print(Map.of("upserted", upsert(table, range, version, payloadBytes)));
                    }
                };
            }
            case "delete" -> {
                int[] range = range(options);
                return (connection, path) -> {
                    try (Table table = connection.getTable(path)) {
                        print(Map.of("deleted", delete(table, range)));
                    }
                };
            }
            case "read" -> {
                int[] range = range(options);
                return (connection, path) -> {
                    try (Table table = connection.getTable(path)) {
                        read(table, range);
                    }
                };
            }
            case "snapshots" -> {
                return (connection, path) -> snapshots(connection.getAdmin(), path);
            }
            case "offsets" -> {
                return (connection, path) -> offsets(connection.getAdmin(), path)
                        .forEach((b, o) -> print(ordered("bucket", b, "offset", o)));
            }
            case "write" -> {
                int[] range = range(options);
                long version = options.number("version", 0, Long.MAX_VALUE);
                int from = options.integer("delete-from", 0, Integer.MAX_VALUE);
                int to = options.integer("delete-to", from, Integer.MAX_VALUE);
                return (connection, path) -> {
                    try (Table table = connection.getTable(path)) {
                        int written = upsert(table, range, version, 100);
                        int deleted = delete(table, new int[] {from, to});
                        print(ordered("written", written, "deleted", deleted));
                        Thread.sleep(Long.MAX_VALUE); // no checkpoint ever comes: the test kills it
                    }
                };
            }
            case "undo" -> {
                Map<Integer, Long> from = options.offsets("offsets");
                return (connection, path) -> {
                    try (Table table = connection.getTable(path)) {
                        Map<Integer, Long> ends = offsets(connection.getAdmin(), path);
                        Undo.Result result = Undo.run(table, from, ends);
                        print(ordered("records", result.records(), "restored", result.restored(),
                                "removed", result.removed()));
                    }
                };
            }
            case "await" -> {
                int[] range = range(options);
                int step = options.integer("step", 1, 1, Integer.MAX_VALUE);
                long version = options.number("version", 0, Long.MAX_VALUE);
                int timeoutS = options.integer("timeout-s", 600, 1, 3600);
                String bootstrap = options.text("bootstrap");
                return (connection, path) -> Served.await(bootstrap, path, Served.sample(range, step), version,
                        timeoutS);
            }
            case "drop" -> {
                return (connection, path) -> {
                    connection.getAdmin().dropTable(path, false).get();
                    print(Map.of("dropped", path.toString()));
                };
            }
            default -> throw new Args.UsageError("unknown command '" + command + "'");
        }
    }

    private static int[] range(Args options) {
        int from = options.integer("from", 0, Integer.MAX_VALUE);
        int to = options.integer("to", from, Integer.MAX_VALUE);
        return new int[] {from, to};
    }

    private static void create(Admin admin, TablePath path, int buckets) throws Exception {
        admin.createDatabase(path.getDatabaseName(), DatabaseDescriptor.EMPTY, true).get();
        Schema schema = Schema.newBuilder()
                .column("id", DataTypes.INT())
                .column("name", DataTypes.STRING())
                .column("v", DataTypes.BIGINT())
                .column("payload", DataTypes.STRING())
                .primaryKey("id")
                .build();
        TableDescriptor descriptor = TableDescriptor.builder().schema(schema).distributedBy(buckets, "id").build();
        admin.createTable(path, descriptor, true).get();
        long tableId = admin.getTableInfo(path).get().getTableId();
        print(ordered("table_id", tableId, "buckets", buckets));
    }

    static GenericRow row(int id, long version, int payloadBytes) {
        return GenericRow.of(id, com.alibaba.fluss.row.BinaryString.fromString("k" + id), version,
                com.alibaba.fluss.row.BinaryString.fromString("p".repeat(payloadBytes)));
    }

    private static int upsert(Table table, int[] range, long version, int payloadBytes) {
        UpsertWriter writer = table.newUpsert().createWriter();
        for (int id = range[0]; id < range[1]; id++) {
            writer.upsert(row(id, version, payloadBytes));
        }
        writer.flush();
        return range[1] - range[0];
    }

    private static int delete(Table table, int[] range) {
        UpsertWriter writer = table.newUpsert().createWriter();
        for (int id = range[0]; id < range[1]; id++) {
            writer.delete(row(id, 0, 0));
        }
        writer.flush();
        return range[1] - range[0];
    }

    private static void read(Table table, int[] range) {
        Lookuper lookuper = table.newLookup().createLookuper();
        List<CompletableFuture<LookupResult>> pending = new ArrayList<>();
        for (int id = range[0]; id < range[1]; id++) {
            pending.add(lookuper.lookup(GenericRow.of(id)));
        }
        int present = 0;
        for (CompletableFuture<LookupResult> future : pending) {
            InternalRow row = future.join().getSingletonRow();
            if (row != null) {
                present++;
                print(ordered("id", row.getInt(0), "name", row.getString(1).toString(), "v", row.getLong(2),
                        "payload_bytes", row.getString(3).toString().length()));
            }
        }
        print(ordered("present", present, "missing", pending.size() - present));
    }

    private static void snapshots(Admin admin, TablePath path) throws Exception {
        KvSnapshots latest = admin.getLatestKvSnapshots(path).get();
        for (int bucket : latest.getBucketIds().stream().sorted().toList()) {
            OptionalLong id = latest.getSnapshotId(bucket);
            if (id.isEmpty()) {
                print(ordered("bucket", bucket, "snapshot_id", null, "log_offset", null, "files", List.of()));
                continue;
            }
            KvSnapshotMetadata metadata = admin.getKvSnapshotMetadata(
                    new TableBucket(latest.getTableId(), bucket), id.getAsLong()).get();
            List<String> files = new ArrayList<>();
            for (FsPathAndFileName file : metadata.getSnapshotFiles()) {
                files.add(file.getPath().toString());
            }
            print(ordered("bucket", bucket, "snapshot_id", id.getAsLong(), "log_offset", metadata.getLogOffset(),
                    "files", files));
        }
    }

    static Map<Integer, Long> offsets(Admin admin, TablePath path) throws Exception {
        int buckets = admin.getTableInfo(path).get().getNumBuckets();
        List<Integer> ids = IntStream.range(0, buckets).boxed().toList();
        return new TreeMap<>(admin.listOffsets(path, ids, new OffsetSpec.LatestSpec()).all().get());
    }

    static Map<String, Object> ordered(Object... pairs) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            out.put((String) pairs[i], pairs[i + 1]);
        }
        return out;
    }

    static void print(Map<String, ?> fields) {
        System.out.println(Json.object(fields));
        System.out.flush();
    }
}
