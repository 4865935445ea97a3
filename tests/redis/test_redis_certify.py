"""The Redis backend under the conformance kit: every phase passes (slow),
backend options reach the factory (``-o key=value``), and a bad option
exits 2 before any run."""

from __future__ import annotations

import subprocess
import sys

import pytest
import redis

from refqueue.conformance.certify import PHASES, certify

pytestmark = pytest.mark.redis

TARGET = "refqueue.backends.redis:make"


# walks and lockstep take minutes against a server (thousands of script calls)
@pytest.mark.parametrize(
    "phase", [pytest.param(p, marks=[pytest.mark.slow]) if p in ("walks", "lockstep") else p for p in PHASES]
)
def test_every_phase_passes_on_a_throwaway_server(phase):
    cert = certify(TARGET, profile="ci", phases=(phase,))
    assert cert.passed, cert.counterexample


def test_options_reach_the_factory(redis_server):
    # The kit's queues delete their keys when it drops them (whenever the
    # collector runs): the server's keyspace events say where they were made.
    admin = redis.Redis.from_url(redis_server.url, decode_responses=True)
    events = admin.pubsub()
    admin.config_set("notify-keyspace-events", "KA")
    try:
        events.psubscribe("__keyspace@0__:opt-test:*")
        assert events.get_message(timeout=10)["type"] == "psubscribe"
        cert = certify(
            TARGET, profile="ci", phases=("construction",), options={"url": redis_server.url, "prefix": "opt-test:"}
        )
        assert cert.passed, cert.counterexample
        first = events.get_message(timeout=10)
    finally:
        admin.config_set("notify-keyspace-events", "")
        events.close()
        admin.close()
    # the queues were made on the server the option named, under its prefix
    assert first is not None and first["channel"].startswith("__keyspace@0__:opt-test:{certify-")


def _certify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "refqueue.cli", "certify", TARGET, "--no-progress", *args],
        capture_output=True, text=True, timeout=300,
    )


def test_an_unknown_option_exits_2_naming_it(redis_server, tmp_path):
    done = _certify("-o", f"url={redis_server.url}", "-o", "colour=1", "--report", str(tmp_path))
    assert done.returncode == 2
    assert "unknown option(s) ['colour']" in done.stderr


def test_a_bad_option_value_and_a_kit_key_exit_2(tmp_path):
    done = _certify("-o", "url=http://127.0.0.1:1/0", "--report", str(tmp_path))
    assert done.returncode == 2 and "scheme 'http'" in done.stderr
    done = _certify("-o", "visibility_timeout=3", "--report", str(tmp_path))
    assert done.returncode == 2 and "a key the kit passes itself" in done.stderr
    done = _certify("-o", "url=redis://127.0.0.1:1/0", "-o", "url=redis://127.0.0.1:2/0", "--report", str(tmp_path))
    assert done.returncode == 2 and "given twice" in done.stderr


def test_option_values_are_json_when_they_parse():
    from refqueue.conformance.cli import _option

    assert _option("retries=3") == ("retries", 3)
    assert _option("tls=true") == ("tls", True)
    assert _option('tags=["a"]') == ("tags", ["a"])
    assert _option("url=redis://h:1/0") == ("url", "redis://h:1/0")
    assert _option("name=") == ("name", "")


def test_the_factory_removes_a_dropped_queues_keys(redis_server):
    import gc

    from refqueue.backends.redis import make
    from refqueue.clock import ManualClock
    from redis_helpers import ref, store

    q = make(store(), ManualClock(100.0), visibility_timeout=30.0, on_pause=None, on_resume=None,
             url=redis_server.url, prefix="drop-test:")
    q.put(ref("a"))
    r = redis.Redis.from_url(redis_server.url)
    assert r.keys("drop-test:*")
    del q
    gc.collect()
    assert r.keys("drop-test:*") == []


