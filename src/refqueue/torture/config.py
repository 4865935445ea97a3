"""``TortureConfig``: what one torture run does, checked before anything starts.

Every check names the value, what is wrong and the fix; a rejected
configuration starts nothing.  The server is a throwaway ``redis-server``
this run starts on a free 127.0.0.1 port (``url=None``), or the user's at a
``redis://`` URL on a loopback address: the torture never talks to another
machine.  Faults that need the server's process (``restart``, ``pause``)
need the throwaway server.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass
from urllib.parse import urlsplit

from refqueue._redact import redacted
from refqueue.torture.schedule import QUIET

__all__ = ["TortureConfig", "FAULTS", "PERSISTENCE", "parse_faults", "check_loopback_url"]

FAULTS = ("kill", "drop", "restart", "pause")
PERSISTENCE = ("always", "everysec", "none")
_SERVER_FAULTS = ("restart", "pause")


def parse_faults(text: str) -> tuple[str, ...]:
    """``"kill,drop"`` -> ``("kill", "drop")``; ``"none"`` -> ``()``; the order of ``FAULTS``."""
    if not isinstance(text, str):
        raise TypeError(f"faults must be a str like 'kill,drop', got {text!r}")
    names = [name.strip() for name in text.split(",") if name.strip()]
    if names == ["none"]:
        return ()
    unknown = [name for name in names if name not in FAULTS]
    if unknown or not names:
        raise ValueError(
            f"--faults {text!r}: {'unknown fault(s) ' + str(unknown) if unknown else 'no fault named'}; "
            f"pass a comma-separated subset of {','.join(FAULTS)}, or 'none' for a run without faults"
        )
    return tuple(name for name in FAULTS if name in names)


def check_loopback_url(url: str) -> str:
    """``url`` if it is a plain ``redis://`` URL on a loopback address, else ``ValueError`` naming the fix."""
    if not isinstance(url, str):
        raise TypeError(f"--url must be a str like 'redis://127.0.0.1:6379/0', got {url!r}")
    parts = urlsplit(url)
    if parts.scheme != "redis":
        raise ValueError(
            f"--url {redacted(url)!r} has scheme {parts.scheme!r}; the torture proxies plain TCP, so pass a "
            f"redis:// URL on a loopback address, e.g. 'redis://127.0.0.1:6379/0'"
        )
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"--url {redacted(url)!r} names host {host!r}, which is not a loopback address; the torture kills, "
            f"drops and deletes what it runs against, so it only runs on this machine: pass a server on "
            f"127.0.0.1 (or ::1, localhost), or leave --url out for a throwaway one"
        )
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        raise ValueError(f"--url {redacted(url)!r}: {exc}; pass e.g. 'redis://127.0.0.1:6379/0'") from None
    return url


def _positive(name: str, value: object, *, integer: bool = False, allow_zero: bool = False) -> None:
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or (not integer and not math.isfinite(value)):
        raise TypeError(f"{name}={value!r} must be a{'n int' if integer else ' finite number'}; pass e.g. 2")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name}={value!r} must be {'>= 0' if allow_zero else '> 0'}; pass e.g. 2")


@dataclass(frozen=True)
class TortureConfig:
    """One run.  ``faults`` is a subset of ``FAULTS`` (empty: no faults, the baseline)."""

    faults: tuple[str, ...] = FAULTS
    duration: float = 60.0  # seconds of load and faults (the end of the run comes after)
    seed: int = 0  # every fault schedule is a function of it
    url: str | None = None  # None: a throwaway redis-server on a free 127.0.0.1 port
    persistence: str = "always"  # the throwaway server's: appendfsync always / everysec, or none at all
    producers: int = 2
    consumers: int = 3
    directory: str | None = None  # the run's folder (store, histories, server data); None: a temporary one
    visibility_timeout: float = 3.0
    socket_timeout: float = 2.5  # the clients'; a pause lasts longer than this
    max_deliveries: int = 6
    fail_rate: float = 0.05  # how often a consumer fails a lease instead of acking it
    stall_every: float = 20.0  # mean seconds between a consumer's stalls past the visibility timeout; 0: never
    proxy: bool | None = None  # route the clients through the dropping proxy; None: when 'drop' is a fault
    high_watermark_samples: int = 48  # the store's pause/resume watermarks, in samples
    low_watermark_samples: int = 16

    def __post_init__(self) -> None:
        if not isinstance(self.faults, tuple) or any(f not in FAULTS for f in self.faults):
            raise ValueError(f"TortureConfig(faults={self.faults!r}) must be a tuple of {FAULTS}; use parse_faults()")
        _positive("--duration", self.duration)
        if self.faults and self.duration <= 2 * QUIET:
            raise ValueError(
                f"--duration {self.duration:g} leaves no time for faults (none comes in the first or the last "
                f"{QUIET:g} s of the run); pass --duration 5 or more, or --faults none"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"--seed {self.seed!r} must be an int >= 0; pass e.g. --seed 42")
        if self.url is not None:
            check_loopback_url(self.url)
            server_faults = [f for f in self.faults if f in _SERVER_FAULTS]
            if server_faults:
                raise ValueError(
                    f"--faults {','.join(server_faults)} needs the server's process, which --url does not give "
                    f"this run; leave --url out (a throwaway redis-server) or drop {','.join(server_faults)}"
                )
        if self.persistence not in PERSISTENCE:
            raise ValueError(
                f"--persistence {self.persistence!r} is not one of {', '.join(PERSISTENCE)}; pass always "
                f"(appendfsync always), everysec, or none (no AOF: a restart loses the queue's state)"
            )
        _positive("--producers", self.producers, integer=True)
        _positive("--consumers", self.consumers, integer=True)
        _positive("--visibility-timeout", self.visibility_timeout)
        _positive("--socket-timeout", self.socket_timeout)
        if self.socket_timeout <= 1.0:
            raise ValueError(
                f"--socket-timeout {self.socket_timeout} must be > 1 s: a blocked acquire waits in slices of up "
                f"to 1 s on its socket; pass e.g. 2.5"
            )
        _positive("max_deliveries", self.max_deliveries, integer=True)
        _positive("--stall-every", self.stall_every, allow_zero=True)
        if not 0 <= self.fail_rate < 1:
            raise ValueError(f"fail_rate={self.fail_rate!r} must be in [0, 1); pass e.g. 0.05")
        if not 0 <= self.low_watermark_samples < self.high_watermark_samples:
            raise ValueError(
                f"watermarks low={self.low_watermark_samples} high={self.high_watermark_samples} must satisfy "
                f"0 <= low < high; pass e.g. 16 and 48"
            )

    @property
    def uses_proxy(self) -> bool:
        return "drop" in self.faults if self.proxy is None else self.proxy

    @property
    def label(self) -> str:
        return ",".join(self.faults) or "none"
