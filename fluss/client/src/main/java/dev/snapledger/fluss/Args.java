package dev.snapledger.fluss;

import java.util.HashMap;
import java.util.Map;

/** {@code --name value} options after the command; a bad or missing one is one line naming it. */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    Args(String[] args, int from) {
        for (int i = from; i < args.length; i++) {
            String name = args[i];
            if (!name.startsWith("--") || i + 1 >= args.length) {
                throw new UsageError("expected --option value pairs, got '" + name + "'");
            }
            values.put(name.substring(2), args[++i]);
        }
    }

    String text(String name) {
        String value = values.get(name);
        if (value == null || value.isEmpty()) {
            throw new UsageError("--" + name + " is required");
        }
        return value;
    }

    String text(String name, String otherwise) {
        return values.getOrDefault(name, otherwise);
    }

    int integer(String name, int min, int max) {
        return (int) number(name, min, max);
    }

    int integer(String name, int otherwise, int min, int max) {
        return values.containsKey(name) ? integer(name, min, max) : otherwise;
    }

    long number(String name, long min, long max) {
        String text = text(name);
        long value;
        try {
            value = Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new UsageError("--" + name + " must be an integer, got '" + text + "'");
        }
        if (value < min || value > max) {
            throw new UsageError("--" + name + " must be in [" + min + ", " + max + "], got " + value);
        }
        return value;
    }

    /** {@code 0=12,1=40}: bucket to offset. */
    Map<Integer, Long> offsets(String name) {
        Map<Integer, Long> offsets = new HashMap<>();
        for (String pair : text(name).split(",")) {
            String[] parts = pair.split("=", 2);
            try {
                offsets.put(Integer.parseInt(parts[0].trim()), Long.parseLong(parts[1].trim()));
            } catch (RuntimeException e) {
                throw new UsageError("--" + name + " is bucket=offset pairs separated by commas (0=12,1=40), got '" + pair + "'");
            }
        }
        return offsets;
    }

    /** A bad command line: printed as one line, exit code 2. */
    static final class UsageError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }
}
