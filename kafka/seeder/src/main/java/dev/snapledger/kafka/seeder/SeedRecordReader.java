package dev.snapledger.kafka.seeder;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Reads the seeder's input: the header {@code SLKS} and version byte 1, then per record a
 * big-endian int32 key length (1..MAX_KEY_BYTES), the key, an int32 value length
 * (-1 = tombstone, else 0..MAX_VALUE_BYTES), the value, and an int64 record timestamp (>= 0).
 * The stream ends after a whole record. docs/kafka-streams-format.md is the reference;
 * snapledger.kafka_streams.seed_format writes it.
 */
final class SeedRecordReader {
    static final byte[] MAGIC = "SLKS".getBytes(StandardCharsets.US_ASCII);
    static final int VERSION = 1;
    static final int MAX_KEY_BYTES = 1 << 20;
    static final int MAX_VALUE_BYTES = 16 << 20;
    static final int TOMBSTONE = -1;

    /** One changelog record: a null value is a tombstone (the key is deleted). */
    record SeedRecord(byte[] key, byte[] value, long timestamp) { }

    private final DataInputStream in;
    private long index;

    SeedRecordReader(final InputStream in) throws SeedException {
        this.in = new DataInputStream(in);
        final byte[] header = new byte[MAGIC.length + 1];
        try {
            this.in.readFully(header);
        } catch (final EOFException e) {
            throw new SeedException("the input is not a seeder record stream: it is shorter than"
                + " the 5-byte header (\"SLKS\" and the version 1); write it with"
                + " snapledger.kafka_streams.seed_format.encode_records");
        } catch (final IOException e) {
            throw new SeedException("cannot read the records from stdin: " + e.getMessage(), e);
        }
        if (!Arrays.equals(Arrays.copyOf(header, MAGIC.length), MAGIC)) {
            throw new SeedException("the input is not a seeder record stream: it does not start"
                + " with \"SLKS\"; write it with snapledger.kafka_streams.seed_format.encode_records");
        }
        if (header[MAGIC.length] != VERSION) {
            throw new SeedException("the record stream is version " + header[MAGIC.length]
                + "; this seeder reads version " + VERSION);
        }
    }

    /** The next record, or null at the end of the stream (which must fall between records). */
    SeedRecord next() throws SeedException {
        final int keyLength;
        try {
            final int first = in.read();
            if (first < 0) {
                return null;
            }
            keyLength = (first << 24) | (in.readUnsignedByte() << 16)
                | (in.readUnsignedByte() << 8) | in.readUnsignedByte();
            if (keyLength < 1 || keyLength > MAX_KEY_BYTES) {
                throw new SeedException(where() + "key length " + keyLength + " is outside 1.."
                    + MAX_KEY_BYTES + " (a changelog record always has a key)");
            }
            final byte[] key = new byte[keyLength];
            in.readFully(key);
            final int valueLength = in.readInt();
            if (valueLength < TOMBSTONE || valueLength > MAX_VALUE_BYTES) {
                throw new SeedException(where() + "value length " + valueLength
                    + " is outside -1 (tombstone)..." + MAX_VALUE_BYTES);
            }
            byte[] value = null;
            if (valueLength != TOMBSTONE) {
                value = new byte[valueLength];
                in.readFully(value);
            }
            final long timestamp = in.readLong();
            if (timestamp < 0) {
                throw new SeedException(where() + "timestamp " + timestamp
                    + " is negative; Kafka record timestamps are >= 0");
            }
            index++;
            return new SeedRecord(key, value, timestamp);
        } catch (final EOFException e) {
            throw new SeedException(where() + "the input ends inside the record (truncated"
                + " stream): nothing was written; send the whole stream again");
        } catch (final IOException e) {
            throw new SeedException("cannot read the records from stdin: " + e.getMessage(), e);
        }
    }

    private String where() {
        return "record " + index + " (counting from 0): ";
    }
}
