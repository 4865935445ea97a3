"""The torture checker: composed rules over one merged history (Jepsen's
``checker/compose``).  Each rule returns its own ``Verdict``: valid
(``True``), anomalies found (``False``) or unknown (``None``: the history
does not let it decide, e.g. the queue never drained; an unknown is never a
pass), what it checked, and what it skipped and why.  ``check`` runs them
all; the run is valid only when every verdict is ``True`` or skipped.

The rules and the anomaly kinds each can report:

* ``faults``: every fault kind the run asked for took effect at least once
  (a kill that found a live process, a reply dropped, a restart, a pause);
  one that never did makes the run unknown, not valid: it shows nothing
  about surviving that fault.  No anomaly kind (it judges the run, not the
  system).
* ``reads``: every read matches the checksum recorded at its put
  (``checksum_mismatch``); a read fails only with ``SampleMissing``
  (``read_failed``); no lease whose read found the data gone committed an
  ack (``acked_without_data``: the queue held a live lease on data that was
  already scrubbed or lost).
* ``lease_identity``: no lease identity ``(epoch, lease_id)`` is issued
  twice (``lease_reused``).
* ``acks``: no stale ack is accepted: an ack answering True for a lease
  after another lease of the same sample was issued later, in real time
  (the later acquire returned before the ack was sent) (``stale_ack_accepted``);
  at most one ack commits per sample (``double_ack``).
* ``completions`` (durable state only, once the queue drained): every
  sample whose put committed is acked exactly once or dead-lettered
  (``sample_lost``: none of it, not even an uncertain ack, i.e. one whose
  process died in it, which may have committed; ``double_completion``:
  acked and dead-lettered).
* ``residency`` (durable state only): after close, drain, intents collected
  and ``gc()``, the store's directory holds no sample file
  (``resident_at_end``) except the data of a producer killed between its
  store put and its queue put (listed as a note: no queue ever knew it), and
  ``health()`` counts what the directory holds (``health_mismatch``).
* ``reclaimers``: no consumer's reclaimer died (``reclaimer_died``: its
  ``stop_reclaimer`` raised), and the queue drained without a hand
  ``reclaim_expired`` (``drain_stalled``).
* ``errors``: every error a client saw is a refqueue exception
  (``unexpected_error``); no process died of an error (``process_crashed``).
* ``state_loss``: after a restart without persistence, some call raised
  ``QueueStateLost`` (``loss_undetected``); with ``appendfsync always``, or
  with no restart at all, none did (``loss_misreported``).  With
  ``everysec`` a restart may lose the last acknowledged writes (Redis
  postpones the AOF write while a background fsync runs, up to 2 s), so a
  ``QueueStateLost`` after such a restart is a detected loss, not a false one.

A lossy restart (persistence ``none``) or a ``QueueStateLost`` makes the
state-dependent rules (``completions``, ``residency``) skip: samples put
before the loss are gone by design; ``reads``, ``lease_identity`` and
``acks`` still hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from refqueue.torture.facts import Facts, derive, lease_key
from refqueue.torture.history import ERROR, OK, UNKNOWN, History, Op

__all__ = ["Anomaly", "Verdict", "CheckResult", "check", "RULES", "ANOMALY_KINDS"]

ANOMALY_KINDS = (
    "checksum_mismatch", "read_failed", "acked_without_data", "lease_reused", "stale_ack_accepted", "double_ack",
    "sample_lost", "double_completion", "resident_at_end", "health_mismatch", "reclaimer_died", "drain_stalled",
    "unexpected_error", "process_crashed", "loss_undetected", "loss_misreported",
)
_CLEAN_EXITS = (0, -9, 3)  # drained or stopped, SIGKILLed (the nemesis), state lost


@dataclass(frozen=True)
class Anomaly:
    kind: str
    message: str
    ops: tuple[int, ...]  # the evidence: indices into the history
    sample: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "message": self.message, "ops": list(self.ops), "sample": self.sample}


@dataclass
class Verdict:
    name: str
    valid: bool | None  # None: unknown
    checked: str
    skipped: str = ""
    anomalies: list[Anomaly] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "valid": self.valid, "checked": self.checked, "skipped": self.skipped,
                "anomalies": [a.to_dict() for a in self.anomalies], "notes": self.notes}


@dataclass
class CheckResult:
    verdicts: list[Verdict]

    @property
    def anomalies(self) -> list[Anomaly]:
        return [a for v in self.verdicts for a in v.anomalies]

    @property
    def valid(self) -> bool | None:
        """False on any anomaly; None if some rule could not decide; else True."""
        if any(v.valid is False for v in self.verdicts):
            return False
        if any(v.valid is None and not v.skipped for v in self.verdicts):
            return None
        return True


@dataclass(frozen=True)
class _Context:
    history: History
    facts: Facts
    persistence: str
    lossy_restarts: tuple[Op, ...]  # restarts of a server without persistence
    lost_seen: tuple[Op, ...]  # calls that raised QueueStateLost

    @property
    def state_lost(self) -> bool:
        return bool(self.lossy_restarts or self.lost_seen)

    def t(self, op: Op) -> str:
        return f"+{self.history.seconds(op.invoke_ns):.3f}s"


def _verdict(name: str, checked: str, anomalies: list[Anomaly], notes: list[str] | None = None) -> Verdict:
    return Verdict(name, not anomalies, checked, anomalies=anomalies, notes=notes or [])


# When a nemesis step took effect, by its kind (refqueue.torture.nemesis records each step's result).
_TOOK_EFFECT: dict[str, Callable[[Any], bool]] = {
    "kill": lambda result: bool(result.get("killed")),
    "drop": lambda result: result.get("dropped") is True,
    "restart": lambda result: True,
    "pause": lambda result: True,
}


def _faults(c: _Context) -> Verdict:
    name = "faults"
    start = next((op for op in c.facts.faults if op.call == "start"), None)
    asked = start.args.get("faults") if start is not None else None
    if not isinstance(asked, list):
        return Verdict(name, None, "", skipped="the run's start record does not list the faults asked for")
    if not asked:
        return _verdict(name, "no faults were asked for (a baseline run)", [])
    counts = []
    missing = []
    for kind in asked:
        steps = [op for op in c.facts.faults if op.call == kind]
        effect = _TOOK_EFFECT.get(kind, lambda result: True)
        took = sum(1 for op in steps if op.outcome == OK and isinstance(op.result, dict) and effect(op.result))
        counts.append(f"{kind} {took} of {len(steps)}")
        if took == 0:
            missing.append(f"{kind} ({len(steps)} scheduled)")
    checked = f"faults that took effect of those scheduled: {', '.join(counts)}"
    if missing:
        return Verdict(name, None, f"{checked}; never took effect: {', '.join(missing)}: the run shows nothing "
                       f"about surviving it; run longer (--duration) or with another --seed")
    return _verdict(name, checked, [])


def _reads(c: _Context) -> Verdict:
    found = []
    count = 0
    for s in c.facts.samples.values():
        for get in s.gets:
            count += 1
            if get.outcome == OK and s.checksum is not None and get.result["checksum"] != s.checksum:
                evidence = [op.index for op in (s.store_put, get) if op is not None]
                found.append(Anomaly("checksum_mismatch", f"{get.process} read {s.sample} with checksum "
                                     f"{get.result['checksum']} at {c.t(get)}; its put recorded {s.checksum}",
                                     tuple(evidence), s.sample))
            elif get.outcome == ERROR and get.error != "SampleMissing":
                found.append(Anomaly("read_failed", f"{get.process} could not read {s.sample} at {c.t(get)}: "
                                     f"{get.error}: {get.message}", (get.index,), s.sample))
            elif get.outcome == ERROR:
                ack = s.committed_acks.get(lease_key(get.args))
                if ack is not None:
                    found.append(Anomaly(
                        "acked_without_data", f"{get.process} found no data for {s.sample} under lease "
                        f"{get.args['lease_id']} at {c.t(get)}, yet that lease's ack committed ({ack.process} "
                        f"{ack.call} at {c.t(ack)}): the queue held a live lease on data that was gone",
                        (get.index, ack.index), s.sample))
    return _verdict("reads", f"{count} reads against the checksums of their puts", found)


def _lease_identity(c: _Context) -> Verdict:
    found = []
    for (epoch, lease_id), ops in c.facts.leases.items():
        if len(ops) > 1:
            whom = ", ".join(f"{op.result['sample']} to {op.process} at {c.t(op)}" for op in ops)
            found.append(Anomaly("lease_reused", f"lease ({epoch[:8]}, {lease_id}) was issued {len(ops)} times: "
                                 f"{whom}", tuple(op.index for op in ops), ops[-1].result["sample"]))
    return _verdict("lease_identity", f"{len(c.facts.leases)} lease identities (epoch, lease_id) issued once each",
                    found)


def _acks(c: _Context) -> Verdict:
    found = []
    accepted = 0
    for s in c.facts.samples.values():
        for ack in s.acks:
            if ack.outcome != OK or ack.result is not True:
                continue
            accepted += 1
            key = lease_key(ack.args)
            issued = [op for op in s.leases if lease_key(op.result) == key]
            if not issued:
                continue
            mine = issued[0]
            later = [op for op in s.leases if lease_key(op.result) != key and op.invoke_ns > mine.return_ns
                     and op.return_ns is not None and op.return_ns < ack.invoke_ns]
            if later:
                found.append(Anomaly(
                    "stale_ack_accepted", f"{ack.process}'s ack of {s.sample} lease {key[1]} answered True at "
                    f"{c.t(ack)}, but lease {later[0].result['lease_id']} of it had been issued to "
                    f"{later[0].process} at {c.t(later[0])}, after lease {key[1]}", (mine.index, later[0].index,
                                                                                        ack.index), s.sample))
        if len(s.committed_acks) > 1:
            ops = sorted(s.committed_acks.values(), key=lambda op: op.index)
            found.append(Anomaly("double_ack", f"{s.sample} was acked {len(ops)} times: " + ", ".join(
                f"lease {op.args['lease_id']} by {op.process} ({op.call}) at {c.t(op)}" for op in ops),
                tuple(op.index for op in ops), s.sample))
    return _verdict("acks", f"{accepted} acks answering True: none stale, at most one per sample", found)


def _final_drained(c: _Context) -> bool | None:
    drained = c.facts.final.get("is_drained")
    if drained is None or drained.outcome != OK:
        return None
    return drained.result is True


def _completions(c: _Context) -> Verdict:
    name = "completions"
    if c.state_lost:
        return Verdict(name, None, "", skipped="the queue's state was lost: the samples put before it are gone")
    if _final_drained(c) is not True:
        return Verdict(name, None, "", notes=["the queue never drained: whether every sample completes is unknown"])
    found = []
    committed = [s for s in c.facts.samples.values() if s.put_committed]
    for s in committed:
        if not s.committed_acks and not s.dead and not s.uncertain_acks:
            evidence = [op.index for op in [s.store_put, *s.puts, *s.leases, *s.acks] if op is not None]
            found.append(Anomaly("sample_lost", f"{s.sample}'s put committed but it was never acked nor "
                                 f"dead-lettered ({len(s.leases)} deliveries)", tuple(evidence), s.sample))
        elif s.committed_acks and s.dead:
            evidence = [op.index for op in s.committed_acks.values()] + [c.facts.final["dead_letters"].index]
            found.append(Anomaly("double_completion", f"{s.sample} was acked and dead-lettered",
                                 tuple(evidence), s.sample))
    dead = sum(1 for s in committed if s.dead)
    uncertain = sum(1 for s in committed if not s.committed_acks and not s.dead and s.uncertain_acks)
    return _verdict(name, f"{len(committed)} committed puts: each acked exactly once or dead-lettered ({dead}); "
                    f"{uncertain} completed by an ack whose answer never came", found)


def _residency(c: _Context) -> Verdict:
    name = "residency"
    residency = c.facts.final.get("residency")
    if residency is None or residency.outcome != OK:
        return Verdict(name, None, "", notes=["the run never measured the residency"])
    files = residency.result["files"]
    if c.state_lost:
        return Verdict(name, None, "", skipped=f"the queue's state was lost: {len(files)} sample files of lost "
                                               f"samples stay in the store (remove them by hand)")
    found, orphans = [], []
    for sample in files:
        s = c.facts.samples.get(sample)
        if s is None:
            found.append(Anomaly("resident_at_end", f"{sample} is in the store but no call of the run named it",
                                 (residency.index,), sample))
            continue
        writer = s.store_put.process if s.store_put is not None else None
        killed = writer in c.facts.exits and c.facts.exits[writer].result.get("code") == -9
        if not s.put_committed and killed:
            orphans.append(sample)
            continue
        found.append(_resident(c, s, residency))
    if orphans:
        notes = [f"{len(orphans)} sample file(s) of producers killed between their store put and their queue put "
                 f"(no queue ever held them): {', '.join(orphans[:5])}{' ...' if len(orphans) > 5 else ''}"]
    else:
        notes = []
    if residency.result["sample_count"] != len(files):
        found.append(Anomaly("health_mismatch", f"health() counts {residency.result['sample_count']} samples "
                             f"({residency.result['resident_bytes']} bytes); the directory holds {len(files)}",
                             (residency.index,)))
    return _verdict(name, f"{len(files)} sample files left after close, drain, intents and gc (only a killed "
                    f"producer's unenqueued data may stay)", found, notes)


def _resident(c: _Context, s, residency: Op) -> Anomaly:
    """Why ``s``'s data is still there, as far as the history shows."""
    if s.committed_acks:
        ack = next(iter(s.committed_acks.values()))
        done = (f"acked (lease {ack.args['lease_id']}, {ack.process} {ack.call} at {c.t(ack)})"
                f"{_why_no_scrub(c, s, ack)}")
    elif s.dead:
        done = "dead-lettered"
    elif s.uncertain_acks:
        ack = s.uncertain_acks[-1]
        done = (f"completed by {ack.process}'s ack of lease {ack.args['lease_id']} at {c.t(ack)}, which never "
                f"answered{_why_no_scrub(c, s, ack)}")
    else:
        done = "never completed"
    evidence = [op.index for op in [s.store_put, *s.leases, *s.acks, *s.scrubs] if op is not None]
    return Anomaly("resident_at_end", f"{s.sample}'s data is still in the store at the end: {done}",
                   tuple(evidence + [residency.index]), s.sample)


