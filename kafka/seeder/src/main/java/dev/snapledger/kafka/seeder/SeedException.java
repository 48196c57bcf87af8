package dev.snapledger.kafka.seeder;

/** A refusal the user can act on: bad arguments, bad input, a folder that is not empty. */
final class SeedException extends Exception {
    private static final long serialVersionUID = 1L;

    SeedException(final String message) {
        super(message);
    }

    SeedException(final String message, final Throwable cause) {
        super(message, cause);
    }
}
