package dev.snapledger.totals;

import java.util.List;

/** An order's amount: the decimal text of a long (e.g. {@code "42"}, {@code "-7"}). */
final class Amounts {
    private Amounts() {}

    /** The amount, or nothing (and a {@code SKIPPED} line) when the value is not one. */
    static List<Long> parse(String value) {
        if (value == null) {
            Lines.emit("SKIPPED null value: an amount is the decimal text of a long");
            return List.of();
        }
        try {
            return List.of(Long.parseLong(value.trim()));
        } catch (NumberFormatException e) {
            Lines.emit("SKIPPED " + Json.string(value) + ": an amount is the decimal text of a long");
            return List.of();
        }
    }
}
