package isrcheck.agent;

import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/**
 * The advice inlined into every hooked method: it hands what the method was given, returned or threw
 * to {@link Recorder}, and nothing else. {@code suppress} makes any exception of the advice itself
 * vanish, so the method's own behaviour is untouched.
 */
public final class Hook {
    private Hook() {}

    @Advice.OnMethodEnter(suppress = Throwable.class)
    static long enter(@Advice.Origin("#t.#m") String where, @Advice.This(optional = true) Object self,
                      @Advice.AllArguments Object[] args) {
        return Recorder.enter(where, self, args);
    }

    @Advice.OnMethodExit(onThrowable = Throwable.class, suppress = Throwable.class)
    static void exit(@Advice.Origin("#t.#m") String where, @Advice.This(optional = true) Object self,
                     @Advice.AllArguments Object[] args,
                     @Advice.Return(typing = Assigner.Typing.DYNAMIC) Object returned,
                     @Advice.Thrown Throwable thrown, @Advice.Enter long entered) {
        Recorder.exit(where, self, args, returned, thrown, entered);
    }
}
