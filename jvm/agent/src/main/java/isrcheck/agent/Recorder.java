package isrcheck.agent;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Appends the events of one Kafka node to its event file, one JSON line each.
 *
 * <p>A line: {@code {"seq":N,"us":MICROS,"ev":"Partition.makeLeader","at":"exit","thread":...,
 * "p":{partition state},"args":[...],"ret":...,"thrown":...}}. {@code us} is microseconds on the host's
 * monotonic clock (Java's {@code System.nanoTime}, Linux's CLOCK_MONOTONIC) since the origin the harness
 * gives ({@code -Disrcheck.events.origin_ns}), so the files of every node of a run share one clock.
 * Each incarnation of the node starts with a header line ({@code "agent"}); a restarted node appends
 * to its file after cutting off a last line its killed predecessor left unfinished.
 *
 * <p>Lines are buffered in memory and written to the OS by a daemon thread every {@link #FLUSH_MS} ms
 * and at exit: a SIGKILL loses at most the last few milliseconds of events, and may leave the last
 * line cut, which the reader takes as where the log ends.
 */
public final class Recorder {
    static final int FLUSH_MS = 10;
    static final int VERSION = 2; // 2: the metadata cache's brokers (KRaftMetadataCache.setImage)

    /** Methods recorded when they are entered (what they were asked); every other hook when it returns. */
    static final Set<String> ON_ENTER = Set.of(
        "AbstractFetcherThread.processFetchRequest", "ReplicaManager.fetchMessages", "ReplicaManager.applyDelta",
        "ReplicaManager.handleLogDirFailure", "ReplicationControlManager.handleBrokerFenced",
        "ReplicationControlManager.handleBrokerUnfenced", "ReplicationControlManager.maybeBalancePartitionLeaders",
        "DefaultAlterPartitionManager.submit", "DefaultAlterPartitionManager.sendRequest");

    private static FileOutputStream out;
    private static StringBuilder buffer = new StringBuilder(1 << 16);
    private static final Object LOCK = new Object();
    private static final AtomicLong SEQ = new AtomicLong();
    private static long originNs;
    static int node = -1;
    private static final Set<String> HOOKED = ConcurrentHashMap.newKeySet();
    /** topic-partition -> its Partition object, from the last Partition event: the fetcher's events read its state. */
    static final Map<String, Object> PARTITIONS = new ConcurrentHashMap<>();
    private static final ThreadLocal<Boolean> BUSY = new ThreadLocal<>();

    private Recorder() {}

    static void open(String path) throws IOException {
        if (path == null || path.isEmpty()) {
            throw new IOException("no event file given (-javaagent:JAR=EVENT_FILE)");
        }
        String origin = System.getProperty("isrcheck.events.origin_ns");
        originNs = origin != null ? Long.parseLong(origin) : System.nanoTime();
        String id = System.getProperty("isrcheck.events.node");
        node = id != null ? Integer.parseInt(id) : -1;
        cutUnfinishedLine(path);
        out = new FileOutputStream(path, true);
        StringBuilder h = new StringBuilder(256);
        h.append("{\"agent\":\"isrcheck-kafka-agent\",\"version\":").append(VERSION).append(",\"node\":").append(node)
            .append(",\"pid\":").append(ProcessHandle.current().pid()).append(",\"us\":").append(micros())
            .append(",\"java\":");
        Json.string(h, System.getProperty("java.version"));
        h.append("}\n");
        out.write(h.toString().getBytes(StandardCharsets.UTF_8));
        Thread flusher = new Thread(() -> {
            while (true) {
                try {
                    Thread.sleep(FLUSH_MS);
                } catch (InterruptedException e) {
                    return;
                }
                flush();
            }
        }, "isrcheck-events-flusher");
        flusher.setDaemon(true);
        flusher.start();
        Runtime.getRuntime().addShutdownHook(new Thread(Recorder::flush, "isrcheck-events-exit"));
    }

    /** A killed predecessor may have left half a line: the file goes on after its last whole line. */
    private static void cutUnfinishedLine(String path) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(path, "rw")) {
            long size = f.length();
            long end = size;
            while (end > 0) {
                f.seek(end - 1);
                if (f.read() == '\n') {
                    break;
                }
                end--;
            }
            if (end != size) {
                f.setLength(end);
            }
        }
    }

    static long micros() {
        return (System.nanoTime() - originNs) / 1000;
    }

    static void flush() {
        byte[] bytes;
        synchronized (LOCK) {
            if (buffer.length() == 0) {
                return;
            }
            bytes = buffer.toString().getBytes(StandardCharsets.UTF_8);
            buffer.setLength(0);
        }
        try {
            synchronized (Recorder.class) {
                out.write(bytes);
            }
        } catch (Throwable t) {
            // a full disk, a closed file: the events are lost, Kafka goes on
        }
    }

    static void hooked(String type) {
        if (HOOKED.add(type)) {
            line("agent.hooked", "load", null, b -> {
                b.append(",\"class\":");
                Json.string(b, type);
            });
        }
    }

    static void agentError(String type, Throwable t) {
        line("agent.error", "load", null, b -> {
            b.append(",\"class\":");
            Json.string(b, type);
            b.append(",\"error\":");
            Json.string(b, String.valueOf(t));
        });
    }

    private static String shortName(String where) {
        int dot = where.lastIndexOf('.');
        int prev = dot > 0 ? where.lastIndexOf('.', dot - 1) : -1;
        String name = where.substring(prev + 1);
        int mangled = name.lastIndexOf("$$");
        return mangled < 0 ? name : name.substring(0, name.indexOf('.') + 1) + name.substring(mangled + 2);
    }

    public static long enter(String where, Object self, Object[] args) {
        String ev = shortName(where);
        if (ON_ENTER.contains(ev)) {
            record(ev, "enter", self, args, null, null, false, 0);
        }
        return System.nanoTime();
    }

    public static void exit(String where, Object self, Object[] args, Object returned, Throwable thrown, long entered) {
        String ev = shortName(where);
        if (ON_ENTER.contains(ev)) {
            return;
        }
        // the calls that changed nothing are left out: most of these run on every fetch or timer tick
        if (ev.equals("Partition.maybeIncrementLeaderHW") && !Boolean.TRUE.equals(returned)) {
            return;
        }
        if (ev.endsWith("UnifiedLog.maybeUpdateHighWatermark") || ev.equals("UnifiedLog.maybeUpdateHighWatermark")) {
            if (Json.unwrap(returned) == null) {
                return;
            }
        }
        if (ev.equals("KRaftMetadataCache.setImage") && !State.brokersChanged(args)) {
            return; // most images change topics or nothing a replica reads: only the brokers' registrations matter
        }
        if (ev.startsWith("UnifiedLog.") && String.valueOf(Reflect.call(self, "topicPartition"))
            .startsWith("__cluster_metadata")) {
            return; // KRaft's own metadata log: no partition of the model's
        }
        record(ev, "exit", self, args, returned, thrown, true, entered);
    }

    private interface Body {
        void write(StringBuilder b);
    }

    /** {@code entered}: an exit line's method entry on System.nanoTime's clock, written as "in": concurrent
     *  handlers are ordered by when each began, which the exit's time does not tell. */
    private static void record(String ev, String at, Object self, Object[] args, Object returned, Throwable thrown,
                               boolean exited, long entered) {
        if (BUSY.get() != null) {
            return; // an event while rendering one (a hooked method called by a getter): not Kafka's own
        }
        BUSY.set(Boolean.TRUE);
        try {
            line(ev, at, self, b -> {
                State.of(b, ev, self, args);
                b.append(",\"args\":");
                Json.value(b, args, 0);
                if (exited) {
                    b.append(",\"in\":").append((entered - originNs) / 1000);
                    b.append(",\"ret\":");
                    Json.value(b, returned, 0);
                }
                if (thrown != null) {
                    b.append(",\"thrown\":");
                    Json.string(b, thrown.getClass().getSimpleName() + ": " + thrown.getMessage());
                }
            });
        } catch (Throwable t) {
            // never Kafka's problem
        } finally {
            BUSY.remove();
        }
    }

    private static void line(String ev, String at, Object self, Body body) {
        StringBuilder b = new StringBuilder(256);
        long us = micros();
        b.append("{\"seq\":0,\"us\":").append(us).append(",\"ev\":\"").append(ev).append("\",\"at\":\"").append(at)
            .append("\",\"thread\":");
        Json.string(b, Thread.currentThread().getName());
        try {
            body.write(b);
        } catch (Throwable t) {
            b.append(",\"render_error\":");
            Json.string(b, String.valueOf(t));
        }
        b.append("}\n");
        synchronized (LOCK) {
            // seq numbers the lines in file order
            String text = b.toString();
            buffer.append("{\"seq\":").append(SEQ.incrementAndGet()).append(text, 8, text.length());
        }
    }
}
