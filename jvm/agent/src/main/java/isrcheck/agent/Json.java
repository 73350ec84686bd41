package isrcheck.agent;

import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Kafka's values as JSON. Numbers, strings, enums, arrays and collections as themselves; Scala's
 * Option and Java's Optional as their value or null; the few Kafka types an event's arguments carry by
 * what identifies them (a log offset, a replica's broker id, a record batch's offsets and epoch); the
 * generated protocol messages and metadata records, and a short list of plain Kafka classes, by their
 * fields. Anything else is written as its class's simple name: the agent never walks into a broker's
 * object graph.
 */
final class Json {
    static final int MAX_ITEMS = 64;
    static final int MAX_DEPTH = 6;
    /** Plain Kafka classes written by their fields (simple names). */
    static final Set<String> BY_FIELDS = Set.of(
        "FetchParams", "PartitionData", "PartitionState", "PartitionRegistration", "LeaderAndIsr", "OffsetTruncationState",
        "EpochEndOffset", "FetchPartitionData", "LogAppendInfo", "PartitionResponse", "ProducePartitionStatus",
        "ProduceMetadata", "ControllerResult", "ApiMessageAndVersion", "PendingExpandIsr", "PendingShrinkIsr",
        "CommittedPartitionState", "BrokerRegistrationRequestData", "LogOffsetSnapshot", "FetchDataInfo",
        "BrokerEpochIntegerPair");
    /** Fields never written: callbacks, big objects, noise. */
    static final Set<String> SKIP_FIELDS = Set.of(
        "_unknownTaggedFields", "unknownTaggedFields", "replicaManager", "responseCallback", "lock", "logger",
        "completed", "records", "listenerName", "produceMetadata$1", "delayMs");

    private Json() {}

    static void string(StringBuilder b, String s) {
        if (s == null) {
            b.append("null");
            return;
        }
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    /** Scala's Option and Java's Optional as their value (null when empty); anything else as it is. */
    static Object unwrap(Object o) {
        if (o instanceof Optional) {
            return ((Optional<?>) o).orElse(null);
        }
        if (o != null && o.getClass().getName().startsWith("scala.")) {
            String n = o.getClass().getName();
            if (n.equals("scala.None$")) {
                return null;
            }
            if (n.equals("scala.Some")) {
                return Reflect.call(o, "value");
            }
        }
        return o;
    }

    static void sortedInts(StringBuilder b, Object set) {
        List<Long> ids = new ArrayList<>();
        for (Object x : items(set)) {
            if (x instanceof Number) {
                ids.add(((Number) x).longValue());
            }
        }
        Collections.sort(ids);
        b.append('[');
        for (int i = 0; i < ids.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(ids.get(i));
        }
        b.append(']');
    }

    /** The items of a Java or Scala collection, or of an array (at most MAX_ITEMS + 1). */
    static List<Object> items(Object o) {
        List<Object> out = new ArrayList<>();
        if (o == null) {
            return out;
        }
        if (o.getClass().isArray()) {
            int n = Array.getLength(o);
            for (int i = 0; i < n && i <= MAX_ITEMS; i++) {
                out.add(Array.get(o, i));
            }
            return out;
        }
        Iterator<?> it = null;
        if (o instanceof Iterable) {
            it = ((Iterable<?>) o).iterator();
        } else if (o instanceof Map) {
            it = ((Map<?, ?>) o).entrySet().iterator();
        }
        if (it != null) {
            while (it.hasNext() && out.size() <= MAX_ITEMS) {
                out.add(it.next());
            }
            return out;
        }
        Object sit = Reflect.call(o, "iterator"); // a Scala collection
        if (sit != null && sit.getClass().getName().startsWith("scala.")) {
            while (Boolean.TRUE.equals(Reflect.call(sit, "hasNext")) && out.size() <= MAX_ITEMS) {
                out.add(Reflect.call(sit, "next"));
            }
        }
        return out;
    }

    static boolean isCollection(Object o) {
        if (o instanceof Collection || o instanceof Map || o instanceof Iterable) {
            return true;
        }
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            for (Class<?> i : c.getInterfaces()) {
                if (i.getName().equals("scala.collection.IterableOnce") || i.getName().equals("scala.collection.Iterable")) {
                    return true;
                }
            }
        }
        return false;
    }

