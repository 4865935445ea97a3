"""The torture's configuration and schedule: checked before anything starts,
and every fault schedule a pure function of the seed."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from refqueue.torture.config import TortureConfig, check_loopback_url, parse_faults
from refqueue.torture.schedule import MEAN_INTERVAL, plan


def test_faults_parse_to_a_subset_in_a_fixed_order():
    assert parse_faults("pause,kill") == ("kill", "pause")
    assert parse_faults(" drop , restart ") == ("drop", "restart")
    assert parse_faults("none") == ()


def test_an_unknown_fault_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"^--faults 'kill,crash': unknown fault\(s\) \['crash'\]; pass a "
                                         r"comma-separated subset of kill,drop,restart,pause, or 'none' for a run "
                                         r"without faults$"):
        parse_faults("kill,crash")


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "redis://localhost:6380/2", "redis://[::1]:6379/0",
                                 "redis://user:pw@127.0.0.2:6379/0"])
def test_loopback_urls_are_accepted(url):
    assert check_loopback_url(url) == url


def test_a_url_off_this_machine_is_refused_without_its_password():
    with pytest.raises(ValueError, match=r"^--url 'redis://u:\*\*\*@10\.0\.0\.5:6379/0' names host '10\.0\.0\.5', "
                                         r"which is not a loopback address; .* pass a server on 127\.0\.0\.1 \(or ::1, "
                                         r"localhost\), or leave --url out for a throwaway one$"):
        check_loopback_url("redis://u:secret@10.0.0.5:6379/0")


def test_a_url_off_this_machine_is_refused_without_a_password_given_as_a_query_parameter():
    with pytest.raises(ValueError) as refused:
        check_loopback_url("redis://10.0.0.5:6379/0?password=secret")
    assert "secret" not in str(refused.value) and "?password=***" in str(refused.value), refused.value


def test_a_tls_url_is_refused():
    with pytest.raises(ValueError, match=r"^--url 'rediss://127\.0\.0\.1:6379/0' has scheme 'rediss'; the torture "
                                         r"proxies plain TCP"):
        check_loopback_url("rediss://127.0.0.1:6379/0")


def test_faults_that_need_the_servers_process_are_refused_with_a_users_server():
    with pytest.raises(ValueError, match=r"^--faults restart,pause needs the server's process, which --url does not "
                                         r"give this run; leave --url out \(a throwaway redis-server\) or drop "
                                         r"restart,pause$"):
        TortureConfig(faults=("kill", "restart", "pause"), url="redis://127.0.0.1:6379/0")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("duration", 0, r"^--duration=0 must be > 0; pass e.g. 2$"),
    ("producers", 1.5, r"^--producers=1.5 must be an int; pass e.g. 2$"),
    ("persistence", "sometimes", r"^--persistence 'sometimes' is not one of always, everysec, none; "),
    ("socket_timeout", 1.0, r"^--socket-timeout 1.0 must be > 1 s: a blocked acquire waits in slices of up to 1 s"),
    ("seed", -1, r"^--seed -1 must be an int >= 0; pass e.g. --seed 42$"),
])
def test_bad_values_are_refused_naming_them(field, value, message):
    with pytest.raises((ValueError, TypeError), match=message):
        TortureConfig(**{field: value})


def test_the_proxy_is_used_when_replies_are_dropped_unless_told_otherwise():
    assert TortureConfig(faults=("drop",)).uses_proxy
    assert not TortureConfig(faults=("kill",)).uses_proxy
    assert TortureConfig(faults=(), proxy=True).uses_proxy


def test_the_same_seed_gives_the_same_schedule_and_another_seed_another():
    args = (("kill", "drop", "restart", "pause"), 60.0, 2, 3, 2.5)
    assert plan(7, *args) == plan(7, *args)
    assert plan(7, *args) != plan(8, *args)


def test_each_fault_kind_keeps_its_schedule_in_any_mix():
    everything = plan(7, ("kill", "drop", "restart", "pause"), 60.0, 2, 3, 2.5)
    for kind in ("kill", "drop", "restart", "pause"):
        alone = plan(7, (kind,), 60.0, 2, 3, 2.5)
        assert alone == tuple(step for step in everything if step.fault == kind)


def test_a_schedule_stays_inside_the_run_and_pauses_outlast_the_socket_timeout():
    steps = plan(11, ("kill", "drop", "restart", "pause"), 120.0, 2, 3, 2.5)
    assert [s.at for s in steps] == sorted(s.at for s in steps)
    assert all(1.0 <= s.at <= 119.0 for s in steps)
    kinds = {s.fault for s in steps}
    assert kinds == {"kill", "drop", "restart", "pause"}
    assert all(s.seconds > 2.5 for s in steps if s.fault == "pause")
    assert {s.target for s in steps if s.fault == "kill"} <= {"c0", "c1", "c2", "p0", "p1"}
    assert {s.mode for s in steps if s.fault == "kill"} == {"anywhere", "mid-ack"}
    drops = sum(1 for s in steps if s.fault == "drop")
    assert 120 / MEAN_INTERVAL["drop"] / 2 < drops < 120 / MEAN_INTERVAL["drop"] * 2  # about one every 1.5 s


def test_a_short_run_schedules_each_kind_asked_for_at_least_once():
    # a restart or a pause comes about every 15 s: in a 4 s run most seeds would draw none
    kinds = ("kill", "drop", "restart", "pause")
    for seed in range(40):
        steps = plan(seed, kinds, 4.0, 1, 2, 2.5)
        assert {s.fault for s in steps} == set(kinds), (seed, steps)
        assert all(1.0 <= s.at <= 3.0 for s in steps)
        for kind in kinds:  # the added step comes from the kind's own stream: the same in any mix
            assert plan(seed, (kind,), 4.0, 1, 2, 2.5) == tuple(s for s in steps if s.fault == kind)


def test_a_run_too_short_for_the_quiet_seconds_schedules_nothing():
    assert plan(3, ("kill", "restart"), 2.0, 1, 2, 2.5) == ()


def test_a_run_with_faults_too_short_to_hold_one_is_refused_before_it_starts(capsys):
    from refqueue.cli import main

    with pytest.raises(ValueError, match=r"^--duration 2 leaves no time for faults \(none comes in the first or the "
                                         r"last 1 s of the run\); pass --duration 5 or more, or --faults none$"):
        TortureConfig(faults=("kill",), duration=2.0)
    assert TortureConfig(faults=(), duration=2.0).duration == 2.0  # a run without faults may be that short
    assert TortureConfig(faults=("restart",), duration=2.5).duration == 2.5
    assert main(["torture", "--faults", "kill,restart", "--duration", "1.5"]) == 2
    assert "--duration 1.5 leaves no time for faults" in capsys.readouterr().err


def test_folders_and_a_users_server_are_checked_before_any_run_starts(tmp_path, capsys):
    # (two runs sharing a folder ran the first, then exited 2 without its results; a file as --dir and an
    # unreachable --url ended in tracebacks, the latter leaving a temporary folder behind)
    from refqueue.cli import main

    def refused(*argv: str) -> str:
        assert main(["torture", "--duration", "5", *argv]) == 2
        return capsys.readouterr().err

    root = tmp_path / "runs"
    assert "--faults none and --faults none are the same run" in refused("--faults", "none", "--faults", "none",
                                                                         "--dir", str(root))
    assert "are the same run" in refused("--faults", "kill,drop", "--faults", "drop,kill", "--dir", str(root))
    (root / "kill" / "history").mkdir(parents=True)
    (root / "kill" / "history" / "p1.jsonl").write_text("")
    assert "already holds a run's history" in refused("--faults", "none", "--faults", "kill", "--dir", str(root))
    assert not (root / "none").exists()  # the first run did not start
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert f"--dir {str(afile)!r} exists and is not a folder" in refused("--faults", "none", "--dir", str(afile))
    before = set(tmp_path.parent.glob("refqueue-torture-*")) | set(Path(tempfile.gettempdir()).glob("refqueue-torture-*"))
    err = refused("--faults", "none", "--url", "redis://127.0.0.1:1/0")
    assert "--url 'redis://127.0.0.1:1/0': no Redis server answers there" in err and "Traceback" not in err
    after = set(tmp_path.parent.glob("refqueue-torture-*")) | set(Path(tempfile.gettempdir()).glob("refqueue-torture-*"))
    assert after == before
