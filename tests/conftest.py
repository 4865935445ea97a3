"""Shared test configuration: Hypothesis profiles.

``CI=true`` makes Hypothesis load its own derandomized ``ci`` profile; ``deep``
is for long randomized runs (``pytest --hypothesis-profile=deep``).
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "deep",
    max_examples=2000,
    stateful_step_count=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
