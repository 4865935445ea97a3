--------------------------- MODULE SampleRefQueue ---------------------------
(***************************************************************************)
(* The refqueue protocol: a lease / ack / fail queue of tensor-free        *)
(* SampleRefs bound to the FeatureStore that holds their data, in the      *)
(* closed world the Python reference model explores                        *)
(* (src/refqueue/model/world.py): producers that each write a sample to    *)
(* the store (StorePut) and then block in put_blocks_until_below (one      *)
(* TryPut step at a time), and may die in between (ProducerCrash),         *)
(* leaving an orphan that the environment collects (CollectOrphan);        *)
(* consumers that acquire, get, release, ack, fail, extend, crash and      *)
(* stop, and (RetainCopies) ack or fail a copy of a lease they already     *)
(* gave back (AckCopy, FailCopy); an environment that reclaims expired     *)
(* leases, closes the queue and lets time pass.                            *)
(*                                                                         *)
(* Names are shared with the model: the variables are the fields of        *)
(* refqueue.model.state.State plus the world's consumers and producers,    *)
(* the actions are the labels world.successors() yields (Next lists them   *)
(* in the world's order), the invariants are those of                      *)
(* refqueue.model.invariants.                                              *)
(*                                                                         *)
(* Left out of this closed world, as world.py leaves them out:             *)
(*  - DeadLetter (a consumer declaring a sample poison) and Extend with an *)
(*    arbitrary number of seconds: consumers only extend by the            *)
(*    visibility timeout, and dead-lettering happens only for reaching     *)
(*    MaxDeliveries.                                                       *)
(*  - the plain Put (producers always use the blocking put), the dedup     *)
(*    window (D5: a re-put of a completed id is allowed, the model's       *)
(*    `completed` stays empty) and the lease epoch (one queue, so no lease *)
(*    is ever foreign).                                                    *)
(*  - rejected calls: a call the model rejects changes nothing, so it is   *)
(*    no transition.  Neither is a call that changes nothing (a blocked    *)
(*    TryPut step, an Extend to the deadline the lease already has): every *)
(*    action below is enabled only when it changes the state, as           *)
(*    world.successors() omits self-loops.                                 *)
(*                                                                         *)
(* Switches turn the spec into the documented counterexamples (D2-D4, D8), *)
(* its liveness variants and its bounded-failure variant; all are off in   *)
(* the agreement configs, where the spec and the Python model must have    *)
(* the same graph.                                                         *)
(***************************************************************************)
EXTENDS Naturals, Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Samples,            \* <<id, ...>>: the productions, in this order; an id may recur (a re-put, D5)
    Sizes,              \* <<n, ...>>: the bytes of each production's data (estimated_bytes)
    Producers,          \* the producer identities
    Consumers,          \* the consumer identities
    MaxDeliveries,      \* a sample delivered this often is dead-lettered at its next fail/reclaim (D7)
    VisibilityTimeout,  \* a lease's deadline is now + VisibilityTimeout at acquire and extend
    Horizon,            \* Tick advances now up to this value, then stops (see TimeNeverStops)
    High,               \* the effective high watermark: pause at effective residency >= High (D4, D8)
    Low,                \* the effective low watermark: resume at effective residency <= Low (D4, D8)
    Capacity,           \* the store's byte cap: a StorePut past it is rejected
    ProducerCrashes,    \* TRUE: a producer may die between its store put and its queue put
    RetainCopies,       \* TRUE: a consumer keeps a copy of the lease it acked or failed, and uses it later
    AnchorConsumer,     \* TRUE: consumers stop on "acquire is None and closed" (the anchor's loop, D3)
    ReleaseScrubs,      \* TRUE: the store's release drops the sample's data (the anchor's store, D2)
    OldBackpressure,    \* TRUE: the pre-D8 rule (whole residency, no admission on an empty queue)
    TimeNeverStops,     \* TRUE: at the horizon a Tick ages leases instead of advancing now (liveness)
    FaultBudget,        \* -1: no bound; n >= 0: at most n Fail and Crash steps in a behaviour
    PromptConsumers,    \* TRUE: time never makes a running consumer's live lease due (it acks in time)
    NoLease,            \* model value: what a consumer without a lease holds (Python: None)
    NoDeadline,         \* model value: the deadline of a sample that is not leased (Python: None)
    NoSample            \* model value: what an idle producer holds (Python: None)

(* Sample ids are listed in the order of their spelling where they first  *)
(* appear: the model breaks reclaim ties by sample id, the spec by first   *)
(* position in Samples (TLC cannot compare strings, so the MC configs list *)
(* them sorted).                                                           *)
ASSUME SamplesOK == /\ Samples \in Seq(STRING)
                    /\ Len(Samples) > 0
ASSUME SizesOK == /\ Sizes \in Seq(Nat \ {0})
                  /\ Len(Sizes) = Len(Samples)
                  /\ \A i \in 1..Len(Sizes) : Sizes[i] <= Capacity
ASSUME Producers # {}
ASSUME Consumers # {}
ASSUME MaxDeliveries \in Nat \ {0}   \* None (no limit) would make redeliveries unbounded
ASSUME VisibilityTimeout \in Nat \ {0}
ASSUME Horizon \in Nat
(* The queue's constructor rejects Low >= High (D4: an empty band flaps);  *)
(* the spec admits Low = High so that MCFlapping can show why.  D8 needs   *)
(* no bound on the sample sizes but the capacity.                          *)
ASSUME WatermarksOK == /\ Low \in Nat /\ High \in Nat
                       /\ Low <= High /\ High <= Capacity
NoFaultBudget == -1   \* configs say FaultBudget <- NoFaultBudget (a .cfg has no negative literals)
ASSUME FaultBudget \in Int /\ FaultBudget >= -1
ASSUME {ProducerCrashes, RetainCopies, AnchorConsumer, ReleaseScrubs, OldBackpressure,
        TimeNeverStops, PromptConsumers} \subseteq BOOLEAN

-----------------------------------------------------------------------------
(* Sample statuses (refqueue.model.state: the same strings).               *)
Stored  == "stored"   \* data written to the store, ref not (yet) enqueued
Pending == "pending"  \* enqueued, waiting for an acquire
Leased  == "leased"   \* handed out under a live lease
Acked   == "acked"    \* terminal: a live ack committed, data scrubbed
Dead    == "dead"     \* terminal: dead-lettered, data scrubbed, ref + reason listed
Dropped == "dropped"  \* an orphan (stored, never enqueued, producer gone) collected: data scrubbed
Statuses == {Stored, Pending, Leased, Acked, Dead, Dropped}
MaxDeliveriesReason == "max_deliveries"

VARIABLES
    now,            \* the clock: only Tick moves it
    closed,         \* close() was called
    paused,         \* the producers are paused by backpressure (hysteresis, D4)
    pending,        \* the PENDING ids in delivery order (FIFO)
    ids,            \* the ids seen so far, in the order first seen
    recs,           \* id -> what is known of it (the model keeps a tuple parallel to ids)
    resident_bytes, \* the store's byte counter
    resident_count, \* the store's sample counter
    dead,           \* <<id, reason>> in dead-letter order
    parked,         \* the ids whose producers wait in put_blocks_until_below (D8)
    consumers,      \* consumer -> [lease, holding, stopped, kept] (world.Consumer)
    producers,      \* producer -> the id it is putting, or NoSample
    produced,       \* how many productions have started (an index into Samples)
    faults          \* Fail and Crash steps so far, counted only under a FaultBudget

queue_vars == <<now, closed, paused, pending, ids, recs, resident_bytes, resident_count, dead, parked>>
vars == <<now, closed, paused, pending, ids, recs, resident_bytes, resident_count, dead, parked,
          consumers, producers, produced, faults>>

-----------------------------------------------------------------------------
(* Reading the state.                                                      *)
SampleSet == {Samples[i] : i \in 1..Len(Samples)}
Range(seq) == {seq[i] : i \in DOMAIN seq}
Rank(s) == CHOOSE i \in 1..Len(Samples) : Samples[i] = s /\ \A j \in 1..(i - 1) : Samples[j] # s
Largest == CHOOSE n \in Range(Sizes) : \A m \in Range(Sizes) : m <= n
Max(a, b) == IF a >= b THEN a ELSE b

(* A lease's identity: sample, incarnation and delivery (ModelLease).      *)
LeaseOf(s) == [sample_id |-> s, incarnation |-> recs[s].incarnation,
               redelivery_count |-> recs[s].redeliveries]
IsLive(l) == /\ l # NoLease
             /\ l.sample_id \in DOMAIN recs
             /\ recs[l.sample_id].status = Leased
             /\ recs[l.sample_id].incarnation = l.incarnation
             /\ recs[l.sample_id].redeliveries = l.redelivery_count

Outstanding == {s \in DOMAIN recs : recs[s].status = Leased}
HasWork == pending # <<>> \/ Outstanding # {}               \* a consumer can still free bytes
Drained == closed /\ pending = <<>> /\ Outstanding = {}   \* actions.is_drained (D3)

Idle == [lease |-> NoLease, holding |-> FALSE, stopped |-> FALSE, kept |-> NoLease]

RECURSIVE BytesOf(_, _)
BytesOf(r, S) == IF S = {} THEN 0
                 ELSE LET s == CHOOSE x \in S : TRUE IN r[s].nbytes + BytesOf(r, S \ {s})

(* The bytes of enqueued work: pending and leased samples.                 *)
QueueBytes == BytesOf(recs, {s \in DOMAIN recs : recs[s].status \in {Pending, Leased}})

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

(* What giving a lease back does to the queue: acking (AckWith) or failing *)
(* (FailWith) lease l.  A live lease acks or requeues its sample; a stale  *)
(* one (reclaimed, acked, superseded, a copy kept after use) changes       *)
(* nothing (D1).                                                           *)
AckWith(l) ==
    IF IsLive(l)
    THEN LET s == l.sample_id
         IN /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Acked, !.deadline = NoDeadline,
                                                     !.resident = FALSE]]
            /\ resident_bytes' = IF recs[s].resident THEN resident_bytes - recs[s].nbytes
                                 ELSE resident_bytes
            /\ resident_count' = IF recs[s].resident THEN resident_count - 1 ELSE resident_count
            /\ UNCHANGED <<now, closed, paused, pending, ids, dead, parked>>
    ELSE UNCHANGED queue_vars

FailWith(l) ==
    IF IsLive(l)
    THEN /\ RequeueAll(<<l.sample_id>>)
         /\ UNCHANGED <<now, closed, paused, ids, parked>>
    ELSE UNCHANGED queue_vars

(* A step that spends one fault of the budget (when there is one).         *)
FaultAllowed == FaultBudget < 0 \/ faults < FaultBudget
CountFault == faults' = IF FaultBudget < 0 THEN faults ELSE faults + 1

(* One step of put_blocks_until_below for the producer of s (D4, D8).     *)
(* Effective residency: the store's, less the bytes of every ref parked in *)
(* a blocking put, s's own included.  Hysteresis on it; the ref is         *)
(* admitted when not paused afterwards, or when the queue holds no work    *)
(* (nothing pending, nothing leased: no consumer could ever free a byte),  *)
(* in which case the pause stands.  OldBackpressure is the rule before D8: *)
(* the whole residency, and no admission on an empty queue.                *)
Effective(s) ==
    IF OldBackpressure THEN resident_bytes
    ELSE Max(0, resident_bytes - BytesOf(recs, parked \ {s}) - recs[s].nbytes)
PausedAfter(s) == IF paused THEN ~(Effective(s) <= Low) ELSE Effective(s) >= High
Admits(s) == ~PausedAfter(s) \/ (~OldBackpressure /\ ~HasWork)

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
        /\ parked = {}
        /\ consumers = [c \in Consumers |-> Idle]
        /\ producers = [p \in Producers |-> NoSample]
        /\ produced = 0
        /\ faults = 0

(***************************************************************************)
(* StorePut(p): PRODUCER p writes the next production's data to the store  *)
(* (FeatureStore.put; model actions.store_put).                            *)
(* Enabled: p is idle, the queue is open, a production is left, its id's   *)
(* data is not resident (store_put rejects that) and it fits under         *)
(* Capacity.  A new id is STORED; an id seen before (completed, or a       *)
(* dropped orphan) is STORED again with fresh delivery counts, and its     *)
(* next put makes a new incarnation (D5).                                  *)
(***************************************************************************)
StorePut(p) ==
    /\ producers[p] = NoSample
    /\ ~closed
    /\ produced < Len(Samples)
    /\ LET s == Samples[produced + 1]
           n == Sizes[produced + 1]
       IN /\ ~(s \in DOMAIN recs /\ recs[s].resident)
          /\ resident_bytes + n <= Capacity
          /\ IF s \in DOMAIN recs
             THEN /\ recs' = [recs EXCEPT ![s] = [status |-> Stored, incarnation |-> @.incarnation,
                                                 deliveries |-> 0, redeliveries |-> 0,
                                                 deadline |-> NoDeadline, resident |-> TRUE,
                                                 nbytes |-> n]]
                  /\ UNCHANGED ids
             ELSE /\ ids' = Append(ids, s)
                  /\ recs' = recs @@ (s :> [status |-> Stored, incarnation |-> 0, deliveries |-> 0,
                                            redeliveries |-> 0, deadline |-> NoDeadline,
                                            resident |-> TRUE, nbytes |-> n])
          /\ resident_bytes' = resident_bytes + n
          /\ producers' = [producers EXCEPT ![p] = s]
    /\ resident_count' = resident_count + 1
    /\ produced' = produced + 1
    /\ UNCHANGED <<now, closed, paused, pending, dead, parked, consumers, faults>>

(***************************************************************************)
(* TryPut(p): PRODUCER p takes one step of put_blocks_until_below          *)
(* (SampleRefQueue.put_blocks_until_below; model actions.try_put).         *)
(* Hysteresis (D4) on the effective residency (D8):                        *)
(*   paused' = IF paused THEN ~(effective <= Low) ELSE effective >= High.  *)
(* Admitted (Admits): the ref is enqueued as a new incarnation and leaves  *)
(* parked; p is idle again.  Not admitted: the ref is parked and p stays   *)
(* blocked.  Enabled: p is putting a sample, the queue is open (a put      *)
(* after close is rejected: the blocked producer gets QueueClosed), the id *)
(* is not pending or leased (a duplicate is rejected), and the step        *)
(* changes something.                                                      *)
(***************************************************************************)
TryPut(p) ==
    /\ producers[p] # NoSample
    /\ ~closed
    /\ LET s == producers[p]
       IN /\ recs[s].status \notin {Pending, Leased}
          /\ Admits(s) \/ PausedAfter(s) # paused \/ s \notin parked
          /\ paused' = PausedAfter(s)
          /\ IF Admits(s)
             THEN /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Pending, !.incarnation = @ + 1,
                                                          !.deliveries = 0, !.redeliveries = 0,
                                                          !.deadline = NoDeadline]]
                  /\ pending' = Append(pending, s)
                  /\ parked' = parked \ {s}
                  /\ producers' = [producers EXCEPT ![p] = NoSample]
             ELSE /\ parked' = parked \cup {s}
                  /\ UNCHANGED <<pending, recs, producers>>
    /\ UNCHANGED <<now, closed, ids, resident_bytes, resident_count, dead, consumers, produced, faults>>

(***************************************************************************)
(* ProducerCrash(p): PRODUCER p dies after its store put, before its ref   *)
(* is enqueued (model actions.abort_put: the blocking put leaves, as on    *)
(* PutAborted).  The data stays resident: an orphan.  Enabled: with        *)
(* ProducerCrashes, p is putting a sample.  p restarts idle.               *)
(***************************************************************************)
ProducerCrash(p) ==
    /\ ProducerCrashes
    /\ producers[p] # NoSample
    /\ parked' = parked \ {producers[p]}
    /\ producers' = [producers EXCEPT ![p] = NoSample]
    /\ UNCHANGED <<now, closed, paused, pending, ids, recs, resident_bytes, resident_count, dead,
                   consumers, produced, faults>>

(***************************************************************************)
(* CollectOrphan(s): the ENVIRONMENT (the restarted producer, an operator) *)
(* scrubs an orphan's data (store.scrub(ref); model actions.drop).         *)
(* Enabled: with ProducerCrashes, s is stored and no producer is putting   *)
(* it.  s is DROPPED (it may be stored and put again).                     *)
(***************************************************************************)
CollectOrphan(s) ==
    /\ ProducerCrashes
    /\ s \in DOMAIN recs
    /\ recs[s].status = Stored
    /\ s \notin Range(producers)
    /\ s \notin parked
    /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Dropped, !.resident = FALSE]]
    /\ resident_bytes' = resident_bytes - recs[s].nbytes
    /\ resident_count' = resident_count - 1
    /\ UNCHANGED <<now, closed, paused, pending, ids, dead, parked, consumers, producers, produced, faults>>

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
          /\ consumers' = [consumers EXCEPT ![c] = [@ EXCEPT !.lease = LeaseOf(s), !.holding = FALSE]]
    /\ pending' = Tail(pending)
    /\ UNCHANGED <<now, closed, paused, ids, resident_bytes, resident_count, dead, parked,
                   producers, produced, faults>>

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
    /\ UNCHANGED <<queue_vars, producers, produced, faults>>

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
               /\ UNCHANGED <<now, closed, paused, pending, ids, dead, parked>>
          ELSE UNCHANGED queue_vars
    /\ UNCHANGED <<producers, produced, faults>>

(* What c holds after giving its lease back: nothing, or (RetainCopies) a  *)
(* copy of that lease, to use later.                                       *)
GaveBack(c) == [Idle EXCEPT !.kept = IF RetainCopies THEN consumers[c].lease ELSE NoLease]

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
    /\ consumers' = [consumers EXCEPT ![c] = GaveBack(c)]
    /\ AckWith(consumers[c].lease)
    /\ UNCHANGED <<producers, produced, faults>>

(***************************************************************************)
(* Fail(c): CONSUMER c gives its sample back for a retry                   *)
(* (SampleRefQueue.fail; model actions.fail).                              *)
(* Enabled: c holds a lease and no data (and, under a FaultBudget, one is  *)
(* left).  Live lease: the sample is requeued at the tail with one more    *)
(* redelivery, or dead-lettered once delivered MaxDeliveries times (D7);   *)
(* nothing is scrubbed otherwise.  Stale lease: nothing changes but c's    *)
(* hands (D1).                                                             *)
(***************************************************************************)
Fail(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ ~consumers[c].holding
    /\ FaultAllowed
    /\ consumers' = [consumers EXCEPT ![c] = GaveBack(c)]
    /\ FailWith(consumers[c].lease)
    /\ CountFault
    /\ UNCHANGED <<producers, produced>>

(***************************************************************************)
(* AckCopy(c), FailCopy(c): CONSUMER c acks or fails the copy it kept of a *)
(* lease it already gave back (RetainCopies).  The copy is stale, so the   *)
(* queue must not change (D1: identity is the lease id, not the object,    *)
(* and an id is live once).  The copy is then dropped.                     *)
(***************************************************************************)
AckCopy(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].kept # NoLease
    /\ consumers' = [consumers EXCEPT ![c].kept = NoLease]
    /\ AckWith(consumers[c].kept)
    /\ UNCHANGED <<producers, produced, faults>>

FailCopy(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].kept # NoLease
    /\ consumers' = [consumers EXCEPT ![c].kept = NoLease]
    /\ FailWith(consumers[c].kept)
    /\ UNCHANGED <<producers, produced, faults>>

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
    /\ UNCHANGED <<now, closed, paused, pending, ids, resident_bytes, resident_count, dead, parked,
                   consumers, producers, produced, faults>>

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
    /\ UNCHANGED <<now, closed, paused, ids, parked, consumers, producers, produced, faults>>

(***************************************************************************)
(* Close: the ENVIRONMENT closes the queue (SampleRefQueue.close; model    *)
(* actions.close).  No more puts; what is pending or leased still drains.  *)
(* Enabled: the queue is open (close is idempotent: a second one is no     *)
(* transition).                                                            *)
(***************************************************************************)
Close ==
    /\ ~closed
    /\ closed' = TRUE
    /\ UNCHANGED <<now, paused, pending, ids, recs, resident_bytes, resident_count, dead, parked,
                   consumers, producers, produced, faults>>

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
(* PromptConsumers (the bounded-failure config): time never makes a live   *)
(* lease that a running consumer holds due; such a consumer acks, fails or *)
(* extends in time.                                                        *)
(***************************************************************************)
Prompt == PromptConsumers =>
            \A c \in Consumers : IsLive(consumers[c].lease)
                                   => recs[consumers[c].lease.sample_id].deadline > now + 1
Tick ==
    /\ Prompt
    /\ \/ /\ now < Horizon
          /\ now' = now + 1
          /\ UNCHANGED <<closed, paused, pending, ids, recs, resident_bytes, resident_count, dead, parked,
                         consumers, producers, produced, faults>>
       \/ /\ TimeNeverStops
          /\ now = Horizon
          /\ \E s \in Outstanding : recs[s].deadline > now
          /\ recs' = [s \in DOMAIN recs |->
                        IF recs[s].status = Leased /\ recs[s].deadline > now
                        THEN [recs[s] EXCEPT !.deadline = @ - 1] ELSE recs[s]]
          /\ UNCHANGED <<now, closed, paused, pending, ids, resident_bytes, resident_count, dead, parked,
                         consumers, producers, produced, faults>>

(***************************************************************************)
(* Crash(c): CONSUMER c crashes holding a lease and restarts empty-handed. *)
(* The lease is dropped on the floor (it stays live in the queue until     *)
(* reclaimed); data c got is simply forgotten, which pins nothing (D2).    *)
(* Enabled: c holds a lease (and, under a FaultBudget, one is left).       *)
(***************************************************************************)
Crash(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ FaultAllowed
    /\ consumers' = [consumers EXCEPT ![c] = Idle]
    /\ CountFault
    /\ UNCHANGED <<queue_vars, producers, produced>>

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
    /\ consumers' = [consumers EXCEPT ![c] = [Idle EXCEPT !.stopped = TRUE]]
    /\ UNCHANGED <<queue_vars, producers, produced, faults>>

(***************************************************************************)
(* The steps as the agreement check names them: each call that answers     *)
(* something is split by its answer, so that the model's return values are *)
(* compared with the spec's too (refqueue.spec_check.agreement.spec_label): *)
(* an ack or fail of a live lease (True) or a stale one (False, D1); a put *)
(* step that enqueues or parks the ref, pausing, resuming or neither (the  *)
(* on_pause / on_resume events, D4, D8).                                   *)
(***************************************************************************)
AckLive(c) == Ack(c) /\ IsLive(consumers[c].lease)
AckStale(c) == Ack(c) /\ ~IsLive(consumers[c].lease)
FailLive(c) == Fail(c) /\ IsLive(consumers[c].lease)
FailStale(c) == Fail(c) /\ ~IsLive(consumers[c].lease)
AckCopyLive(c) == AckCopy(c) /\ IsLive(consumers[c].kept)
AckCopyStale(c) == AckCopy(c) /\ ~IsLive(consumers[c].kept)
FailCopyLive(c) == FailCopy(c) /\ IsLive(consumers[c].kept)
FailCopyStale(c) == FailCopy(c) /\ ~IsLive(consumers[c].kept)
TryPutEnqueue(p) == TryPut(p) /\ paused' = paused /\ producers'[p] = NoSample
TryPutPark(p) == TryPut(p) /\ paused' = paused /\ producers'[p] # NoSample
TryPutPause(p) == TryPut(p) /\ ~paused /\ paused' /\ producers'[p] # NoSample
TryPutPauseEnqueue(p) == TryPut(p) /\ ~paused /\ paused' /\ producers'[p] = NoSample
TryPutResume(p) == TryPut(p) /\ paused /\ ~paused'

Next ==
    \/ \E p \in Producers : StorePut(p)
    \/ \E p \in Producers : TryPutEnqueue(p)
    \/ \E p \in Producers : TryPutPark(p)
    \/ \E p \in Producers : TryPutPause(p)
    \/ \E p \in Producers : TryPutPauseEnqueue(p)
    \/ \E p \in Producers : TryPutResume(p)
    \/ \E p \in Producers : ProducerCrash(p)
    \/ \E s \in SampleSet : CollectOrphan(s)
    \/ ReclaimExpired
    \/ Close
    \/ Tick
    \/ \E c \in Consumers : AckCopyLive(c)
    \/ \E c \in Consumers : AckCopyStale(c)
    \/ \E c \in Consumers : FailCopyLive(c)
    \/ \E c \in Consumers : FailCopyStale(c)
    \/ \E c \in Consumers : Acquire(c)
    \/ \E c \in Consumers : Get(c)
    \/ \E c \in Consumers : Release(c)
    \/ \E c \in Consumers : AckLive(c)
    \/ \E c \in Consumers : AckStale(c)
    \/ \E c \in Consumers : FailLive(c)
    \/ \E c \in Consumers : FailStale(c)
    \/ \E c \in Consumers : Extend(c)
    \/ \E c \in Consumers : Crash(c)
    \/ \E c \in Consumers : Stop(c)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Safety: state invariants (refqueue.model.invariants, the same names).   *)

LeaseType == [sample_id : SampleSet, incarnation : Nat, redelivery_count : Nat]
RecType == [status : Statuses, incarnation : Nat, deliveries : Nat, redeliveries : Nat,
            deadline : Nat \cup {NoDeadline}, resident : BOOLEAN, nbytes : Nat]

(* Every field has its type: known statuses, natural counters, a deadline  *)
(* exactly while leased, one record per id, pending ids known and unique,  *)
(* parked ids stored and put by a producer; a consumer holds data only     *)
(* under a lease and a stopped one holds nothing.                          *)
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
    /\ parked \subseteq {s \in DOMAIN recs : recs[s].status = Stored} \cap Range(producers)
    /\ consumers \in [Consumers -> [lease : LeaseType \cup {NoLease}, holding : BOOLEAN,
                                    stopped : BOOLEAN, kept : LeaseType \cup {NoLease}]]
    /\ producers \in [Producers -> SampleSet \cup {NoSample}]
    /\ produced \in 0..Len(Samples)
    /\ faults \in Nat
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

(* An acked, dead-lettered or dropped sample's data is gone (D2).          *)
NothingResidentAfterAck ==
    \A s \in DOMAIN recs : recs[s].status \in {Acked, Dead, Dropped} => ~recs[s].resident

(* The store's counters equal the sum over resident samples, never         *)
(* negative.                                                               *)
ResidencyMatchesContents ==
    LET resident == {s \in DOMAIN recs : recs[s].resident}
    IN /\ resident_bytes >= 0
       /\ resident_bytes = BytesOf(recs, resident)
       /\ resident_count = Cardinality(resident)

(* The store never holds more than its byte cap.                          *)
ResidencyWithinCapacity == resident_bytes <= Capacity

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
    \* put again).
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

(* D8's bound: the work admitted by blocking puts (pending and leased      *)
(* bytes) stays below High plus the largest sample, so residency stays     *)
(* below High + (|Producers| + 1) * Largest plus orphans.                  *)
BackpressureBound == QueueBytes < High + Largest

(* No deadlock (D8): a producer waiting in a blocking put on an open queue *)
(* that holds no work (no consumer can ever free a byte) is admitted by    *)
(* its next step.  Stated on the decision TryPut takes, so it gives the    *)
(* shortest trace to the deadlock of the rule before D8                    *)
(* (MCOldBackpressure); PausedProducerEventuallyResumes is its liveness    *)
(* form.                                                                   *)
NoStuckProducer ==
    \A p \in Producers :
        (producers[p] # NoSample /\ producers[p] \in parked /\ ~closed /\ ~HasWork)
            => Admits(producers[p])

(* A live lease never runs longer than one visibility timeout from now:    *)
(* acquire and extend set deadline = now + VisibilityTimeout, and time only *)
(* shortens it (an extend counted from the old deadline breaks this).      *)
DeadlineWithinVisibility ==
    \A s \in Outstanding : recs[s].deadline <= now + VisibilityTimeout

-----------------------------------------------------------------------------
(* Safety: transition properties, as [][A]_vars.                           *)

(* A consumer giving up a lease that is not live (a stale ack or fail, a   *)
(* stale copy used, or a crash) leaves the queue and the store exactly as  *)
(* they were (D1).  The model states it on return values (an ack/fail that *)
(* answered False); the spec has none, so it names the step by what the    *)
(* consumer held before.                                                   *)
GivesUpStale(c) ==
    \/ /\ consumers[c].lease # NoLease /\ ~IsLive(consumers[c].lease)
       /\ consumers'[c].lease = NoLease
    \/ /\ consumers[c].kept # NoLease /\ ~IsLive(consumers[c].kept)
       /\ consumers'[c].kept = NoLease /\ consumers'[c].lease = consumers[c].lease
StaleOpsChangeNothing ==
    [][(\E c \in Consumers : GivesUpStale(c)) => UNCHANGED queue_vars]_vars

(* The producer pauses only with effective residency at or above the high  *)
(* watermark, and resumes only at or below the low one (D4, D8).  A step   *)
(* is named by the producer whose TryPut it is.  D8's measure is written   *)
(* out here apart from Effective, the operator TryPut decides with, so a   *)
(* wrong measure in TryPut (the whole residency) is caught.                *)
D8Residency(s) ==
    LET others == {t \in DOMAIN recs : t \in parked /\ t # s}
    IN Max(0, resident_bytes - BytesOf(recs, others) - recs[s].nbytes)
PauseOnlyAtHigh ==
    [][\A p \in Producers : TryPut(p) /\ ~paused /\ paused' => D8Residency(producers[p]) >= High]_vars
ResumeOnlyAtLow ==
    [][\A p \in Producers : TryPut(p) /\ paused /\ ~paused' => D8Residency(producers[p]) <= Low]_vars

(* A resume happens strictly below High and a pause strictly above Low, so *)
(* residency must cross the band between a pause and the next resume (what *)
(* an empty band, Low = High, breaks: MCFlapping).                         *)
NoFlapping ==
    [][\A p \in Producers :
          TryPut(p) =>
            /\ ~paused /\ paused' => D8Residency(producers[p]) > Low
            /\ paused /\ ~paused' => D8Residency(producers[p]) < High]_vars

(* Delivery is FIFO: a step keeps what was pending in its order, removes   *)
(* at most the head (an acquire) and appends at the tail (a put, a fail, a *)
(* reclaim).                                                               *)
PendingIsFifo ==
    [][\/ /\ Len(pending') >= Len(pending)
          /\ SubSeq(pending', 1, Len(pending)) = pending
       \/ /\ pending # <<>>
          /\ pending' = Tail(pending)]_vars

(* Completion is absorbing: an acked or dead-lettered incarnation stays so *)
(* until its id is stored again for a new incarnation (exactly once per    *)
(* incarnation).                                                           *)
CompletionIsAbsorbing ==
    [][\A s \in DOMAIN recs :
          recs[s].status \in {Acked, Dead} => recs'[s] = recs[s] \/ recs'[s].status = Stored]_vars

(* The visibility-timeout guarantee: a live lease whose deadline has not   *)
(* passed stays live, with its deadline, unless its holder acks, fails or  *)
(* extends it: nothing another consumer, a producer or the environment     *)
(* does takes it away early (a Tick of TimeNeverStops only ages it).       *)
LeaseLiveUntilDeadline ==
    [][\A s \in Outstanding :
          recs[s].deadline > now =>
            \/ /\ recs'[s].status = Leased
               /\ recs'[s].incarnation = recs[s].incarnation
               /\ recs'[s].redeliveries = recs[s].redeliveries
               /\ (recs'[s].deadline = recs[s].deadline \/ Tick)
            \/ \E c \in Consumers : /\ IsLive(consumers[c].lease)
                                   /\ consumers[c].lease.sample_id = s
                                   /\ (Ack(c) \/ Fail(c) \/ Extend(c))]_vars

-----------------------------------------------------------------------------
(* Liveness.                                                               *)

Enqueued(s) == s \in DOMAIN recs /\ recs[s].status \in {Pending, Leased}
Completed(s) == s \in DOMAIN recs /\ recs[s].status \in {Acked, Dead}

(* Every sample that was enqueued is eventually acked or dead-lettered.    *)
(* It excludes what never reached the queue: a sample still stored when    *)
(* the queue closed (the blocked producer's put fails with QueueClosed),   *)
(* an orphan, and one never produced.                                      *)
EverySampleEventuallyAckedOrDead == \A s \in SampleSet : Enqueued(s) ~> Completed(s)

(* With failures bounded (FaultBudget < MaxDeliveries) and consumers that  *)
(* ack in time (PromptConsumers), every enqueued sample is eventually       *)
(* *acked*: the conclusion excludes dead-lettering everything.             *)
EverySampleEventuallyAcked ==
    \A s \in SampleSet : Enqueued(s) ~> (s \in DOMAIN recs /\ recs[s].status = Acked)

(* A producer blocked in put_blocks_until_below is eventually admitted     *)
(* (D8: whatever the number of producers, the sample sizes and the         *)
(* orphans), unless the queue is closed first: then its blocked put fails  *)
(* with QueueClosed, the intended outcome, not starvation.                 *)
Waiting(p) == producers[p] # NoSample /\ producers[p] \in parked
PausedProducerEventuallyResumes == \A p \in Producers : Waiting(p) ~> (~Waiting(p) \/ closed)

(* Once closed, the queue drains and every consumer stops (D3).            *)
ClosedLeadsToDrained == closed ~> Drained
EveryConsumerEventuallyStops == closed ~> \A c \in Consumers : consumers[c].stopped

(* The fairness these need; nothing else is assumed of anyone (in         *)
(* particular nothing of StorePut, Get, Release, Extend, Close, the        *)
(* crashes, and the use of retained copies).                               *)
FairSpec ==
    /\ Spec
    \* An idle consumer keeps asking for work: otherwise a pending sample can
    \* wait forever with every consumer idle.
    /\ \A c \in Consumers : WF_vars(Acquire(c))
    \* A consumer does not sit on a lease forever: it eventually acks, fails or
    \* crashes.  Without it a consumer could extend one lease forever.  Strong
    \* fairness: under a FaultBudget, Fail and Crash run out and Ack is enabled
    \* only between a Release and the next Get, so a consumer that gets and
    \* releases forever must still ack.
    /\ \A c \in Consumers : SF_vars(Ack(c) \/ Fail(c) \/ Crash(c))
    \* A consumer holding data eventually releases it (it must, to ack).
    /\ \A c \in Consumers : WF_vars(Release(c))
    \* A consumer that finds the queue drained leaves its loop.
    /\ \A c \in Consumers : WF_vars(Stop(c))
    \* Reclaim runs: a crashed consumer's lease is taken back once expired.
    /\ WF_vars(ReclaimExpired)
    \* Time advances while a lease has time left, so a crashed consumer's
    \* lease expires.  With TimeNeverStops this needs no bound on the clock.
    /\ WF_vars(Tick)
    \* Each blocked producer keeps stepping: once it would be admitted, its
    \* next step admits it (only Close, or the queue getting work again, can
    \* disable that step).
    /\ \A p \in Producers : WF_vars(TryPut(p))
=============================================================================
