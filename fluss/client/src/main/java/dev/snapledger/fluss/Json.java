package dev.snapledger.fluss;

import java.util.List;
import java.util.Map;

/** The little JSON this program prints: one object per line of strings, numbers, lists, objects. */
final class Json {
    private Json() {}

    static String object(Map<String, ?> fields) {
        StringBuilder out = new StringBuilder("{");
        for (Map.Entry<String, ?> field : fields.entrySet()) {
            if (out.length() > 1) {
                out.append(',');
            }
            out.append(string(field.getKey())).append(':').append(value(field.getValue()));
        }
        return out.append('}').toString();
    }

    private static String value(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        if (value instanceof Map<?, ?> map) {
            StringBuilder out = new StringBuilder("{");
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (out.length() > 1) {
                    out.append(',');
                }
                out.append(string(String.valueOf(e.getKey()))).append(':').append(value(e.getValue()));
            }
            return out.append('}').toString();
        }
        if (value instanceof List<?> list) {
            StringBuilder out = new StringBuilder("[");
            for (Object item : list) {
                if (out.length() > 1) {
                    out.append(',');
                }
                out.append(value(item));
            }
            return out.append(']').toString();
        }
        return string(value.toString());
    }

    static String string(String text) {
        StringBuilder out = new StringBuilder(text.length() + 2).append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