    static void value(StringBuilder b, Object o, int depth) {
        o = unwrap(o);
        if (o == null) {
            b.append("null");
            return;
        }
        if (o instanceof Boolean || o instanceof Integer || o instanceof Long || o instanceof Short || o instanceof Byte) {
            b.append(o);
            return;
        }
        if (o instanceof Number) {
            double d = ((Number) o).doubleValue();
            b.append(Double.isFinite(d) ? Double.toString(d) : "null");
            return;
        }
        if (o instanceof CharSequence || o instanceof Character) {
            string(b, o.toString());
            return;
        }
        if (o instanceof Enum) {
            string(b, ((Enum<?>) o).name());
            return;
        }
        Class<?> c = o.getClass();
        String name = c.getSimpleName();
        switch (name) {
            case "TopicPartition": case "TopicIdPartition": case "Uuid": case "Errors": case "ApiError":
            case "AppendOrigin": case "ElectionType": case "LeaderRecoveryState":
                string(b, o.toString());
                return;
            case "LogOffsetMetadata":
                b.append(Reflect.call(o, "messageOffset") != null ? Reflect.call(o, "messageOffset")
                    : fieldValue(o, "messageOffset"));
                return;
            case "Replica":
                b.append(Reflect.call(o, "brokerId"));
                return;
            case "MemoryRecords":
                batches(b, o);
                return;
            case "Tuple2":
                if (depth < MAX_DEPTH) {
                    b.append('[');
                    value(b, Reflect.call(o, "_1"), depth + 1);
                    b.append(',');
                    value(b, Reflect.call(o, "_2"), depth + 1);
                    b.append(']');
                    return;
                }
                break;
            default:
        }
        if (depth >= MAX_DEPTH) {
            string(b, name);
            return;
        }
        if (o instanceof Map.Entry) {
            b.append('[');
            value(b, ((Map.Entry<?, ?>) o).getKey(), depth + 1);
            b.append(',');
            value(b, ((Map.Entry<?, ?>) o).getValue(), depth + 1);
            b.append(']');
            return;
        }
        if (c.isArray() || isCollection(o)) {
            List<Object> items = items(o);
            b.append('[');
            for (int i = 0; i < items.size() && i < MAX_ITEMS; i++) {
                if (i > 0) {
                    b.append(',');
                }
                value(b, items.get(i), depth + 1);
            }
            if (items.size() > MAX_ITEMS) {
                b.append(",\"...\"");
            }
            b.append(']');
            return;
        }
        if (isMessage(c) || BY_FIELDS.contains(name)) {
            fields(b, o, depth);
            return;
        }
        string(b, name);
    }

    private static boolean isMessage(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            for (Class<?> i : k.getInterfaces()) {
                if (i.getName().equals("org.apache.kafka.common.protocol.Message")
                    || i.getName().equals("org.apache.kafka.common.protocol.ApiMessage")) {
                    return true;
                }
            }
        }
        return false;
    }

    private static Object fieldValue(Object o, String name) {
        for (Field f : Reflect.fields(o.getClass())) {
            if (f.getName().equals(name)) {
                try {
                    return f.get(o);
                } catch (Throwable t) {
                    return null;
                }
            }
        }
        return null;
    }

    /** {@code o} as an object of its fields. */
    static void fields(StringBuilder b, Object o, int depth) {
        b.append('{');
        boolean first = true;
        for (Field f : Reflect.fields(o.getClass())) {
            if (SKIP_FIELDS.contains(f.getName())) {
                continue;
            }
            Object v;
            try {
                v = f.get(o);
            } catch (Throwable t) {
                continue;
            }
            if (!first) {
                b.append(',');
            }
            first = false;
            string(b, f.getName());
            b.append(':');
            value(b, v, depth + 1);
        }
        b.append('}');
    }

    /** A batch list as [base offset, last offset, partition leader epoch, records] each. */
    static void batches(StringBuilder b, Object records) {
        b.append('[');
        Object it = Reflect.call(records, "batches");
        int n = 0;
        for (Object batch : items(it)) {
            if (n == MAX_ITEMS) {
                b.append(",\"...\"");
                break;
            }
            if (n++ > 0) {
                b.append(',');
            }
            b.append('[').append(Reflect.call(batch, "baseOffset")).append(',').append(Reflect.call(batch, "lastOffset"))
                .append(',').append(Reflect.call(batch, "partitionLeaderEpoch")).append(',')
                .append(Reflect.call(batch, "countOrNull")).append(']');
        }
        b.append(']');
    }
}
