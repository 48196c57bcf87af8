package dev.snapledger.totals;

import java.util.List;

/**
 * An order's amount: the decimal text of a long (e.g. {@code "42"}, {@code "-7"}), or
 * {@code "delete"}: the customer's total is deleted (its changelog gets a tombstone).
 */
final class Amounts {
    /** What {@code "delete"} parses to; the text of Long.MIN_VALUE is no amount. */
    static final long DELETE = Long.MIN_VALUE;

    private Amounts() {}

    /** The new total: null (deleted) for {@link #DELETE}, else the sum. */
    static Long add(Long total, Long amount) {
        return amount == DELETE ? null : total + amount;
    }

    /** The amount, or nothing (and a {@code SKIPPED} line) when the value is not one. */
    static List<Long> parse(String value) {
        if (value == null) {
            Lines.emit("SKIPPED null value: an amount is the decimal text of a long");
            return List.of();
        }
        if (value.trim().equals("delete")) {
            return List.of(DELETE);
        }
        try {
            long amount = Long.parseLong(value.trim());
            if (amount == DELETE) {
                throw new NumberFormatException("Long.MIN_VALUE is reserved");
            }
            return List.of(amount);
        } catch (NumberFormatException e) {
            Lines.emit("SKIPPED " + Json.string(value) + ": an amount is the decimal text of a long");
            return List.of();
        }
    }
}
