import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Writes through the lazy file system the way Kafka does (run with Java's single-file launch,
 * {@code java Writer.java MODE PATH}).
 *
 * <ul>
 *   <li>{@code write DIR}: a log segment by FileChannel.write, {@code forced} then force(true),
 *       then {@code unforced} left unforced; an index pre-allocated with RandomAccessFile.setLength
 *       to 8192 bytes and memory-mapped, {@code mapped-forced} at 0 then MappedByteBuffer.force(),
 *       {@code mapped-unforced} at 4096 left unforced; prints {@code written}, then locks
 *       {@code DIR/.lock} as below.</li>
 *   <li>{@code lock FILE}: FileChannel.tryLock on FILE, as Kafka takes its log directory's
 *       {@code .lock}; prints {@code locked} (and holds it until a line or end of input) or
 *       {@code busy}.</li>
 * </ul>
 */
public class Writer {
    public static void main(String[] args) throws Exception {
        Path path = Path.of(args[1]);
        if (args[0].equals("write")) {
            try (FileChannel log = FileChannel.open(path.resolve("segment.log"), StandardOpenOption.CREATE,
                    StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                log.write(bytes("forced"));
                log.force(true);
                log.write(bytes("unforced"));
            }
            try (RandomAccessFile index = new RandomAccessFile(path.resolve("segment.index").toFile(), "rw")) {
                index.setLength(8192);
                MappedByteBuffer map = index.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, 8192);
                map.put(0, bytes("mapped-forced").array());
                map.force();
                map.put(4096, bytes("mapped-unforced").array());
            }
            System.out.println("written");
            lock(path.resolve(".lock"));
        } else if (args[0].equals("lock")) {
            lock(path);
        } else {
            throw new IllegalArgumentException("expected write DIR or lock FILE, got " + args[0]);
        }
    }

    private static void lock(Path path) throws Exception {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            FileLock lock = channel.tryLock();
            System.out.println(lock == null ? "busy" : "locked");
            System.out.flush();
            if (lock != null) {
                System.in.read();
                lock.release();
            }
        }
    }

    private static ByteBuffer bytes(String text) {
        return ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII));
    }
}
