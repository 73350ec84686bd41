"""SimClock: time moves only when advanced, and due timers fire in order."""

from isrcheck.impl.sim.clock import SimClock


def test_timers_fire_in_due_order_then_creation_order_only_when_the_clock_moves():
    clock, fired = SimClock(), []
    clock.schedule(5, lambda: fired.append(("a", clock.now_ms())))
    clock.schedule(2, lambda: fired.append(("b", clock.now_ms())))
    clock.schedule(5, lambda: fired.append(("c", clock.now_ms())))
    cancelled = clock.schedule(3, lambda: fired.append(("x", clock.now_ms())))
    cancelled.cancel()
    assert fired == []
    clock.advance(4)
    assert fired == [("b", 2)] and clock.now_ms() == 4
    clock.advance(1)  # a timer due exactly at the new time fires
    assert fired == [("b", 2), ("a", 5), ("c", 5)]
    assert clock.next_due() is None
