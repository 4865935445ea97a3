------------------------ MODULE SampleRefQueueTrace ------------------------
(***************************************************************************)
(* Trace validation: the behaviours of SampleRefQueue constrained to one   *)
(* recorded event log (refqueue.events; `refqueue trace-check --tla`).     *)
(*                                                                         *)
(* TraceLog is the log, converted by refqueue.trace_check.tla: a sequence  *)
(* of records with the same fields each (ev, sample, c, p, t, live, dead,  *)
(* copy, store, enqueued, paused, redeliveries, samples, deads), where c   *)
(* and p name the consumer and producer the converter assigned to the      *)
(* record's lease or put, and t is the queue clock in whole seconds from   *)
(* the log's open record.  Variable l counts the records matched so far.   *)
(*                                                                         *)
(* Each record is one step of the spec's own actions (Acquire, Ack, Fail,  *)
(* AckCopy, FailCopy, Extend, TryPut, StorePut, ReclaimExpired, Close,     *)
(* ProducerCrash), further constrained by what the record says happened    *)
(* (which sample, live or stale, dead-lettered or requeued, enqueued or    *)
(* parked, paused or not); a record that changes nothing (a stale extend,  *)
(* an acquire that found nothing, an idle reclaim, a blocked put step)     *)
(* must be a stutter the spec allows in that state.  Two kinds of step     *)
(* take no record: Tick, while the spec's clock is behind the next         *)
(* record's, and the StorePut of a put whose store does not log (the       *)
(* record says store = TRUE).  Records the spec has no action for (store   *)
(* get/release, waits, pause/resume announcements, which TryPut's paused   *)
(* field checks) are stutters.                                             *)
(*                                                                         *)
(* The log is accepted iff some behaviour matches every record: TLC then   *)
(* reports TraceNotFinished violated (l = Len(TraceLog) reached).  If no   *)
(* behaviour does, TraceCanContinue is violated, and l in its last state  *)
(* is the number of records matched before the first one the spec refuses.*)
(* TLC runs with -continue: where two steps match one record and one       *)
(* behaviour then dead-ends, another may still match the whole log, so the *)
(* verdict reads every violation (accepted if any TraceNotFinished; else   *)
(* refused after the largest l reached).                                   *)
(*                                                                         *)
(* Every conjunct below that can refuse a record has a must-refuse log: a  *)
(* real log edited at one record (tests/events/                            *)
(* test_trace_tla_must_refuse.py; spec/README.md lists them).  Its slow    *)
(* tests delete each conjunct from a copy of this file and show that the   *)
(* log is then no longer refused at that record.                           *)
(***************************************************************************)
EXTENDS SampleRefQueue

CONSTANT TraceLog

VARIABLE l

traceVars == <<vars, l>>

More == l < Len(TraceLog)
Rec == TraceLog[l + 1]

TraceInit == Init /\ l = 0

(* Time passes up to the next record's time.                              *)
TickTo == /\ More
          /\ now < Rec.t
          /\ Tick
          /\ UNCHANGED l

(* The data of the next put is written, for a store that does not log.    *)
StoreFor == /\ More
             /\ now = Rec.t
             /\ Rec.store
             /\ producers[Rec.p] = NoSample
             /\ produced < Len(Samples)
             /\ Samples[produced + 1] = Rec.sample
             /\ StorePut(Rec.p)
             /\ UNCHANGED l

Stutter == UNCHANGED vars

PutStep ==
    \/ /\ Rec.ev = "put"
       /\ TryPut(Rec.p)
       /\ producers'[Rec.p] = NoSample
    \/ /\ Rec.ev = "try_put"
       /\ Rec.enqueued
       /\ TryPut(Rec.p)
       /\ producers'[Rec.p] = NoSample
       /\ paused' = Rec.paused
    \/ /\ Rec.ev = "try_put"
       /\ ~Rec.enqueued
       /\ producers[Rec.p] = Rec.sample
       /\ \/ /\ TryPut(Rec.p)
             /\ producers'[Rec.p] # NoSample
             /\ paused' = Rec.paused
          \/ /\ ~Admits(Rec.sample)        \* a blocked step that changes nothing
             /\ PausedAfter(Rec.sample) = paused
             /\ Rec.sample \in parked
             /\ paused = Rec.paused
             /\ Stutter
    \/ /\ Rec.ev = "store_put"
       /\ producers[Rec.p] = NoSample
       /\ produced < Len(Samples)
       /\ Samples[produced + 1] = Rec.sample
       /\ StorePut(Rec.p)
    \/ /\ Rec.ev = "abort"
       /\ producers[Rec.p] = Rec.sample
       /\ ProducerCrash(Rec.p)

LeaseStep ==
    \/ /\ Rec.ev = "acquire"
       /\ Rec.sample = ""
       /\ pending = <<>>
       /\ Stutter
    \/ /\ Rec.ev = "acquire"
       /\ Rec.sample # ""
       /\ pending # <<>>
       /\ Head(pending) = Rec.sample
       /\ recs[Rec.sample].redeliveries = Rec.redeliveries
       /\ Acquire(Rec.c)
    \/ /\ Rec.ev \in {"ack", "fail"}
       /\ ~Rec.copy
       /\ consumers[Rec.c].lease # NoLease
       /\ consumers[Rec.c].lease.sample_id = Rec.sample
       /\ IsLive(consumers[Rec.c].lease) = Rec.live
       /\ IF Rec.ev = "ack" THEN Ack(Rec.c) ELSE Fail(Rec.c)
       /\ (Rec.ev = "fail" /\ Rec.live) => ((recs'[Rec.sample].status = Dead) = Rec.dead)
    \/ /\ Rec.ev \in {"ack", "fail"}
       /\ Rec.copy
       /\ consumers[Rec.c].kept # NoLease
       /\ consumers[Rec.c].kept.sample_id = Rec.sample
       /\ IsLive(consumers[Rec.c].kept) = Rec.live
       /\ IF Rec.ev = "ack" THEN AckCopy(Rec.c) ELSE FailCopy(Rec.c)
    \/ /\ Rec.ev = "extend"
       /\ Rec.live
       /\ IsLive(consumers[Rec.c].lease)
       /\ consumers[Rec.c].lease.sample_id = Rec.sample
       /\ \/ Extend(Rec.c)
          \/ /\ recs[Rec.sample].deadline = now + VisibilityTimeout  \* an extend to the same deadline
             /\ Stutter
    \/ /\ Rec.ev = "extend"
       /\ ~Rec.live
       /\ \/ consumers[Rec.c].lease = NoLease
          \/ ~IsLive(consumers[Rec.c].lease)
          \/ consumers[Rec.c].lease.sample_id # Rec.sample
       /\ Stutter

EnvStep ==
    \/ /\ Rec.ev = "reclaim"
       /\ Rec.samples = {}
       /\ Due = {}
       /\ Stutter
    \/ /\ Rec.ev = "reclaim"
       /\ Rec.samples # {}
       /\ Due = Rec.samples
       /\ ReclaimExpired
       /\ {s \in Rec.samples : recs'[s].status = Dead} = Rec.deads
    \/ /\ Rec.ev = "close"
       /\ \/ Close
          \/ closed /\ Stutter
    \/ /\ Rec.ev = "skip"
       /\ Stutter

TraceStep == /\ More
             /\ now = Rec.t
             /\ ~(Rec.store /\ producers[Rec.p] = NoSample)  \* its StorePut comes first
             /\ (PutStep \/ LeaseStep \/ EnvStep)
             /\ l' = l + 1

(* At the end of the log the behaviour stutters: no deadlock.             *)
Done == ~More /\ UNCHANGED traceVars

TraceNext == TraceStep \/ TickTo \/ StoreFor \/ Done

TraceSpec == TraceInit /\ [][TraceNext]_traceVars

(* Violated exactly when the whole log was matched: the verdict "accepted". *)
TraceNotFinished == l < Len(TraceLog)

(* Violated in a state where the next record has no step: a dead end after *)
(* l records; "refused" unless another behaviour gets further (TLC's own   *)
(* deadlock check is off in refqueue's runs).                              *)
TraceCanContinue == More => ENABLED (TraceStep \/ TickTo \/ StoreFor)
=============================================================================
