package isrcheck.agent;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/** Getters and fields by name, looked up once per class: one agent reads every Kafka 4.x release. */
final class Reflect {
    private static final Map<Class<?>, Map<String, Optional<Method>>> METHODS = new ConcurrentHashMap<>();
    private static final Map<Class<?>, List<Field>> FIELDS = new ConcurrentHashMap<>();

    private Reflect() {}

    /** The value of the no-argument method {@code name} of {@code o}, or null if it has none or it throws. */
    static Object call(Object o, String name) {
        if (o == null) {
            return null;
        }
        Optional<Method> m = METHODS.computeIfAbsent(o.getClass(), c -> new ConcurrentHashMap<>())
            .computeIfAbsent(name, n -> find(o.getClass(), n));
        if (m.isEmpty()) {
            return null;
        }
        try {
            return m.get().invoke(o);
        } catch (Throwable t) {
            return null;
        }
    }

    private static Optional<Method> find(Class<?> c, String name) {
        for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            for (Method m : k.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == 0 && !Modifier.isStatic(m.getModifiers())) {
                    try {
                        m.setAccessible(true);
                        return Optional.of(m);
                    } catch (Throwable t) {
                        break;
                    }
                }
            }
        }
        try {
            Method m = c.getMethod(name);
            return Optional.of(m);
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    /** The instance fields of {@code c} and its superclasses (Object excluded), readable. */
    static List<Field> fields(Class<?> c) {
        return FIELDS.computeIfAbsent(c, k -> {
            List<Field> out = new ArrayList<>();
            for (Class<?> x = k; x != null && x != Object.class; x = x.getSuperclass()) {
                for (Field f : x.getDeclaredFields()) {
                    if (Modifier.isStatic(f.getModifiers()) || f.isSynthetic()) {
                        continue;
                    }
                    try {
                        f.setAccessible(true);
                        out.add(f);
                    } catch (Throwable t) {
                        // a field of a closed module: left out
                    }
                }
            }
            return out;
        });
    }
}
