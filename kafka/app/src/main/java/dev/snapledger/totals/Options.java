package dev.snapledger.totals;

import java.util.LinkedHashMap;
import java.util.Map;

/** Command-line options, each with an environment variable as fallback. */
record Options(
        String bootstrapServers,
        String applicationId,
        String stateDir,
        String inputTopic,
        String outputTopic,
        int httpPort,
        String configFile,
        Map<String, String> overrides,
        boolean help) {

    static final String USAGE = String.join("\n",
            "usage: java -jar kafka-streams-totals.jar --bootstrap-servers HOST:PORT --application-id ID",
            "           --state-dir DIR [--input-topic orders] [--output-topic totals-output]",
            "           [--http-port 0] [--config FILE.properties] [--set key=value ...]",
            "  Each option may come from the environment instead: TOTALS_BOOTSTRAP_SERVERS,",
            "  TOTALS_APPLICATION_ID, TOTALS_STATE_DIR, TOTALS_INPUT_TOPIC, TOTALS_OUTPUT_TOPIC,",
            "  TOTALS_HTTP_PORT, TOTALS_CONFIG. --config is a Kafka Streams properties file;",
            "  --set overrides one property (repeatable). processing.guarantee defaults to",
            "  at_least_once. The three required options win over the properties.");

    static Options parse(String[] args, Map<String, String> env) {
        Map<String, String> values = new LinkedHashMap<>();
        Map<String, String> overrides = new LinkedHashMap<>();
        boolean help = false;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            if (arg.equals("--help") || arg.equals("-h") || arg.equals("-help")) {
                help = true;
                continue;
            }
            if (!arg.startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("expected --option value, got " + arg);
            }
            String value = args[++i];
            if (arg.equals("--set")) {
                int eq = value.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("--set takes key=value, got " + value);
                }
                overrides.put(value.substring(0, eq), value.substring(eq + 1));
            } else {
                values.put(arg.substring(2), value);
            }
        }
        String[] known = {"bootstrap-servers", "application-id", "state-dir", "input-topic", "output-topic",
            "http-port", "config"};
        for (String name : values.keySet()) {
            if (!java.util.Arrays.asList(known).contains(name)) {
                throw new IllegalArgumentException("unknown option --" + name);
            }
        }
        for (String name : known) {
            String fromEnv = env.get("TOTALS_" + name.toUpperCase().replace('-', '_'));
            if (!values.containsKey(name) && fromEnv != null && !fromEnv.isEmpty()) {
                values.put(name, fromEnv);
            }
        }
        if (help) {
            return new Options(null, null, null, null, null, 0, null, overrides, true);
        }
        for (String required : new String[] {"bootstrap-servers", "application-id", "state-dir"}) {
            if (!values.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " (or TOTALS_"
                        + required.toUpperCase().replace('-', '_') + ") is required");
            }
        }
        int port;
        try {
            port = Integer.parseInt(values.getOrDefault("http-port", "0"));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--http-port must be a port number (0 = any free one)");
        }
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("--http-port must be within 0..65535, got " + port);
        }
        return new Options(values.get("bootstrap-servers"), values.get("application-id"), values.get("state-dir"),
                values.getOrDefault("input-topic", "orders"), values.getOrDefault("output-topic", "totals-output"),
                port, values.get("config"), overrides, false);
    }
}
