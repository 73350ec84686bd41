package isrcheck.agent;

import static net.bytebuddy.matcher.ElementMatchers.isAbstract;
import static net.bytebuddy.matcher.ElementMatchers.isMethod;
import static net.bytebuddy.matcher.ElementMatchers.nameStartsWith;
import static net.bytebuddy.matcher.ElementMatchers.named;
import static net.bytebuddy.matcher.ElementMatchers.namedOneOf;
import static net.bytebuddy.matcher.ElementMatchers.not;

import java.lang.instrument.Instrumentation;
import java.util.LinkedHashMap;
import java.util.Map;

import net.bytebuddy.agent.builder.AgentBuilder;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.description.type.TypeDescription;
import net.bytebuddy.dynamic.DynamicType;
import net.bytebuddy.utility.JavaModule;

/**
 * The agent's entry point: {@code -javaagent:isrcheck-kafka-agent.jar=EVENT_FILE}.
 *
 * <p>Every hooked method gets advice ({@link Hook}) that reads its arguments, its return value and the
 * state of its object, and appends one JSON line per event to EVENT_FILE ({@link Recorder}). The advice
 * writes nothing into Kafka's objects and calls nothing that changes them; any exception it meets is
 * swallowed, so Kafka runs as it would without the agent. Classes and methods are matched by name,
 * so one agent serves every Kafka 4.x release: a class or method a release lacks is simply not hooked,
 * and the hooks found are written in each incarnation's header line.
 */
public final class Agent {
    /** Class name (exact) -> the methods hooked in it. Both names of a class that moved between 4.0 and 4.4 are listed. */
    static final Map<String, String[]> HOOKS = new LinkedHashMap<>();

    static {
        String[] partition = {"makeLeader", "makeFollower", "updateFollowerFetchState", "appendRecordsToLeader",
            "appendRecordsToFollowerOrFutureReplica", "maybeIncrementLeaderHW", "submitAlterPartition",
            "handleAlterPartitionUpdate", "handleAlterPartitionError", "truncateTo", "truncateFullyAndStartAt",
            "delete", "markOffline"};
        HOOKS.put("kafka.cluster.Partition", partition);
        String[] log = {"truncateTo", "truncateFullyAndStartAt", "maybeUpdateHighWatermark", "flush"};
        HOOKS.put("kafka.log.UnifiedLog", log);                                   // 4.0
        HOOKS.put("org.apache.kafka.storage.internals.log.UnifiedLog", log);      // 4.4
        HOOKS.put("kafka.server.AbstractFetcherThread", new String[] {"processFetchRequest", "truncateOnFetchResponse",
            "truncateToHighWatermark"});
        HOOKS.put("kafka.server.ReplicaFetcherThread", new String[] {"processPartitionData", "truncate",
            "truncateFullyAndStartAt"});
        HOOKS.put("kafka.server.ReplicaManager", new String[] {"fetchMessages", "applyDelta", "checkpointHighWatermarks",
            "handleLogDirFailure"});
        String[] delayed = {"onComplete", "onExpiration"};
        HOOKS.put("kafka.server.DelayedProduce", delayed);                       // 4.0
        HOOKS.put("org.apache.kafka.server.purgatory.DelayedProduce", delayed);  // 4.4
        // 4.0's Scala class names its private callback by its mangled name ("...$$name"; Recorder drops the prefix)
        HOOKS.put("kafka.server.DefaultAlterPartitionManager", new String[] {"submit", "sendRequest",
            "kafka$server$DefaultAlterPartitionManager$$handleAlterPartitionResponse"});
        HOOKS.put("org.apache.kafka.server.partition.DefaultAlterPartitionManager", new String[] {"submit",
            "sendRequest", "handleAlterPartitionResponse"});
        HOOKS.put("org.apache.kafka.controller.ReplicationControlManager", new String[] {"replay", "alterPartition",
            "handleBrokerFenced", "handleBrokerUnfenced", "electLeader", "maybeBalancePartitionLeaders"});
        // registerBroker returns the records a registration writes: an unclean shutdown's partition changes come first
        HOOKS.put("org.apache.kafka.controller.ClusterControlManager", new String[] {"replay", "registerBroker"});
        // a broker's metadata cache takes each new image before the same batch's partition changes are applied
        HOOKS.put("kafka.server.metadata.KRaftMetadataCache", new String[] {"setImage"});     // 4.0
        HOOKS.put("org.apache.kafka.metadata.KRaftMetadataCache", new String[] {"setImage"}); // 4.4
    }

    private Agent() {}

    public static void premain(String args, Instrumentation inst) {
        try {
            Recorder.open(args);
        } catch (Throwable t) {
            System.err.println("isrcheck agent: cannot record events (" + t + "): Kafka runs without it");
            return;
        }
        try {
            AgentBuilder builder = new AgentBuilder.Default()
                .disableClassFormatChanges()
                .ignore(not(nameStartsWith("kafka.").or(nameStartsWith("org.apache.kafka."))))
                .with(new AgentBuilder.Listener.Adapter() {
                    @Override
                    public void onError(String typeName, ClassLoader loader, JavaModule module, boolean loaded,
                                        Throwable throwable) {
                        Recorder.agentError(typeName, throwable);
                    }

                    @Override
                    public void onTransformation(TypeDescription type, ClassLoader loader, JavaModule module,
                                                 boolean loaded, DynamicType dynamicType) {
                        Recorder.hooked(type.getName());
                    }
                });
            for (Map.Entry<String, String[]> hook : HOOKS.entrySet()) {
                builder = builder.type(named(hook.getKey())).transform(
                    (b, type, loader, module, domain) -> b.visit(
                        Advice.to(Hook.class).on(isMethod().and(not(isAbstract())).and(namedOneOf(hook.getValue())))));
            }
            builder.installOn(inst);
        } catch (Throwable t) {
            Recorder.agentError("(install)", t);
        }
    }
}
