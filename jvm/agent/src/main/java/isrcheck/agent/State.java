package isrcheck.agent;

/**
 * What an event's object holds after (or before) the event, read through Kafka's own side-effect-free
 * getters: a {@code Partition}'s view ({@code "p"}: leader, epochs, ISR, the change in flight, its log's
 * end offset, high watermark and latest epoch), a log's offsets, or, for the follower's fetcher, the view
 * of the partition its arguments name.
 */
final class State {
    private State() {}

    static void of(StringBuilder b, String ev, Object self, Object[] args) {
        if (self == null) {
            return;
        }
        String type = self.getClass().getSimpleName();
        if (type.equals("Partition")) {
            Object tp = Reflect.call(self, "topicPartition");
            if (tp != null) {
                Recorder.PARTITIONS.put(tp.toString(), self);
            }
            partition(b, self);
        } else if (type.equals("UnifiedLog")) {
            b.append(",\"p\":{\"tp\":");
            Json.string(b, String.valueOf(Reflect.call(self, "topicPartition")));
            log(b, self);
            b.append('}');
        } else if (ev.startsWith("ReplicaFetcherThread.") || ev.startsWith("AbstractFetcherThread.")) {
            if (args != null && args.length > 0 && args[0] != null
                && args[0].getClass().getSimpleName().equals("TopicPartition")) {
                Object p = Recorder.PARTITIONS.get(args[0].toString());
                if (p != null) {
                    partition(b, p);
                }
            }
        } else if (ev.equals("KRaftMetadataCache.setImage")) {
            b.append(",\"brokers\":").append(lastBrokers);
        } else if (type.equals("DelayedProduce")) {
            b.append(",\"self\":");
            Json.fields(b, self, 0);
        }
    }

    /** The brokers' registrations of the metadata cache's last recorded image, as written. */
    private static String lastBrokers = "";

    /** True when the image {@code setImage} took changes a broker's registration (epoch, fenced, controlled
     *  shutdown) from the last one recorded; it is then the one recorded. Called on the metadata loader's thread. */
    static boolean brokersChanged(Object[] args) {
        if (args == null || args.length == 0 || args[0] == null) {
            return false;
        }
        Object brokers = Reflect.call(Reflect.call(args[0], "cluster"), "brokers");
        if (!(brokers instanceof java.util.Map)) {
            return false;
        }
        StringBuilder b = new StringBuilder(128).append('[');
        for (Object r : new java.util.TreeMap<Object, Object>((java.util.Map<?, ?>) brokers).values()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append("{\"id\":").append(Reflect.call(r, "id")).append(",\"epoch\":").append(Reflect.call(r, "epoch"))
                .append(",\"fenced\":").append(Reflect.call(r, "fenced")).append(",\"shutdown\":")
                .append(Reflect.call(r, "inControlledShutdown")).append('}');
        }
        String text = b.append(']').toString();
        if (text.equals(lastBrokers)) {
            return false;
        }
        lastBrokers = text;
        return true;
    }

    static void partition(StringBuilder b, Object p) {
        b.append(",\"p\":{\"tp\":");
        Json.string(b, String.valueOf(Reflect.call(p, "topicPartition")));
        b.append(",\"leader\":").append(orMinusOne(Json.unwrap(Reflect.call(p, "leaderReplicaIdOpt"))));
        b.append(",\"epoch\":").append(Reflect.call(p, "getLeaderEpoch"));
        b.append(",\"pe\":").append(Reflect.call(p, "getPartitionEpoch"));
        Object state = Reflect.call(p, "partitionState");
        if (state != null) {
            b.append(",\"isr\":");
            Json.sortedInts(b, Reflect.call(state, "isr"));
            b.append(",\"maximal_isr\":");
            Json.sortedInts(b, Reflect.call(state, "maximalIsr"));
            b.append(",\"inflight\":").append(Reflect.call(state, "isInflight"));
        }
        b.append(",\"epoch_start\":").append(orMinusOne(Json.unwrap(Reflect.call(p, "leaderEpochStartOffsetOpt"))));
        Object log = Json.unwrap(Reflect.call(p, "log"));
        if (log != null) {
            log(b, log);
        }
        b.append('}');
    }

    static void log(StringBuilder b, Object log) {
        b.append(",\"leo\":").append(Reflect.call(log, "logEndOffset"));
        b.append(",\"hw\":").append(Reflect.call(log, "highWatermark"));
        b.append(",\"last_epoch\":").append(orMinusOne(Json.unwrap(Reflect.call(log, "latestEpoch"))));
    }

    private static Object orMinusOne(Object o) {
        return o == null ? -1 : o;
    }
}
