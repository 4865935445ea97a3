"""Backends written for docs/CERTIFYING.md (``refqueue certify examples.<module>:make``)."""
