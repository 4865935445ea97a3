--------------------------- MODULE SampleRefQueue ---------------------------
(***************************************************************************)
(* The refqueue protocol: a lease / ack / fail queue of tensor-free        *)
(* SampleRefs bound to the FeatureStore that holds their data, in the      *)
(* closed world the Python reference model explores                        *)
(* (src/refqueue/model/world.py): one producer that writes each sample to  *)
(* the store (StorePut) and then blocks in put_blocks_until_below (one     *)
(* TryPut step at a time); consumers that acquire, get, release, ack,      *)
(* fail, extend, crash and stop; an environment that reclaims expired      *)
(* leases, closes the queue and lets time pass.                            *)
(*                                                                         *)
(* Names are shared with the model: the variables are the fields of        *)
(* refqueue.model.state.State plus the world's consumers, the actions are  *)
(* the labels world.successors() yields (in the same order), the           *)
(* invariants are those of refqueue.model.invariants.                      *)
(*                                                                         *)
(* Left out of this closed world, as world.py leaves them out:             *)
(*  - DeadLetter (a consumer declaring a sample poison) and Extend with an *)
(*    arbitrary number of seconds: consumers only extend by the            *)
(*    visibility timeout, and dead-lettering happens only for reaching     *)
(*    MaxDeliveries.                                                       *)
(*  - the plain Put (the producer always uses the blocking put), the       *)
(*    dedup window (D5: each sample is produced once, so no put is ever a  *)
(*    replay; the model's `completed` stays empty) and the lease epoch     *)
(*    (one queue, so no lease is ever foreign).                            *)
(*  - rejected calls: a call the model rejects changes nothing, so it is   *)
(*    no transition.  Neither is a call that changes nothing (a blocked    *)
(*    TryPut step, an Extend to the deadline the lease already has): every *)
(*    action below is enabled only when it changes the state, as           *)
(*    world.successors() omits self-loops.                                 *)
(*                                                                         *)
(* Three switches turn the spec into the documented counterexamples        *)
(* (D2-D4) and into its liveness variant; all are FALSE in the agreement   *)
(* config, where the spec and the Python model must have the same graph.   *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Samples,            \* <<id, ...>>: the sample ids, produced in this order, each once
    SampleBytes,        \* the size of each sample's data (estimated_bytes)
    Consumers,          \* the consumer identities
    MaxDeliveries,      \* a sample delivered this often is dead-lettered at its next fail/reclaim (D7)
    VisibilityTimeout,  \* a lease's deadline is now + VisibilityTimeout at acquire and extend
    Horizon,            \* Tick advances now up to this value, then stops (see TimeNeverStops)
    High,               \* the effective high watermark: pause at resident_bytes >= High (D4)
    Low,                \* the effective low watermark: resume at resident_bytes <= Low (D4)
    Capacity,           \* the store's byte cap: a StorePut past it is rejected
    AnchorConsumer,     \* TRUE: consumers stop on "acquire is None and closed" (the anchor's loop, D3)
    ReleaseScrubs,      \* TRUE: the store's release drops the sample's data (the anchor's store, D2)
    TimeNeverStops,     \* TRUE: at the horizon a Tick ages leases instead of advancing now (liveness)
    NoLease,            \* model value: what a consumer without a lease holds (Python: None)
    NoDeadline          \* model value: the deadline of a sample that is not leased (Python: None)

(* Samples are listed in the order of their spelling: the model breaks     *)
(* reclaim ties by sample id, the spec by position in Samples (TLC cannot  *)
(* compare strings, so the MC configs list them sorted).                   *)
ASSUME SamplesOK == /\ Samples \in Seq(STRING)
                    /\ Len(Samples) > 0
                    /\ \A i, j \in 1..Len(Samples) : i # j => Samples[i] # Samples[j]
ASSUME SampleBytes \in Nat \ {0}
ASSUME Consumers # {}
ASSUME MaxDeliveries \in Nat \ {0}   \* None (no limit) would make redeliveries unbounded
ASSUME VisibilityTimeout \in Nat \ {0}
ASSUME Horizon \in Nat
(* The queue's constructor rejects Low >= High (D4: an empty band flaps);  *)
(* the spec admits Low = High so that MCFlapping can show why.             *)
ASSUME WatermarksOK == /\ Low \in Nat /\ High \in Nat
                       /\ Low <= High /\ High <= Capacity
(* world.make_world: a producer blocked with its own sample resident must  *)
(* be able to resume.                                                      *)
ASSUME SampleBytes <= Low
ASSUME {AnchorConsumer, ReleaseScrubs, TimeNeverStops} \subseteq BOOLEAN

-----------------------------------------------------------------------------
(* Sample statuses (refqueue.model.state: the same strings).               *)
Stored  == "stored"   \* data written to the store, ref not (yet) enqueued
Pending == "pending"  \* enqueued, waiting for an acquire
Leased  == "leased"   \* handed out under a live lease
Acked   == "acked"    \* terminal: a live ack committed, data scrubbed
Dead    == "dead"     \* terminal: dead-lettered, data scrubbed, ref + reason listed
Statuses == {Stored, Pending, Leased, Acked, Dead}
MaxDeliveriesReason == "max_deliveries"

VARIABLES
    now,            \* the clock: only Tick moves it
    closed,         \* close() was called
    paused,         \* the producer is paused by backpressure (hysteresis, D4)
    pending,        \* the PENDING ids in delivery order (FIFO)
    ids,            \* the ids seen so far, in the order first seen
    recs,           \* id -> what is known of it (the model keeps a tuple parallel to ids)
    resident_bytes, \* the store's byte counter
    resident_count, \* the store's sample counter
    dead,           \* <<id, reason>> in dead-letter order
    consumers       \* consumer -> [lease, holding, stopped] (world.Consumer)

queue_vars == <<now, closed, paused, pending, ids, recs, resident_bytes, resident_count, dead>>
vars == <<now, closed, paused, pending, ids, recs, resident_bytes, resident_count, dead, consumers>>

-----------------------------------------------------------------------------
(* Reading the state.                                                      *)
SampleSet == {Samples[i] : i \in 1..Len(Samples)}
Range(seq) == {seq[i] : i \in DOMAIN seq}
Rank(s) == CHOOSE i \in 1..Len(Samples) : Samples[i] = s

(* A lease's identity: sample, incarnation and delivery (ModelLease).      *)
LeaseOf(s) == [sample_id |-> s, incarnation |-> recs[s].incarnation,
               redelivery_count |-> recs[s].redeliveries]
IsLive(l) == /\ l # NoLease
             /\ l.sample_id \in DOMAIN recs
             /\ recs[l.sample_id].status = Leased
             /\ recs[l.sample_id].incarnation = l.incarnation
             /\ recs[l.sample_id].redeliveries = l.redelivery_count

Outstanding == {s \in DOMAIN recs : recs[s].status = Leased}
Drained == closed /\ pending = <<>> /\ Outstanding = {}   \* actions.is_drained (D3)

(* The producer's sample that is stored but not yet enqueued (the first in *)
(* ids order, as world._core_moves picks it; there is at most one).        *)
StoredIds == SelectSeq(ids, LAMBDA s : recs[s].status = Stored)

Idle == [lease |-> NoLease, holding |-> FALSE, stopped |-> FALSE]

RECURSIVE BytesOf(_, _)
BytesOf(r, S) == IF S = {} THEN 0
                 ELSE LET s == CHOOSE x \in S : TRUE IN r[s].nbytes + BytesOf(r, S \ {s})

(* Leases whose deadline has passed, in reclaim order: by deadline, ties   *)
(* by sample id (actions.expired).                                         *)
Due == {s \in DOMAIN recs : recs[s].status = Leased /\ recs[s].deadline <= now}
ReclaimsBefore(a, b) == \/ recs[a].deadline < recs[b].deadline
                        \/ recs[a].deadline = recs[b].deadline /\ Rank(a) < Rank(b)
DueInOrder == [i \in 1..Cardinality(Due) |->
                 CHOOSE s \in Due : Cardinality({t \in Due : ReclaimsBefore(t, s)}) = i - 1]

(* A leased sample coming back (fail or reclaim, actions._requeue):        *)
(* pending again with one more redelivery, or dead-lettered and scrubbed   *)
(* once it was delivered MaxDeliveries times.                              *)
Exhausted(s) == recs[s].deliveries >= MaxDeliveries
Requeued(s) == [recs[s] EXCEPT !.status = Pending, !.redeliveries = @ + 1, !.deadline = NoDeadline]
DeadLettered(s) == [recs[s] EXCEPT !.status = Dead, !.redeliveries = @ + 1,
                                   !.deadline = NoDeadline, !.resident = FALSE]

(* Requeue the samples of the sequence `back` (all leased, in that order). *)
RequeueAll(back) ==
    LET gone == SelectSeq(back, Exhausted)
        again == SelectSeq(back, LAMBDA s : ~Exhausted(s))
        scrubbed == {s \in Range(gone) : recs[s].resident}
    IN /\ recs' = [s \in DOMAIN recs |->
                     IF s \in Range(gone) THEN DeadLettered(s)
                     ELSE IF s \in Range(again) THEN Requeued(s)
                     ELSE recs[s]]
       /\ pending' = pending \o again
       /\ dead' = dead \o [i \in 1..Len(gone) |-> <<gone[i], MaxDeliveriesReason>>]
       /\ resident_bytes' = resident_bytes - BytesOf(recs, scrubbed)
       /\ resident_count' = resident_count - Cardinality(scrubbed)

-----------------------------------------------------------------------------
Init == /\ now = 0
        /\ closed = FALSE
        /\ paused = FALSE
        /\ pending = <<>>
        /\ ids = <<>>
        /\ recs = <<>>   \* the function with the empty domain
        /\ resident_bytes = 0
        /\ resident_count = 0
        /\ dead = <<>>
        /\ consumers = [c \in Consumers |-> Idle]

(***************************************************************************)
(* StorePut: the PRODUCER writes the next sample's data to the store       *)
(* (FeatureStore.put; model actions.store_put).                            *)
(* Enabled: the queue is open, the producer has no stored sample waiting   *)
(* to be enqueued, a sample is left to produce, and its data fits under    *)
(* Capacity.                                                               *)
(***************************************************************************)
StorePut ==
    /\ ~closed
    /\ StoredIds = <<>>
    /\ Len(ids) < Len(Samples)
    /\ resident_bytes + SampleBytes <= Capacity
    /\ LET s == Samples[Len(ids) + 1]
       IN /\ ids' = Append(ids, s)
          /\ recs' = recs @@ (s :> [status |-> Stored, incarnation |-> 0, deliveries |-> 0,
                                    redeliveries |-> 0, deadline |-> NoDeadline,
                                    resident |-> TRUE, nbytes |-> SampleBytes])
    /\ resident_bytes' = resident_bytes + SampleBytes
    /\ resident_count' = resident_count + 1
    /\ UNCHANGED <<now, closed, paused, pending, dead, consumers>>

(***************************************************************************)
(* TryPut(s): the PRODUCER takes one step of put_blocks_until_below(s)     *)
(* (SampleRefQueue.put_blocks_until_below; model actions.try_put).         *)
(* Hysteresis (D4): paused' = IF paused THEN ~(resident <= Low)            *)
(*                             ELSE resident >= High.                      *)
(* Not paused afterwards: s is enqueued as a new incarnation.  Paused      *)
(* afterwards: s stays stored and the producer stays blocked.              *)
(* Enabled: s is the stored sample, the queue is open (a put after close   *)
(* is rejected: the blocked producer gets QueueClosed and never resumes),  *)
(* and the step changes something (not: paused with resident_bytes > Low). *)
(***************************************************************************)
TryPut(s) ==
    /\ StoredIds # <<>> /\ s = Head(StoredIds)
    /\ ~closed
    /\ ~(paused /\ resident_bytes > Low)
    /\ IF ~paused /\ resident_bytes >= High
       THEN /\ paused' = TRUE
            /\ UNCHANGED <<pending, recs>>
       ELSE /\ paused' = FALSE
            /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Pending, !.incarnation = @ + 1,
                                                     !.deliveries = 0, !.redeliveries = 0,
                                                     !.deadline = NoDeadline]]
            /\ pending' = Append(pending, s)
    /\ UNCHANGED <<now, closed, ids, resident_bytes, resident_count, dead, consumers>>

(***************************************************************************)
(* Acquire(c): CONSUMER c leases the oldest pending sample                 *)
(* (SampleRefQueue.acquire; model actions.acquire).                        *)
(* Enabled: c is running and holds no lease, and a sample is pending.      *)
(* The lease's deadline is now + VisibilityTimeout; it carries the number  *)
(* of earlier deliveries.                                                  *)
(***************************************************************************)
Acquire(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease = NoLease
    /\ pending # <<>>
    /\ LET s == Head(pending)
       IN /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Leased, !.deliveries = @ + 1,
                                                   !.deadline = now + VisibilityTimeout]]
          /\ consumers' = [consumers EXCEPT ![c] = [lease |-> LeaseOf(s), holding |-> FALSE,
                                                    stopped |-> FALSE]]
    /\ pending' = Tail(pending)
    /\ UNCHANGED <<now, closed, paused, ids, resident_bytes, resident_count, dead>>

(***************************************************************************)
(* Get(c): CONSUMER c materialises its lease's sample                      *)
(* (FeatureStore.get; model actions.get).                                  *)
(* Enabled: c holds a lease (live or stale) and no data, and the sample's  *)
(* data is resident (a get of scrubbed data is rejected: SampleMissing).   *)
(***************************************************************************)
Get(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ ~consumers[c].holding
    /\ LET s == consumers[c].lease.sample_id
       IN s \in DOMAIN recs /\ recs[s].resident
    /\ consumers' = [consumers EXCEPT ![c].holding = TRUE]
    /\ UNCHANGED queue_vars

(***************************************************************************)
(* Release(c): CONSUMER c is done with what Get returned                   *)
(* (FeatureStore.release; model actions.release).                          *)
(* Enabled: c holds data.  It never scrubs (D2), unless ReleaseScrubs      *)
(* models the anchor's store, whose release drops the data                 *)
(* (actions.scrub), whoever holds the live lease (MCReleaseScrubs:         *)
(* NoScrubBeforeAck fails).                                                *)
(***************************************************************************)
Release(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ consumers[c].holding
    /\ consumers' = [consumers EXCEPT ![c].holding = FALSE]
    /\ LET s == consumers[c].lease.sample_id
       IN IF ReleaseScrubs /\ s \in DOMAIN recs /\ recs[s].resident
          THEN /\ recs' = [recs EXCEPT ![s].resident = FALSE]
               /\ resident_bytes' = resident_bytes - recs[s].nbytes
               /\ resident_count' = resident_count - 1
               /\ UNCHANGED <<now, closed, paused, pending, ids, dead>>
          ELSE UNCHANGED queue_vars

(***************************************************************************)
(* Ack(c): CONSUMER c finished its sample and gives the lease back         *)
(* (SampleRefQueue.ack; model actions.ack).                                *)
(* Enabled: c holds a lease and no data (it releases before it acks).      *)
(* Live lease: the sample is ACKED and its data scrubbed (D2).  Stale      *)
(* lease (reclaimed, superseded): nothing changes but c's hands (D1).      *)
(***************************************************************************)
Ack(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ ~consumers[c].holding
    /\ consumers' = [consumers EXCEPT ![c] = Idle]
    /\ LET s == consumers[c].lease.sample_id
       IN IF IsLive(consumers[c].lease)
          THEN /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Acked, !.deadline = NoDeadline,
                                                        !.resident = FALSE]]
               /\ resident_bytes' = IF recs[s].resident THEN resident_bytes - recs[s].nbytes
                                    ELSE resident_bytes
               /\ resident_count' = IF recs[s].resident THEN resident_count - 1 ELSE resident_count
               /\ UNCHANGED <<now, closed, paused, pending, ids, dead>>
          ELSE UNCHANGED queue_vars

(***************************************************************************)
(* Fail(c): CONSUMER c gives its sample back for a retry                   *)
(* (SampleRefQueue.fail; model actions.fail).                              *)
(* Enabled: c holds a lease and no data.  Live lease: the sample is        *)
(* requeued at the tail with one more redelivery, or dead-lettered once    *)
(* delivered MaxDeliveries times (D7); nothing is scrubbed otherwise.      *)
(* Stale lease: nothing changes but c's hands (D1).                        *)
(***************************************************************************)
Fail(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ ~consumers[c].holding
    /\ consumers' = [consumers EXCEPT ![c] = Idle]
    /\ IF IsLive(consumers[c].lease)
       THEN /\ RequeueAll(<<consumers[c].lease.sample_id>>)
            /\ UNCHANGED <<now, closed, paused, ids>>
       ELSE UNCHANGED queue_vars

(***************************************************************************)
(* Extend(c): CONSUMER c heartbeats its live lease by the visibility       *)
(* timeout (SampleRefQueue.extend(lease); model actions.extend).           *)
(* Enabled: c's lease is live (expired but not yet reclaimed included) and *)
(* its deadline is not already now + VisibilityTimeout.  A stale extend    *)
(* changes nothing, so it is no transition.                                *)
(***************************************************************************)
Extend(c) ==
    /\ ~consumers[c].stopped
    /\ IsLive(consumers[c].lease)
    /\ LET s == consumers[c].lease.sample_id
       IN /\ recs[s].deadline # now + VisibilityTimeout
          /\ recs' = [recs EXCEPT ![s].deadline = now + VisibilityTimeout]
    /\ UNCHANGED <<now, closed, paused, pending, ids, resident_bytes, resident_count, dead, consumers>>

(***************************************************************************)
(* ReclaimExpired: the ENVIRONMENT (whoever calls reclaim_expired, e.g. a  *)
(* consumer's acquire loop) takes back every lease whose deadline has      *)
(* passed (SampleRefQueue.reclaim_expired; model actions.reclaim_expired). *)
(* Each is requeued as by Fail, in order of deadline, ties by sample id.   *)
(* Enabled: some lease has deadline <= now.  Consumers keep the leases     *)
(* they hold; those are stale now.                                         *)
(***************************************************************************)
ReclaimExpired ==
    /\ Due # {}
    /\ RequeueAll(DueInOrder)
    /\ UNCHANGED <<now, closed, paused, ids, consumers>>

(***************************************************************************)
(* Close: the ENVIRONMENT closes the queue (SampleRefQueue.close; model    *)
(* actions.close).  No more puts; what is pending or leased still drains.  *)
(* Enabled: the queue is open (close is idempotent: a second one is no     *)
(* transition).                                                            *)
(***************************************************************************)
Close ==
    /\ ~closed
    /\ closed' = TRUE
    /\ UNCHANGED <<now, paused, pending, ids, recs, resident_bytes, resident_count, dead, consumers>>

(***************************************************************************)
(* Tick: the ENVIRONMENT lets one unit of time pass (model actions.tick;   *)
(* production reads its Clock).                                            *)
(* Enabled: now < Horizon (the agreement config: world.py stops the clock  *)
(* at its horizon to keep the state space finite).                         *)
(* TimeNeverStops (the liveness configs): liveness needs time that never   *)
(* stops, or a crashed consumer's lease whose deadline lies past the       *)
(* horizon would never expire.  At the horizon a Tick therefore moves      *)
(* every deadline that has not passed one step closer instead of           *)
(* advancing now:                                                          *)
(* what matters of time is only how far each deadline lies ahead of now,   *)
(* and that stays within 0..VisibilityTimeout, so the state space stays    *)
(* finite (with Horizon = 0, now is always 0 and a deadline is the time a  *)
(* lease has left).  Leases already due keep their deadline; the only      *)
(* thing this abstraction loses is the order in which leases that fell due *)
(* at different Ticks are reclaimed (they tie, broken by sample id), which *)
(* no liveness property observes.  It is enabled only while some deadline  *)
(* lies ahead: a Tick that changes nothing is no transition.               *)
(***************************************************************************)
Tick ==
    \/ /\ now < Horizon
       /\ now' = now + 1
       /\ UNCHANGED <<closed, paused, pending, ids, recs, resident_bytes, resident_count, dead, consumers>>
    \/ /\ TimeNeverStops
       /\ now = Horizon
       /\ \E s \in Outstanding : recs[s].deadline > now
       /\ recs' = [s \in DOMAIN recs |->
                     IF recs[s].status = Leased /\ recs[s].deadline > now
                     THEN [recs[s] EXCEPT !.deadline = @ - 1] ELSE recs[s]]
       /\ UNCHANGED <<now, closed, paused, pending, ids, resident_bytes, resident_count, dead, consumers>>

(***************************************************************************)
(* Crash(c): CONSUMER c crashes holding a lease and restarts empty-handed. *)
(* The lease is dropped on the floor (it stays live in the queue until     *)
(* reclaimed); data c got is simply forgotten, which pins nothing (D2).    *)
(* Enabled: c holds a lease.                                               *)
(***************************************************************************)
Crash(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ consumers' = [consumers EXCEPT ![c] = Idle]
    /\ UNCHANGED queue_vars

(***************************************************************************)
(* Stop(c): CONSUMER c leaves its loop on acquire's terminal None.         *)
(* Enabled: c is running, holds no lease and nothing is pending (acquire   *)
(* answers None), and the queue is drained (D3: closed, nothing pending,   *)
(* nothing outstanding).  AnchorConsumer models the anchor's loop, which   *)
(* stops on "None and is_closed" even with leases outstanding: a lease     *)
(* reclaimed after that is never delivered again (MCAnchorConsumer:        *)
(* TerminalNoneMeansDrained fails).                                        *)
(***************************************************************************)
Stop(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease = NoLease
    /\ pending = <<>>
    /\ closed
    /\ AnchorConsumer \/ Outstanding = {}
    /\ consumers' = [consumers EXCEPT ![c] = [lease |-> NoLease, holding |-> FALSE, stopped |-> TRUE]]
    /\ UNCHANGED queue_vars

Next ==
    \/ StorePut
    \/ \E s \in SampleSet : TryPut(s)
    \/ \E c \in Consumers : Acquire(c)
    \/ \E c \in Consumers : Get(c)
    \/ \E c \in Consumers : Release(c)
    \/ \E c \in Consumers : Ack(c)
    \/ \E c \in Consumers : Fail(c)
    \/ \E c \in Consumers : Extend(c)
    \/ ReclaimExpired
    \/ Close
    \/ Tick
    \/ \E c \in Consumers : Crash(c)
    \/ \E c \in Consumers : Stop(c)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Safety: state invariants (refqueue.model.invariants, the same names).   *)

LeaseType == [sample_id : SampleSet, incarnation : Nat, redelivery_count : Nat]
RecType == [status : Statuses, incarnation : Nat, deliveries : Nat, redeliveries : Nat,
            deadline : Nat \cup {NoDeadline}, resident : BOOLEAN, nbytes : Nat]

(* Every field has its type: known statuses, natural counters, a deadline  *)
(* exactly while leased, one record per id, pending ids known and unique;  *)
(* a consumer holds data only under a lease and a stopped one holds        *)
(* nothing.                                                                *)
TypeOK ==
    /\ now \in Nat
    /\ closed \in BOOLEAN
    /\ paused \in BOOLEAN
    /\ ids \in Seq(SampleSet) /\ Cardinality(Range(ids)) = Len(ids)
    /\ DOMAIN recs = Range(ids)
    /\ \A s \in DOMAIN recs : /\ recs[s] \in RecType
                              /\ (recs[s].deadline # NoDeadline) = (recs[s].status = Leased)
    /\ pending \in Seq(SampleSet) /\ Cardinality(Range(pending)) = Len(pending)
    /\ Range(pending) \subseteq Range(ids)
    /\ resident_bytes \in Nat
    /\ resident_count \in Nat
    /\ dead \in Seq(SampleSet \X STRING)
    /\ consumers \in [Consumers -> [lease : LeaseType \cup {NoLease}, holding : BOOLEAN,
                                    stopped : BOOLEAN]]
    /\ \A c \in Consumers : /\ consumers[c].holding => consumers[c].lease # NoLease
                            /\ consumers[c].stopped => consumers[c].lease = NoLease
                                                       /\ ~consumers[c].holding

(* pending holds exactly the PENDING samples; no leased sample is pending. *)
PendingAndLeasedDisjoint ==
    \A s \in DOMAIN recs : (recs[s].status = Pending) = (s \in Range(pending))

(* No two consumers hold a live lease on the same sample.                  *)
AtMostOneLiveLeasePerSample ==
    \A c, d \in Consumers :
        c # d /\ IsLive(consumers[c].lease) /\ IsLive(consumers[d].lease)
            => consumers[c].lease.sample_id # consumers[d].lease.sample_id

(* A stored, pending or leased sample's data is resident (D2).             *)
NoScrubBeforeAck ==
    \A s \in DOMAIN recs : recs[s].status \in {Stored, Pending, Leased} => recs[s].resident

(* An acked or dead-lettered sample's data is gone (D2).                   *)
NothingResidentAfterAck ==
    \A s \in DOMAIN recs : recs[s].status \in {Acked, Dead} => ~recs[s].resident

(* The store's counters equal the sum over resident samples, never         *)
(* negative.                                                               *)
ResidencyMatchesContents ==
    LET resident == {s \in DOMAIN recs : recs[s].resident}
    IN /\ resident_bytes >= 0
       /\ resident_bytes = BytesOf(recs, resident)
       /\ resident_count = Cardinality(resident)

(* A sample's redelivery count is its deliveries so far (one fewer while   *)
(* leased), a live lease carries that count, no sample is delivered more   *)
(* than MaxDeliveries times, and one dead-lettered for it was delivered    *)
(* exactly that often (D7).                                                *)
RedeliveryCountsDeliveries ==
    /\ \A s \in DOMAIN recs :
          /\ recs[s].status \in {Stored, Pending} => recs[s].deliveries = recs[s].redeliveries
          /\ recs[s].status = Leased => recs[s].deliveries = recs[s].redeliveries + 1
          /\ recs[s].deliveries <= MaxDeliveries
    \* Only a sample's latest dead letter describes its current record, and
    \* only while that record is still Dead (D5 lets a dead-lettered id be
    \* put again; the closed world puts each sample once).
    /\ \A i \in DOMAIN dead :
          ( /\ dead[i][2] = MaxDeliveriesReason
            /\ recs[dead[i][1]].status = Dead
            /\ \A j \in DOMAIN dead : j > i => dead[j][1] # dead[i][1] )
              => recs[dead[i][1]].deliveries = MaxDeliveries
    /\ \A c \in Consumers :
          IsLive(consumers[c].lease)
              => consumers[c].lease.redelivery_count = recs[consumers[c].lease.sample_id].deliveries - 1

(* A consumer stops only on a terminal None, which comes only once the     *)
(* queue is closed and drained (D3).                                       *)
TerminalNoneMeansDrained ==
    (\E c \in Consumers : consumers[c].stopped) => Drained

-----------------------------------------------------------------------------
(* Safety: transition properties, as [][A]_vars.                           *)

(* A consumer giving up a lease that is not live (a stale ack or fail, or  *)
(* a crash) leaves the queue and the store exactly as they were (D1).  The *)
(* model states it on return values (an ack/fail that answered False); the *)
(* spec has none, so it names the step by what the consumer held before.   *)
StaleOpsChangeNothing ==
    [][\A c \in Consumers :
          /\ consumers[c].lease # NoLease
          /\ ~IsLive(consumers[c].lease)
          /\ consumers'[c].lease = NoLease
          => UNCHANGED queue_vars]_vars

(* The producer pauses only with residency at or above the high watermark. *)
PauseOnlyAtHigh == [][~paused /\ paused' => resident_bytes >= High]_vars

(* The producer resumes only with residency at or below the low watermark. *)
ResumeOnlyAtLow == [][paused /\ ~paused' => resident_bytes <= Low]_vars

(* A resume happens strictly below High and a pause strictly above Low, so *)
(* residency must cross the band between a pause and the next resume (what *)
(* an empty band, Low = High, breaks: MCFlapping).                         *)
NoFlapping ==
    [][/\ ~paused /\ paused' => resident_bytes > Low
       /\ paused /\ ~paused' => resident_bytes < High]_vars

-----------------------------------------------------------------------------
(* Liveness.                                                               *)

Enqueued(s) == s \in DOMAIN recs /\ recs[s].status \in {Pending, Leased}
Completed(s) == s \in DOMAIN recs /\ recs[s].status \in {Acked, Dead}

(* Every sample that was enqueued is eventually acked or dead-lettered.    *)
(* It excludes what never reached the queue: a sample still stored when    *)
(* the queue closed (the blocked producer's put fails with QueueClosed)    *)
(* and one never produced.                                                 *)
EverySampleEventuallyAckedOrDead == \A s \in SampleSet : Enqueued(s) ~> Completed(s)

(* A paused producer eventually resumes, unless the queue is closed first: *)
(* then its blocked put fails with QueueClosed and it never resumes, which *)
(* is the intended outcome, not starvation.                                *)
PausedProducerEventuallyResumes == paused ~> (~paused \/ closed)

(* The fairness both properties need; nothing else is assumed of anyone    *)
(* (in particular nothing of StorePut, Get, Release, Extend, Close, Stop). *)
FairSpec ==
    /\ Spec
    \* An idle consumer keeps asking for work: otherwise a pending sample can
    \* wait forever with every consumer idle.
    /\ \A c \in Consumers : WF_vars(Acquire(c))
    \* A consumer does not sit on a lease forever: it eventually acks, fails or
    \* crashes (Crash is enabled even while it holds data).  Without it a
    \* consumer could extend one lease forever.
    /\ \A c \in Consumers : WF_vars(Ack(c) \/ Fail(c) \/ Crash(c))
    \* Reclaim runs: a crashed consumer's lease is taken back once expired.
    /\ WF_vars(ReclaimExpired)
    \* Time advances while a lease has time left, so a crashed consumer's
    \* lease expires.  With TimeNeverStops this needs no bound on the clock.
    /\ WF_vars(Tick)
    \* The blocked producer keeps retrying: once residency is at or below Low
    \* its next step resumes it (only Close can disable that step again).
    /\ WF_vars(\E s \in SampleSet : TryPut(s))
=============================================================================
