"""Passwords out of what refqueue prints: ``redacted(url)`` for one URL (the
Redis backend's ``repr``, ``.url`` and errors, the torture's ``--url``
messages), ``redacted_text(text)`` for every URL inside a message (certify's
options and the errors a factory raised about them).  Text only: neither
ever raises, whatever it is given."""

from __future__ import annotations

import re

__all__ = ["redacted", "redacted_text"]

# A password given as a query parameter (redis-py reads ?password=), in any case.
_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&#]*", re.IGNORECASE)
# Inside free text a URL ends at white space or a quote.
_TEXT_USER_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:'\"]*):[^\s@'\"]*@")
_TEXT_QUERY_PASSWORD = re.compile(r"(?P<head>[?&;]password=)[^&#\s'\"]*", re.IGNORECASE)


def redacted(url: str) -> str:
    """``url`` with every password in it replaced by ``***``: the one after the
    user (everything from the first ``:`` of the part before the last ``@``
    ahead of the query), and any ``password=`` query parameter."""
    scheme, sep, rest = url.partition("://")
    if sep:
        cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
        userinfo, at, after = rest[:cut].rpartition("@")
        if at and ":" in userinfo:
            url = f"{scheme}{sep}{userinfo.partition(':')[0]}:***@{after}{rest[cut:]}"
    return _QUERY_PASSWORD.sub(r"\1***", url)


def redacted_text(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***`` (the
    one after a user, ``scheme://user:PASSWORD@host``, and a ``password=``
    query parameter)."""
    text = _TEXT_USER_PASSWORD.sub(lambda m: f"{m['head']}:***@", text)
    return _TEXT_QUERY_PASSWORD.sub(lambda m: f"{m['head']}***", text)
