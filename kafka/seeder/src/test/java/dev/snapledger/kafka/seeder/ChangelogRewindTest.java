package dev.snapledger.kafka.seeder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.streams.query.Position;
import org.junit.jupiter.api.Test;

/**
 * {@code rewind}'s input (the generation's position per task, on stdin) and the headers of
 * the compensating records it appends: read back as catch-up reads a changelog record, they
 * give the generation's position (so a snapshot cut after them names its input offsets).
 */
class ChangelogRewindTest {
    static Map<String, Position> read(final String stdin) throws Exception {
        return ChangelogRewind.readPositions(
            new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void readsOnePositionPerTaskSkippingBlankLines() throws Exception {
        final Map<String, Position> positions =
            read("0_0 orders:0:41,refunds-v2:0:7\n\n0_3 orders:3:1234\n");

        assertEquals(Position.fromMap(Map.of("orders", Map.of(0, 41L), "refunds-v2", Map.of(0, 7L))),
            positions.get("0_0"));
        assertEquals(Position.fromMap(Map.of("orders", Map.of(3, 1234L))), positions.get("0_3"));
        assertEquals(2, positions.size());
    }

    @Test
    void refusesALineThatIsNotTaskAndComponents() {
        final SeedException e = assertThrows(SeedException.class, () -> read("0_0\n"));
        assertTrue(e.getMessage().contains("give 'task topic:partition:offset[,...]'"),
            e.getMessage());
    }

    @Test
    void refusesAComponentThatIsNotTopicPartitionOffset() {
        for (final String bad : new String[] {"orders:3", "orders:x:5", "orders:3:five"}) {
            final SeedException e = assertThrows(SeedException.class, () -> read("0_3 " + bad));
            assertEquals("rewind: " + bad + ": not topic:partition:offset", e.getMessage());
        }
    }

    @Test
    void refusesATaskGivenTwice() {
        final SeedException e = assertThrows(SeedException.class,
            () -> read("0_3 orders:3:1\n0_3 orders:3:2\n"));
        assertEquals("rewind: task 0_3 is given twice on stdin", e.getMessage());
    }

    @Test
    void compensatingHeadersReadBackAsTheGenerationsPosition() throws Exception {
        final Position generation =
            Position.fromMap(Map.of("orders", Map.of(3, 1234L), "refunds", Map.of(3, 9L)));
        final ConsumerRecord<byte[], byte[]> record = new ConsumerRecord<>("app-totals-changelog",
            3, 77L, 1L, TimestampType.CREATE_TIME, 1, 8, "k".getBytes(StandardCharsets.UTF_8),
            new byte[8], ChangelogRewind.positionHeaders(generation), Optional.empty());

        assertEquals(generation, ChangelogCatchUp.position(record));
        assertEquals("{\"orders\":{\"3\":1234},\"refunds\":{\"3\":9}}",
            ChangelogCatchUp.positionJson(ChangelogCatchUp.position(record)));
    }
}
