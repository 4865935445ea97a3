"""Legal variants: backends that use a freedom the contract gives them (reclaim
ties in any order, delivery in any order, the seed's API only, a consumer
that polls within the wake bound, the in-process queue on its own clock, and driven through two clients) and that the conformance kit must certify.  ``LEGAL`` lists them as ``module:factory``
targets; ``conformance/test_legal.py`` certifies each under the ci profile.
"""

LEGAL = (
    "conformance.legal.tie_any_order:make",
    "conformance.legal.tie_any_order:make_newest_first",
    "conformance.legal.random_order:make",
    "conformance.legal.seed_api:make",
    "conformance.legal.poll_10ms:make",
    "conformance.legal.wall_clock:make",
    "conformance.legal.wall_clock:make_reduced",
    "conformance.legal.shared_client:make",
)
