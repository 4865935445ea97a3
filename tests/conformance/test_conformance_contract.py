"""The backend contract: loading MODULE:FACTORY, capabilities, rejection kinds."""

import pytest

from refqueue.conformance import Backend, Capabilities, backend_of, load_backend, rejection_kind
from refqueue.errors import DuplicateSample, ForeignLease, PutAborted, QueueClosed, ReplayedSample, SampleMissing, StoreFull


def test_load_backend_reads_capabilities_and_store_factory():
    backend = load_backend("conformance.mutants.release_scrubs:make")
    assert isinstance(backend, Backend)
    assert backend.target == "conformance.mutants.release_scrubs:make"
    assert backend.capabilities == Capabilities(dead_letter_limit=True)  # the mutants' base declares it
    assert callable(backend.make_store)


def test_load_backend_defaults_capabilities_of_a_plain_function():
    def make(store, clock, **config):
        raise AssertionError("never called")

    backend = backend_of(make)
    assert backend.capabilities == Capabilities()
    assert backend.make_store is None
    assert backend.target.endswith("test_load_backend_defaults_capabilities_of_a_plain_function.<locals>.make")


@pytest.mark.parametrize("target", ["nocolon", ":make", "module:", "a:b:c"])
def test_load_backend_rejects_a_malformed_target(target):
    with pytest.raises(
        ValueError,
        match=rf"^backend target '{target}' is not of the form 'module:factory'; "
        r"pass e\.g\. 'refqueue\.conformance\.backends:inprocess'$",
    ):
        load_backend(target)


def test_load_backend_names_a_module_that_does_not_import():
    with pytest.raises(
        ValueError,
        match=r"^backend target 'no_such_module_xyz:make': cannot import module 'no_such_module_xyz' "
        r"\(No module named 'no_such_module_xyz'\); install it or run from the directory that contains it$",
    ):
        load_backend("no_such_module_xyz:make")


def test_load_backend_names_a_missing_attribute():
    with pytest.raises(
        ValueError,
        match=r"^backend target 'refqueue\.conformance\.backends:nope': module 'refqueue\.conformance\.backends' "
        r"has no attribute 'nope'; name a factory make\(store, clock, \*\*config\) defined there$",
    ):
        load_backend("refqueue.conformance.backends:nope")


def test_load_backend_rejects_something_not_callable():
    with pytest.raises(
        TypeError,
        match=r"^backend target 'refqueue\.conformance\.cli:DEFAULT_BACKEND' names a str, not a callable "
        r"make\(store, clock, \*\*config\); pass the factory function itself$",
    ):
        load_backend("refqueue.conformance.cli:DEFAULT_BACKEND")


def test_load_backend_rejects_a_non_str_target():
    with pytest.raises(TypeError, match=r"^a backend target must be a 'module:factory' str, got 3 \(int\)$"):
        load_backend(3)


def test_capabilities_are_bools():
    with pytest.raises(TypeError, match=r"^Capabilities\.fifo must be a bool, got 1 \(int\); pass True or False$"):
        Capabilities(fifo=1)
    caps = Capabilities(fifo=False, dedup_window=False)
    assert caps.lacking() == ["fifo", "dedup_window", "faults", "dead_letter_limit"]  # the last two: off unless declared
    assert caps.to_dict()["extend"] is True


def test_wrong_capabilities_attribute_is_refused():
    def make(store, clock, **config):
        raise AssertionError("never called")

    make.capabilities = {"fifo": True}
    with pytest.raises(TypeError, match=r"\.capabilities must be a refqueue\.conformance\.Capabilities, got"):
        backend_of(make)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (QueueClosed("x"), "closed"),
        (DuplicateSample("x"), "duplicate"),
        (ReplayedSample("x"), "replay"),
        (ForeignLease("x"), "foreign"),
        (StoreFull("x"), "capacity"),
        (SampleMissing("x"), "missing"),
        (PutAborted("x"), "aborted"),
        (TypeError("x"), "invalid"),
        (ValueError("x"), "invalid"),
        (RuntimeError("x"), None),
        (KeyError("x"), None),
    ],
)
def test_rejection_kind(exc, kind):
    assert rejection_kind(exc) == kind


def test_a_third_party_error_class_names_its_kind():
    class Busy(Exception):
        KIND = "closed"

    assert rejection_kind(Busy()) == "closed"
