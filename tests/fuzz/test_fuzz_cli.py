"""Fuzz: the ``refqueue`` command's arguments, in-process (``refqueue.cli.main``).

Every hostile argument list ends with exit status 2 and a one-line message
on stderr, never a traceback: argparse's own rejections (``SystemExit(2)``)
and the commands' (``run`` returns 2).  ``certify`` is replaced by a
sentinel so that an argument list the oracle calls valid is seen reaching
it (and nothing long ever runs); ``check-spec`` reads hostile manifests from
a temporary folder, which holds no config a TLC run could start on.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz_helpers import hostile_text

from refqueue.cli import main

pytestmark = pytest.mark.timeout(300)
SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
                    deadline=None)


class ReachedCertify(Exception):
    """The stand-in for certify was called: the arguments were all accepted."""


REACHED: list[bool] = []  # the stand-in certify records its call here (the CLI turns what it raises into a verdict)


def run_cli(argv: list[str]) -> tuple[int | None, str]:
    """``(exit status, stderr)``; status None when the stand-in certify was reached."""
    err = io.StringIO()
    REACHED.clear()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except ReachedCertify:
            code = None
    return (None if REACHED else code), err.getvalue()


@pytest.fixture
def no_certify(monkeypatch):
    import refqueue.conformance.certify as certify_module

    def reached(*args, **kwargs):
        REACHED.append(True)
        raise ReachedCertify

    monkeypatch.setattr(certify_module, "certify", reached)


number_text = st.one_of(
    st.sampled_from(["0", "-1", "1", "2", "0.5", "nan", "inf", "-inf", "1e400", "3600", "1e10", "", " ", "0x10",
                     "1_000", "٣", "\x00", "--", "-"]),
    hostile_text,
    st.integers().map(str),
    st.floats().map(repr),
)

OPTIONS = {
    "--profile": st.one_of(st.sampled_from(["ci", "deep", "CI", ""]), hostile_text),
    "--steps": number_text,
    "--seed": number_text,
    "--producer-bound": number_text,
    "--wake-bound": number_text,
    "--timeout": number_text,
}


def valid(option: str, text: str) -> bool:
    """The oracle: does certify accept ``text`` for ``option``?"""
    if option == "--profile":
        return text in ("ci", "deep")
    if text.startswith("-") and not _is_number(text):
        return False  # argparse reads it as an option
    try:
        if option in ("--steps", "--seed"):
            value = int(text)
            return value >= 0 if option == "--seed" else value >= 1
        value = float(text)
    except ValueError:
        return False
    if option == "--timeout":
        return math.isfinite(value) and 0 < value <= threading.TIMEOUT_MAX
    return 0 < value < 3600


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@SETTINGS
@given(choices=st.lists(st.tuples(st.sampled_from(sorted(OPTIONS)), st.data()), min_size=1, max_size=3, unique_by=lambda t: t[0]))
def test_certify_options_exit_2_with_a_message_or_reach_certify_only_when_valid(no_certify, tmp_path_factory, choices):
    argv = ["certify", "--no-progress", "--report", str(tmp_path_factory.mktemp("report"))]
    all_valid = True
    for option, data in choices:
        text = data.draw(OPTIONS[option])
        argv += [option, text]
        all_valid = all_valid and valid(option, text)
    code, err = run_cli(argv)
    assert (code is None) == all_valid, (argv, code, err)  # reached certify exactly when all were valid
    if code is None:
        return
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err and err.strip(), err
    assert "refqueue certify" in err or "error:" in err


TARGETS = st.one_of(
    st.sampled_from(["", ":", "x", "x:", ":make", "a:b:c", "no.such.module:make", "refqueue:nothing",
                     "refqueue.refs:MAX_INT", "refqueue.refs:", "../etc:passwd", "refqueue.refs:FeatureSpec.nope",
                     "\x00:make", "ünïcode:make", "refqueue..refs:make"]),
    hostile_text.map(lambda t: f"{t}:make"),
)


@SETTINGS
@given(target=TARGETS)
def test_a_hostile_certify_target_exits_2_naming_it(no_certify, target):
    code, err = run_cli(["certify", target, "--no-progress"])
    assert code == 2, (target, code, err)
    assert "Traceback" not in err and (repr(target)[1:20] in err or "error:" in err or "backend target" in err), err


manifests = st.one_of(
    st.binary(max_size=64),
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)),
        lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.sampled_from(["configs", "name", "cfg", "x"]), c, max_size=3)),
        max_leaves=8,
    ).map(lambda v: json.dumps(v).encode()),
    st.integers(1, 20_000).map(lambda d: ("[" * d + "]" * d).encode()),
    st.just(b'{"configs": [{"name": "x", "cfg": "../../etc/passwd"}]}'),
)


@SETTINGS
@given(content=manifests)
def test_check_spec_with_a_hostile_manifest_exits_2_with_a_message(tmp_path_factory, content):
    spec_dir = tmp_path_factory.mktemp("spec")
    (spec_dir / "manifest.json").write_bytes(content)
    code, err = run_cli(["check-spec", "--spec-dir", str(spec_dir)])
    assert code == 2, (content[:80], code, err)
    assert err.startswith("refqueue check-spec: ") and "Traceback" not in err, err


@SETTINGS
@given(option=st.sampled_from(["--workers", "--timeout", "--simulate-seconds"]), text=number_text)
def test_check_spec_numeric_options_reject_hostile_values(tmp_path_factory, option, text):
    spec_dir = tmp_path_factory.mktemp("spec")  # no manifest: a valid option still ends in exit 2
    code, err = run_cli(["check-spec", "--spec-dir", str(spec_dir), option, text])
    assert code == 2 and "Traceback" not in err and err.strip(), (option, text, err)


@SETTINGS
@given(argv=st.lists(hostile_text, max_size=3))
def test_an_unknown_command_or_stray_arguments_exit_2(argv):
    if argv and argv[0] in ("explore", "check-spec", "certify", "bench"):
        return  # the commands' own arguments are fuzzed above
    code, err = run_cli(argv)
    assert code == 2 and "Traceback" not in err, (argv, code, err)