def _why_no_scrub(c: _Context, s, ack: Op) -> str:
    scrubbed = [op for op in s.scrubs if op.outcome == OK and op.result is True]
    if scrubbed:
        return ""
    if any(op.args.get("kill") == "mid-ack" for op in s.scrubs):
        return f"; {ack.process} was killed between the commit and the scrub"
    acks = [op for op in s.acks if lease_key(op.args) == lease_key(ack.args)]
    if any(op.outcome == ERROR for op in acks):
        return f"; the ack's reply was lost ({next(op.error for op in acks if op.outcome == ERROR)}) and nothing scrubbed"
    if any(op.outcome == UNKNOWN for op in acks + s.scrubs):
        return f"; {ack.process} died between the commit and the scrub"
    return "; no scrub ran"


def _reclaimers(c: _Context) -> Verdict:
    found = []
    stops = 0
    stopped = {op.process: op for op in c.history if op.call == "reclaimer_stopped"}
    for op in c.history:
        if op.call == "stop_reclaimer":
            stops += 1
            if op.outcome == ERROR:
                seen = stopped.get(op.process)
                when = f" (found stopped at {c.t(seen)})" if seen is not None else ""
                found.append(Anomaly("reclaimer_died", f"{op.process}'s reclaimer had died before the end{when}: "
                                     f"{op.message}", (seen.index,) if seen is not None else (op.index,)))
        elif op.call == "drain_stalled" and op.process == "final":
            found.append(Anomaly("drain_stalled", f"the drain stalled with {op.args['pending']} pending and "
                                 f"{op.args['outstanding']} leased for {op.args['still_s']} s: no reclaimer took "
                                 f"the orphaned leases back; the run drained by hand", (op.index,)))
    return _verdict("reclaimers", f"{stops} reclaimers stopped at the end, and a drain without a hand reclaim",
                    found)


