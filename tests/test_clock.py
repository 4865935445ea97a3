import pytest

from refqueue.clock import Clock, ManualClock, MonotonicClock


def test_manual_clock_moves_only_when_told():
    clock = ManualClock(5)
    assert clock.now() == 5.0
    assert clock.advance(2.5) == 7.5
    assert clock.set(10) == 10.0
    assert clock.now() == 10.0
    assert isinstance(clock, Clock) and isinstance(MonotonicClock(), Clock)


def test_manual_clock_never_goes_backwards():
    clock = ManualClock(3)
    with pytest.raises(ValueError, match=r"^ManualClock.set\(t\) got t=1, earlier than now=3.0; a clock never goes backwards$"):
        clock.set(1)
    with pytest.raises(ValueError, match=r"^ManualClock.advance\(seconds\) must be finite and >= 0, got -1$"):
        clock.advance(-1)
    with pytest.raises(TypeError, match=r"^ManualClock.advance\(seconds\) must be a number of seconds, got True \(bool\)$"):
        clock.advance(True)
    assert clock.now() == 3.0


def test_monotonic_clock_does_not_go_backwards():
    clock = MonotonicClock()
    a = clock.now()
    assert clock.now() >= a
