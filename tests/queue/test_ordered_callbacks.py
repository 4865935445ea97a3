"""``refqueue._callbacks.OrderedCallbacks``: callbacks called one at a time,
in the order they were added, whichever thread delivers them."""

import threading

import pytest

from refqueue._callbacks import OrderedCallbacks


def test_callbacks_run_in_the_order_added_and_none_is_skipped():
    calls = []
    due = OrderedCallbacks()
    due.add(calls.append, "pause")
    due.add(None, "nobody listens")
    due.add(calls.append, "resume")
    assert calls == []  # add never calls
    due.deliver()
    assert calls == ["pause", "resume"]
    due.deliver()  # nothing left
    assert calls == ["pause", "resume"]


def test_a_thread_inside_a_callback_delivers_what_another_thread_added_meanwhile():
    calls = []
    due = OrderedCallbacks()
    inside, release = threading.Event(), threading.Event()

    def held(argument):
        calls.append(argument)
        inside.set()
        assert release.wait(10)

    due.add(held, "resume")
    first = threading.Thread(target=due.deliver)
    first.start()
    assert inside.wait(10)
    due.add(calls.append, "pause")
    due.deliver()  # another thread is calling: returns at once, leaving "pause" to it
    assert calls == ["resume"]
    release.set()
    first.join(10)
    assert not first.is_alive()
    assert calls == ["resume", "pause"]


def test_an_exception_reaches_the_deliverer_and_the_rest_stay_queued():
    calls = []

    def boom(argument):
        raise RuntimeError(f"on_{argument} failed")

    due = OrderedCallbacks()
    due.add(boom, "pause")
    due.add(calls.append, "resume")
    with pytest.raises(RuntimeError, match="on_pause failed"):
        due.deliver()
    assert calls == []
    due.deliver()  # the next deliver, in any thread, carries on
    assert calls == ["resume"]