def _errors(c: _Context) -> Verdict:
    found = []
    unexpected_by: set[str] = set()
    for op in c.history:
        if op.outcome == ERROR and not op.refqueue_error and op.call != "stop_reclaimer" \
                and op.process not in ("nemesis", "supervisor"):
            unexpected_by.add(op.process)
            found.append(Anomaly("unexpected_error", f"{op.process}'s {op.call} raised {op.error} (not a refqueue "
                                 f"exception) at {c.t(op)}: {op.message}", (op.index,), op.sample))
    for process, exit_op in c.facts.exits.items():
        code = exit_op.result.get("code")
        if code not in _CLEAN_EXITS and process not in unexpected_by:
            last = [op for op in c.history.by_process(process) if op.outcome == ERROR][-1:]
            what = f"; its last error: {last[0].call} raised {last[0].error}: {last[0].message}" if last else ""
            found.append(Anomaly("process_crashed", f"{process} exited with status {code}{what}",
                                 tuple(op.index for op in last) + (exit_op.index,)))
    return _verdict("errors", "every error a client saw is a refqueue exception; no process died of one", found)


def _state_loss(c: _Context) -> Verdict:
    name = "state_loss"
    if c.lossy_restarts:
        first = c.lossy_restarts[0]
        after = [op for op in c.lost_seen if op.invoke_ns > first.invoke_ns]
        if after:
            return _verdict(name, f"the loss was detected: {after[0].process}'s {after[0].call} raised "
                            f"QueueStateLost at {c.t(after[0])}", [])
        used = next((op for op in c.history if op.invoke_ns > (first.return_ns or first.invoke_ns)
                     and op.process not in ("nemesis", "supervisor") and op.outcome == OK
                     and (op.call in ("put", "ack") or (op.call == "acquire" and op.result))), None)
        evidence = (first.index,) + ((used.index,) if used is not None else ())
        return _verdict(name, "a restart without persistence is detected", [Anomaly(
            "loss_undetected", f"the server restarted without persistence at {c.t(first)} (its state gone), and no "
            f"call raised QueueStateLost: the clients went on" + (
                f" ({used.process}'s {used.call} answered at {c.t(used)})" if used is not None else ""),
            evidence)])
    if c.lost_seen:
        op = c.lost_seen[0]
        if c.persistence == "everysec" and any(f.call == "restart" and f.invoke_ns < op.invoke_ns
                                               for f in c.facts.faults):
            # appendfsync everysec: a killed server may come back without its last acknowledged
            # writes (Redis postpones the AOF write while a background fsync runs)
            return _verdict(name, f"a restart with appendfsync everysec lost writes, and that was detected: "
                            f"{op.process}'s {op.call} raised QueueStateLost at {c.t(op)}", [])
        return _verdict(name, "no state loss is reported while the server keeps its state", [Anomaly(
            "loss_misreported", f"{op.process}'s {op.call} raised QueueStateLost at {c.t(op)}, but the server "
            f"keeps its state (persistence {c.persistence}, no restart that may lose writes)", (op.index,))])
    return _verdict(name, f"no QueueStateLost, and no restart without persistence (persistence {c.persistence})",
                    [])


RULES: tuple[Callable[[_Context], Verdict], ...] = (
    _faults, _reads, _lease_identity, _acks, _completions, _residency, _reclaimers, _errors, _state_loss)


def check(history: History, *, persistence: str) -> CheckResult:
    """Every rule's verdict over ``history`` (a run against a server with ``persistence``)."""
    facts = derive(history)
    lossy = tuple(op for op in facts.faults if op.call == "restart" and op.outcome == OK) \
        if persistence == "none" else ()
    lost_seen = tuple(op for op in history if op.outcome == ERROR and op.error == "QueueStateLost")
    context = _Context(history, facts, persistence, lossy, lost_seen)
    verdicts = [rule(context) for rule in RULES]
    if history.truncated:
        verdicts[-1].notes.append(f"{len(history.truncated)} record(s) cut by a kill mid-write were skipped")
    return CheckResult(verdicts)
