package dev.snapledger.kafka.seeder;

import java.io.File;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.StandardOpenOption;

/**
 * The lock a running Kafka Streams instance holds for its whole life on
 * {@code {state.dir}/{application.id}/.lock} (StateDirectory#lockStateDirectory): holding it
 * proves no instance (and no other seed or dump) uses the folder meanwhile.
 */
final class ApplicationDirLock implements AutoCloseable {
    private final FileChannel channel;
    private final FileLock lock;

    private ApplicationDirLock(final FileChannel channel, final FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    static ApplicationDirLock acquire(final File applicationDir) throws SeedException {
        if (!applicationDir.isDirectory() && !applicationDir.mkdirs()) {
            throw new SeedException("cannot create the application's state folder "
                + applicationDir + ": check --state-dir and its permissions");
        }
        final File lockFile = new File(applicationDir, ".lock");
        try {
            final FileChannel channel = FileChannel.open(lockFile.toPath(),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            final FileLock lock = channel.tryLock();
            if (lock == null) {
                channel.close();
                throw new SeedException(lockFile + " is locked: a Kafka Streams instance (or"
                    + " another seed) is using this state directory; seed before the application"
                    + " starts, one seed at a time");
            }
            return new ApplicationDirLock(channel, lock);
        } catch (final IOException e) {
            throw new SeedException("cannot lock " + lockFile + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() throws IOException {
        lock.release();
        channel.close();
    }
}