# The production configuration (clock=None, the server's TIME; issue 27),
# certified as the injected-clock one is: every phase (walks and lockstep slow),
# through two clients of each queue (open_client), the second on a clock 0.5 s
# ahead that the backend must not read.  Before issue 27 the threads phase (3
# seeds of 3) and the faults phase (seed 0) rejected it.
@pytest.mark.parametrize(
    "phase", [pytest.param(p, marks=[pytest.mark.slow]) if p in ("walks", "lockstep") else p for p in PHASES]
)
def test_the_server_time_configuration_passes(phase):
    cert = certify("refqueue.backends.redis:make_server_time", profile="ci", phases=(phase,))
    assert cert.passed, cert.counterexample
    assert cert.capabilities["injected_clock"] is False
    assert cert.configuration["clients"] == 2
    assert cert.configuration["clock"] == "the backend's own (real time)"


def test_the_injected_clock_configuration_is_certified_through_two_clients():
    cert = certify(TARGET, profile="ci", phases=("construction",))
    assert cert.configuration == {
        "clients": 2, "client_clock_skew_s": [0.5], "clock": "injected (the kit's ManualClock)",
    }
    one = certify(TARGET, profile="ci", phases=("construction",), clients=1)
    assert one.configuration["clients"] == 1


def test_a_dedup_window_kept_per_client_is_caught_by_the_calls_phase_in_seconds():
    """The mutant whose dedup window is each client's own passed 2,000 walks through one client and was found
    by walks through two only after about 6 minutes; the calls phase's dedup-across-clients check finds it at
    once, and passes the backend itself in both clock configurations."""
    from refqueue.conformance.calls import check_calls

    report = check_calls("conformance.mutants.redis_dedup_per_client:make", checks=("dedup-across-clients",))
    assert report.failed_check == "dedup-across-clients", report.failure
    assert "A.put('s0') again, completed through B within dedup_window=4 returned None" in report.failure
    for target in ("refqueue.backends.redis:make", "refqueue.backends.redis:make_server_time"):
        report = check_calls(target, checks=("dedup-across-clients",))
        assert report.ok and list(report.checks) == ["dedup-across-clients"], report.failure


@pytest.mark.parametrize(
    "mutant, says",
    [
        ("redis_client_clock", "B's machine runs +0.5 s off, and its clock is not the queue's"),
        ("redis_lease_ids_per_client", "the queue mints lease identities, never two clients the same one"),
    ],
)
def test_a_client_that_reads_its_own_clock_or_mints_its_own_lease_ids_is_caught_at_its_first_acquire(mutant, says):
    """Both passed every short check and were found by the deadline soak only after about 5,000 calls (about
    20 s against a server, minutes on a slow backend): leases-across-clients finds them within 70 calls, and
    passes the backend itself in both clock configurations."""
    from refqueue.conformance.calls import check_calls

    report = check_calls(f"conformance.mutants.{mutant}:make", checks=("leases-across-clients",))
    assert report.failed_check == "leases-across-clients" and says in report.failure, report.failure
    for target in (TARGET, "refqueue.backends.redis:make_server_time"):
        report = check_calls(target, checks=("leases-across-clients",))
        assert report.ok and list(report.checks) == ["leases-across-clients"], report.failure


def test_a_reclaimer_that_gives_up_after_three_errors_is_caught_by_every_restart_check(monkeypatch):
    # The restart keeps the server down RESTART_DOWN_FOR (0.5 s): the kit's reclaimer
    # retries every 10 ms, so a reclaimer that stops at its third error in a row meets it
    # however fast the server comes back. (When the outage was only as long as SHUTDOWN
    # SAVE and a start, the check's replay sometimes saw two errors and passed.)
    from refqueue.conformance import fault_crashes
    from refqueue.conformance.faults import check_faults

    monkeypatch.setattr(fault_crashes, "RECOVER_WITHIN", 2.0)
    for attempt in range(3):
        report = check_faults("conformance.mutants.redis_reclaimer_gives_up:make", checks=("reclaimer-survives-restart",))
        assert report.failed_check == "reclaimer-survives-restart", (attempt, report.failure)
        assert "fault: the queue's server restarts, durably, down for 0.5 s" in report.failure
    correct = check_faults(TARGET, checks=("reclaimer-survives-restart",))
    assert correct.failed_check is None, correct.failure
