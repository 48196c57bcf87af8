package dev.snapledger.fluss;

import com.alibaba.fluss.client.table.Table;
import com.alibaba.fluss.client.table.scanner.ScanRecord;
import com.alibaba.fluss.client.table.scanner.log.LogScanner;
import com.alibaba.fluss.client.table.scanner.log.ScanRecords;
import com.alibaba.fluss.client.table.writer.UpsertWriter;
import com.alibaba.fluss.metadata.TableBucket;
import com.alibaba.fluss.record.ChangeType;
import com.alibaba.fluss.row.GenericRow;
import com.alibaba.fluss.row.InternalRow;
import com.alibaba.fluss.types.RowType;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * Undoes what a writer wrote after the offsets it registered before writing: the changelog of a
 * primary-key table carries before-images, so the first record of a key at or after its bucket's
 * registered offset says what the key was before: {@code +I} (absent: delete it), {@code -U} or
 * {@code -D} (that row: upsert it back). The log is read up to each bucket's end offset taken
 * before the undo starts, so the undo's own writes are not read.
 */
final class Undo {
    record Result(long records, int restored, int removed) {}

    private static final Duration POLL = Duration.ofMillis(500);
    private static final long DEADLINE_MS = 120_000;

    private Undo() {}

    static Result run(Table table, Map<Integer, Long> from, Map<Integer, Long> ends) {
        RowType rowType = table.getTableInfo().getRowType();
        InternalRow.FieldGetter[] getters = InternalRow.createFieldGetters(rowType);
        Map<Integer, GenericRow> before = new HashMap<>(); // id -> the row before, null: absent
        Map<Integer, Boolean> seen = new HashMap<>();
        Map<Integer, Long> remaining = new HashMap<>();
        long records = 0;
        try (LogScanner scanner = table.newScan().createLogScanner()) {
            for (Map.Entry<Integer, Long> start : from.entrySet()) {
                long end = ends.getOrDefault(start.getKey(), 0L);
                if (end > start.getValue()) {
                    scanner.subscribe(start.getKey(), start.getValue());
                    remaining.put(start.getKey(), end);
                }
            }
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (!remaining.isEmpty()) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the changelog was not read up to its end offsets " + remaining
                            + " in " + DEADLINE_MS + " ms");
                }
                ScanRecords batch = scanner.poll(POLL);
                for (TableBucket bucket : batch.buckets()) {
                    Long end = remaining.get(bucket.getBucket());
                    for (ScanRecord record : batch.records(bucket)) {
                        if (end == null || record.logOffset() >= end) {
                            continue; // written after the undo started
                        }
                        records++;
                        InternalRow row = record.getRow();
                        int id = row.getInt(0);
                        if (seen.putIfAbsent(id, true) == null) {
                            ChangeType type = record.getChangeType();
                            before.put(id, type == ChangeType.INSERT ? null : copy(row, getters));
                        }
                        if (record.logOffset() >= end - 1) {
                            remaining.remove(bucket.getBucket());
                        }
                    }
                }
            }
        } catch (Exception e) {
            throw new IllegalStateException("reading the changelog failed: " + e, e);
        }
        UpsertWriter writer = table.newUpsert().createWriter();
        int restored = 0;
        int removed = 0;
        for (Map.Entry<Integer, GenericRow> entry : before.entrySet()) {
            if (entry.getValue() == null) {
                writer.delete(Probe.row(entry.getKey(), 0, 0));
                removed++;
            } else {
                writer.upsert(entry.getValue());
                restored++;
            }
        }
        writer.flush();
        return new Result(records, restored, removed);
    }

    private static GenericRow copy(InternalRow row, InternalRow.FieldGetter[] getters) {
        GenericRow copy = new GenericRow(getters.length);
        for (int i = 0; i < getters.length; i++) {
            copy.setField(i, getters[i].getFieldOrNull(row));
        }
        return copy;
    }
}
