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
(* The deployment over two systems (D9: queue state in Redis, tensor data  *)
(* in a shared directory) is the same protocol with three switches:        *)
(*  - TwoStepAck: a live ack or dead-letter commits with a scrub intent    *)
(*    and leaves the data resident; ScrubIntent removes it later, by       *)
(*    anyone (the committing client, the reclaimer loop, gc()), once.  A   *)
(*    client that crashes between the two steps is an interleaving: its    *)
(*    own ScrubIntent simply never comes.  Off, the ack scrubs in the same *)
(*    step (the in-process queue).                                         *)
(*  - LostReplies: a call takes effect while its caller sees an error      *)
(*    (AcquireLost, AckLost, FailLost, TryPutLost); the caller retries or  *)
(*    asks lease_state (a retried ack or fail is stale, a retried put,     *)
(*    PutRetry, changes nothing).                                          *)
(*  - MaxRestarts > 0: the queue server restarts and loses its state       *)
(*    (RestartLossy); the loss is detected and the queue moves to a new    *)
(*    epoch that every lease carries; an operator re-puts what it forgot   *)
(*    (Recover).  A durable restart is no action at all: the state is      *)
(*    unchanged and leases stay valid; the calls in flight at the restart  *)
(*    see errors after their effect happened or before it did, which are   *)
(*    lost replies (LostReplies) or calls that never happened.             *)
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
(*    MaxDeliveries (a lost reply of Extend is Extend itself: the          *)
(*    consumer's state does not depend on the answer).                     *)
(*  - the plain Put (producers always use the blocking put), the dedup     *)
(*    window (D5: a re-put of a completed id is allowed, the model's       *)
(*    `completed` stays empty) and foreign leases (one queue: a lease's    *)
(*    epoch is one of this queue's, current or old).                       *)
(*  - rejected calls: a call the model rejects changes nothing, so it is   *)
(*    no transition.  Neither is a call that changes nothing (a blocked    *)
(*    TryPut step, an Extend to the deadline the lease already has): every *)
(*    action below is enabled only when it changes the state, as           *)
(*    world.successors() omits self-loops.                                 *)
(*                                                                         *)
(* Switches turn the spec into the documented counterexamples (D2-D4, D8), *)
(* its liveness variants, its bounded-failure variant and the deployment   *)
(* (D9); the counterexample, liveness and fault-budget switches are off in *)
(* the agreement configs, where the spec and the Python model must have    *)
(* the same graph (the deployment's are on in the MCDeployment configs).   *)
(* Every switch's default (FALSE, 0) is the in-process queue of before D9. *)
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
    FaultBudget,        \* -1: no bound; n >= 0: at most n Fail, Crash and lost-reply steps in a behaviour
    PromptConsumers,    \* TRUE: time never makes a running consumer's live lease due (it acks in time)
    TwoStepAck,         \* TRUE: an ack or dead-letter commits with a scrub intent, ScrubIntent scrubs later (D9)
    LostReplies,        \* TRUE: acquire, ack, fail and a put step may take effect with their reply lost (D9)
    MaxRestarts,        \* how many lossy restarts of the queue server a behaviour may have (D9; 0: none)
    LeaseHistory,       \* TRUE: record every lease issued (issued), so NoLeaseIssuedTwice is checked
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
ASSUME MaxRestarts \in Nat
ASSUME {ProducerCrashes, RetainCopies, AnchorConsumer, ReleaseScrubs, OldBackpressure,
        TimeNeverStops, PromptConsumers, TwoStepAck, LostReplies, LeaseHistory} \subseteq BOOLEAN

-----------------------------------------------------------------------------
(* Sample statuses (refqueue.model.state: the same strings).               *)
Stored  == "stored"   \* data written to the store, ref not (yet) enqueued
Pending == "pending"  \* enqueued, waiting for an acquire
Leased  == "leased"   \* handed out under a live lease
Acked   == "acked"    \* terminal: a live ack committed, data scrubbed (TwoStepAck: or to scrub)
Dead    == "dead"     \* terminal: dead-lettered, data scrubbed (or to scrub), ref + reason listed
Dropped == "dropped"  \* an orphan (stored, never enqueued, producer gone) collected: data scrubbed
Lost    == "lost"     \* forgotten by a lossy restart, data resident, awaiting the operator's Recover
Statuses == {Stored, Pending, Leased, Acked, Dead, Dropped, Lost}
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
    faults,         \* Fail, Crash and lost-reply steps so far, counted only under a FaultBudget
    intents,        \* the ids whose scrub intent is recorded: completed, data still to scrub (D9)
    epoch,          \* the queue's epoch: 0, then one more per lossy restart; every lease carries it
    issued          \* history: every lease issued so far (only with LeaseHistory; no action reads it)

queue_vars == <<now, closed, paused, pending, ids, recs, resident_bytes, resident_count, dead, parked,
                intents, epoch>>
vars == <<now, closed, paused, pending, ids, recs, resident_bytes, resident_count, dead, parked,
          consumers, producers, produced, faults, intents, epoch, issued>>

-----------------------------------------------------------------------------
(* Reading the state.                                                      *)
SampleSet == {Samples[i] : i \in 1..Len(Samples)}
Range(seq) == {seq[i] : i \in DOMAIN seq}
Rank(s) == CHOOSE i \in 1..Len(Samples) : Samples[i] = s /\ \A j \in 1..(i - 1) : Samples[j] # s
Largest == CHOOSE n \in Range(Sizes) : \A m \in Range(Sizes) : m <= n
Max(a, b) == IF a >= b THEN a ELSE b

(* A lease's identity: the queue's epoch, sample, incarnation and delivery *)
(* (ModelLease; the model names epoch n by lease_epoch).  LeaseIn is the   *)
(* lease of s in a state whose recs and epoch are r and e.                 *)
LeaseIn(r, e, s) == [epoch |-> e, sample_id |-> s, incarnation |-> r[s].incarnation,
                     redelivery_count |-> r[s].redeliveries]
LeaseOf(s) == LeaseIn(recs, epoch, s)
IsLiveIn(r, e, l) == /\ l # NoLease
                     /\ l.epoch = e
                     /\ l.sample_id \in DOMAIN r
                     /\ r[l.sample_id].status = Leased
                     /\ r[l.sample_id].incarnation = l.incarnation
                     /\ r[l.sample_id].redeliveries = l.redelivery_count
IsLive(l) == IsLiveIn(recs, epoch, l)

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

(* What completing samples (an ack, a dead-letter) does to their data      *)
(* (D2, D9).  The in-process queue scrubs it in the same step: ScrubNow(S) *)
(* are the completing samples of S whose data leaves the store now.  With  *)
(* TwoStepAck the commit records a scrub intent for each instead           *)
(* (Intended(S)), atomically with the completion, and the data stays       *)
(* resident, and counted against the watermarks, until ScrubIntent.        *)
ScrubNow(S) == IF TwoStepAck THEN {} ELSE {s \in S : recs[s].resident}
Intended(S) == IF TwoStepAck THEN intents \cup S ELSE intents

(* A leased sample coming back (fail or reclaim, actions._requeue):        *)
(* pending again with one more redelivery, or dead-lettered (its data      *)
(* scrubbed, or its scrub intended) once it was delivered MaxDeliveries    *)
(* times.                                                                  *)
Exhausted(s) == recs[s].deliveries >= MaxDeliveries
Requeued(s) == [recs[s] EXCEPT !.status = Pending, !.redeliveries = @ + 1, !.deadline = NoDeadline]
DeadLettered(s) == [recs[s] EXCEPT !.status = Dead, !.redeliveries = @ + 1,
                                   !.deadline = NoDeadline, !.resident = @ /\ TwoStepAck]

(* Requeue the samples of the sequence `back` (all leased, in that order). *)
RequeueAll(back) ==
    LET gone == SelectSeq(back, Exhausted)
        again == SelectSeq(back, LAMBDA s : ~Exhausted(s))
        scrubbed == ScrubNow(Range(gone))
    IN /\ recs' = [s \in DOMAIN recs |->
                     IF s \in Range(gone) THEN DeadLettered(s)
                     ELSE IF s \in Range(again) THEN Requeued(s)
                     ELSE recs[s]]
       /\ pending' = pending \o again
       /\ dead' = dead \o [i \in 1..Len(gone) |-> <<gone[i], MaxDeliveriesReason>>]
       /\ resident_bytes' = resident_bytes - BytesOf(recs, scrubbed)
       /\ resident_count' = resident_count - Cardinality(scrubbed)
       /\ intents' = Intended(Range(gone))

(* What giving a lease back does to the queue: acking (AckWith) or failing *)
(* (FailWith) lease l.  A live lease acks or requeues its sample; a stale  *)
(* one (reclaimed, acked, superseded, a copy kept after use, a lease of an *)
(* old epoch, the retry of a call whose reply was lost) changes nothing    *)
(* (D1).                                                                   *)
AckWith(l) ==
    IF IsLive(l)
    THEN LET s == l.sample_id
         IN /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Acked, !.deadline = NoDeadline,
                                                     !.resident = @ /\ TwoStepAck]]
            /\ resident_bytes' = resident_bytes - BytesOf(recs, ScrubNow({s}))
            /\ resident_count' = resident_count - Cardinality(ScrubNow({s}))
            /\ intents' = Intended({s})
            /\ UNCHANGED <<now, closed, paused, pending, ids, dead, parked, epoch>>
    ELSE UNCHANGED queue_vars

FailWith(l) ==
    IF IsLive(l)
    THEN /\ RequeueAll(<<l.sample_id>>)
         /\ UNCHANGED <<now, closed, paused, ids, parked, epoch>>
    ELSE UNCHANGED queue_vars

(* A step that spends one fault of the budget (when there is one): a Fail, *)
(* a Crash or a lost reply.                                                *)
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

(* Enqueue s as a new incarnation at the tail of pending (an admitted put, *)
(* or the operator's Recover): zero deliveries, no deadline, not parked.   *)
Enqueue(s) ==
    /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Pending, !.incarnation = @ + 1,
                                             !.deliveries = 0, !.redeliveries = 0,
                                             !.deadline = NoDeadline]]
    /\ pending' = Append(pending, s)
    /\ parked' = parked \ {s}

(* Lease s, the head of pending, as Acquire does: one more delivery, the   *)
(* deadline now + VisibilityTimeout; the lease issued joins the history.   *)
Deliver(s) ==
    /\ recs' = [recs EXCEPT ![s] = [@ EXCEPT !.status = Leased, !.deliveries = @ + 1,
                                             !.deadline = now + VisibilityTimeout]]
    /\ pending' = Tail(pending)
    /\ issued' = IF LeaseHistory THEN issued \cup {LeaseOf(s)} ELSE issued

(* A lossy restart left samples the operator has not re-put yet.           *)
Recovering == \E s \in DOMAIN recs : recs[s].status = Lost

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
        /\ intents = {}
        /\ epoch = 0
        /\ issued = {}

(***************************************************************************)
(* StorePut(p): PRODUCER p writes the next production's data to the store  *)
(* (FeatureStore.put; model actions.store_put).                            *)
(* Enabled: p is idle, the queue is open, a production is left, its id's   *)
(* data is not resident (store_put rejects that) and it fits under         *)
(* Capacity, and no producer holds that id still (one whose put took       *)
(* effect with its reply lost holds it until PutRetry).  A new id is       *)
(* STORED; an id seen before (completed and scrubbed, or a dropped orphan) *)
(* is STORED again with fresh delivery counts, and its next put makes a    *)
(* new incarnation (D5).                                                   *)
(***************************************************************************)
StorePut(p) ==
    /\ producers[p] = NoSample
    /\ ~closed
    /\ produced < Len(Samples)
    /\ LET s == Samples[produced + 1]
           n == Sizes[produced + 1]
       IN /\ ~(s \in DOMAIN recs /\ recs[s].resident)
          /\ s \notin Range(producers)
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
    /\ UNCHANGED <<now, closed, paused, pending, dead, parked, consumers, faults, intents, epoch, issued>>

(***************************************************************************)
(* TryPut(p): PRODUCER p takes one step of put_blocks_until_below          *)
(* (SampleRefQueue.put_blocks_until_below; model actions.try_put).         *)
(* Hysteresis (D4) on the effective residency (D8):                        *)
(*   paused' = IF paused THEN ~(effective <= Low) ELSE effective >= High.  *)
(* Admitted (Admits): the ref is enqueued as a new incarnation and leaves  *)
(* parked; p is idle again.  Not admitted: the ref is parked and p stays   *)
(* blocked.  Enabled: p is putting a sample, the queue is open (a put      *)
(* after close is rejected: the blocked producer gets QueueClosed), the id *)
(* is stored, not yet put (a put of a pending or leased id is a duplicate; *)
(* a producer whose put took effect with its reply lost retries instead,   *)
(* PutRetry), and the step changes something.                              *)
(***************************************************************************)
TryPut(p) ==
    /\ producers[p] # NoSample
    /\ ~closed
    /\ LET s == producers[p]
       IN /\ recs[s].status = Stored
          /\ Admits(s) \/ PausedAfter(s) # paused \/ s \notin parked
          /\ paused' = PausedAfter(s)
          /\ IF Admits(s)
             THEN /\ Enqueue(s)
                  /\ producers' = [producers EXCEPT ![p] = NoSample]
             ELSE /\ parked' = parked \cup {s}
                  /\ UNCHANGED <<pending, recs, producers>>
    /\ UNCHANGED <<now, closed, ids, resident_bytes, resident_count, dead, consumers, produced, faults,
                   intents, epoch, issued>>

(***************************************************************************)
(* TryPutLost(p): PRODUCER p's put step enqueues its ref, as TryPut does,  *)
(* but the reply is lost (LostReplies: a dropped connection, a server      *)
(* restarted after the write): p saw an error and still holds the id.      *)
(* Enabled: as an admitting TryPut step (and, under a FaultBudget, a fault *)
(* is left).  p's next move is PutRetry (or a crash).                      *)
(***************************************************************************)
TryPutLost(p) ==
    /\ LostReplies
    /\ FaultAllowed
    /\ producers[p] # NoSample
    /\ ~closed
    /\ LET s == producers[p]
       IN /\ recs[s].status = Stored
          /\ Admits(s)
          /\ paused' = PausedAfter(s)
          /\ Enqueue(s)
    /\ CountFault
    /\ UNCHANGED <<now, closed, ids, resident_bytes, resident_count, dead, consumers, producers, produced,
                   intents, epoch, issued>>

(***************************************************************************)
(* PutRetry(p): PRODUCER p re-sends the put whose reply was lost (model    *)
(* actions.put_retry).  The queue recognises the ref: its first attempt    *)
(* took effect, so the retry changes nothing, whatever became of the       *)
(* sample since (pending, leased, acked and scrubbed, dead, lost in a      *)
(* restart); p is idle again.  A queue that judged the retry as a new put  *)
(* would enqueue a completed sample again, its data maybe gone.  Enabled:  *)
(* p holds an id its put already enqueued (its record is not STORED).      *)
(***************************************************************************)
PutRetry(p) ==
    /\ producers[p] # NoSample
    /\ recs[producers[p]].status # Stored
    /\ producers' = [producers EXCEPT ![p] = NoSample]
    /\ UNCHANGED <<queue_vars, consumers, produced, faults, issued>>

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
                   consumers, produced, faults, intents, epoch, issued>>

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
    /\ UNCHANGED <<now, closed, paused, pending, ids, dead, parked, consumers, producers, produced, faults,
                   intents, epoch, issued>>

(***************************************************************************)
(* ScrubIntent(s): ANYONE finishes a two-step completion (TwoStepAck, D9): *)
(* the data of s, whose scrub intent the commit recorded, leaves the store *)
(* (a compare-and-delete by the exact ref) and the intent is cleared       *)
(* (model actions.scrub_intent).  It is the committing client's own second *)
(* step, or, for a client killed or a reply lost in between, the           *)
(* collector's (the reclaimer loop's collect_intents, gc(), any later      *)
(* client).  Enabled: s has an intent; so it happens once per intent.      *)
(***************************************************************************)
ScrubIntent(s) ==
    /\ s \in intents
    /\ recs' = [recs EXCEPT ![s].resident = FALSE]
    /\ resident_bytes' = resident_bytes - recs[s].nbytes
    /\ resident_count' = resident_count - 1
    /\ intents' = intents \ {s}
    /\ UNCHANGED <<now, closed, paused, pending, ids, dead, parked, epoch, consumers, producers, produced,
                   faults, issued>>

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
    /\ Deliver(Head(pending))
    /\ consumers' = [consumers EXCEPT ![c] = [@ EXCEPT !.lease = LeaseOf(Head(pending)), !.holding = FALSE]]
    /\ UNCHANGED <<now, closed, paused, ids, resident_bytes, resident_count, dead, parked,
                   producers, produced, faults, intents, epoch>>

(***************************************************************************)
(* AcquireLost(c): CONSUMER c's acquire leases the oldest pending sample,  *)
(* but the reply is lost (LostReplies): c saw an error and holds nothing.  *)
(* The lease is held by nobody; it expires and is reclaimed like a crashed *)
(* consumer's (its retry is the next Acquire).  Enabled: as Acquire (and,  *)
(* under a FaultBudget, a fault is left).                                  *)
(***************************************************************************)
AcquireLost(c) ==
    /\ LostReplies
    /\ FaultAllowed
    /\ ~consumers[c].stopped
    /\ consumers[c].lease = NoLease
    /\ pending # <<>>
    /\ Deliver(Head(pending))
    /\ CountFault
    /\ UNCHANGED <<now, closed, paused, ids, resident_bytes, resident_count, dead, parked,
                   consumers, producers, produced, intents, epoch>>

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
    /\ UNCHANGED <<queue_vars, producers, produced, faults, issued>>

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
               /\ UNCHANGED <<now, closed, paused, pending, ids, dead, parked, intents, epoch>>
          ELSE UNCHANGED queue_vars
    /\ UNCHANGED <<producers, produced, faults, issued>>

(* What c holds after giving its lease back: nothing, or (RetainCopies) a  *)
(* copy of that lease, to use later.                                       *)
GaveBack(c) == [Idle EXCEPT !.kept = IF RetainCopies THEN consumers[c].lease ELSE NoLease]

(***************************************************************************)
(* Ack(c): CONSUMER c finished its sample and gives the lease back         *)
(* (SampleRefQueue.ack; model actions.ack).                                *)
(* Enabled: c holds a lease and no data (it releases before it acks).      *)
(* Live lease: the sample is ACKED and its data scrubbed (D2; TwoStepAck:  *)
(* its scrub intended, D9).  Stale lease (reclaimed, superseded, of an old *)
(* epoch, already acked by a call whose reply was lost): nothing changes   *)
(* but c's hands (D1).                                                     *)
(***************************************************************************)
Ack(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].lease # NoLease
    /\ ~consumers[c].holding
    /\ consumers' = [consumers EXCEPT ![c] = GaveBack(c)]
    /\ AckWith(consumers[c].lease)
    /\ UNCHANGED <<producers, produced, faults, issued>>

(***************************************************************************)
(* AckLost(c): CONSUMER c's ack of its live lease commits (as Ack), but    *)
(* the reply is lost (LostReplies): c saw an error and still holds the     *)
(* lease, now stale.  Its retry (Ack, Fail) answers stale and changes      *)
(* nothing; lease_state would say "acked".  Enabled: c's lease is live and *)
(* c holds no data (and, under a FaultBudget, a fault is left); a lost     *)
(* reply of a stale ack changes nothing at all, so it is no transition.    *)
(***************************************************************************)
AckLost(c) ==
    /\ LostReplies
    /\ FaultAllowed
    /\ ~consumers[c].stopped
    /\ IsLive(consumers[c].lease)
    /\ ~consumers[c].holding
    /\ AckWith(consumers[c].lease)
    /\ CountFault
    /\ UNCHANGED <<consumers, producers, produced, issued>>

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
    /\ UNCHANGED <<producers, produced, issued>>

(***************************************************************************)
(* FailLost(c): CONSUMER c's fail of its live lease takes effect (as Fail: *)
(* requeued, or dead-lettered), but the reply is lost (LostReplies): c     *)
(* still holds the lease, now stale, and its retry changes nothing.        *)
(* Enabled: as AckLost.                                                    *)
(***************************************************************************)
FailLost(c) ==
    /\ LostReplies
    /\ FaultAllowed
    /\ ~consumers[c].stopped
    /\ IsLive(consumers[c].lease)
    /\ ~consumers[c].holding
    /\ FailWith(consumers[c].lease)
    /\ CountFault
    /\ UNCHANGED <<consumers, producers, produced, issued>>

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
    /\ UNCHANGED <<producers, produced, faults, issued>>

FailCopy(c) ==
    /\ ~consumers[c].stopped
    /\ consumers[c].kept # NoLease
    /\ consumers' = [consumers EXCEPT ![c].kept = NoLease]
    /\ FailWith(consumers[c].kept)
    /\ UNCHANGED <<producers, produced, faults, issued>>

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
                   consumers, producers, produced, faults, intents, epoch, issued>>

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
    /\ UNCHANGED <<now, closed, paused, ids, parked, consumers, producers, produced, faults, epoch, issued>>

(***************************************************************************)
(* Close: the ENVIRONMENT closes the queue (SampleRefQueue.close; model    *)
(* actions.close).  No more puts; what is pending or leased still drains.  *)
(* Enabled: the queue is open (close is idempotent: a second one is no     *)
(* transition) and not awaiting recovery (a queue whose state was lost     *)
(* refuses every call, close included, until the operator has re-put what  *)
(* it forgot: Recover).                                                    *)
(***************************************************************************)
Close ==
    /\ ~closed
    /\ ~Recovering
    /\ closed' = TRUE
    /\ UNCHANGED <<now, paused, pending, ids, recs, resident_bytes, resident_count, dead, parked,
                   consumers, producers, produced, faults, intents, epoch, issued>>

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
                         consumers, producers, produced, faults, intents, epoch, issued>>
       \/ /\ TimeNeverStops
          /\ now = Horizon
          /\ \E s \in Outstanding : recs[s].deadline > now
          /\ recs' = [s \in DOMAIN recs |->
                        IF recs[s].status = Leased /\ recs[s].deadline > now
                        THEN [recs[s] EXCEPT !.deadline = @ - 1] ELSE recs[s]]
          /\ UNCHANGED <<now, closed, paused, pending, ids, resident_bytes, resident_count, dead, parked,
                         consumers, producers, produced, faults, intents, epoch, issued>>

(***************************************************************************)
(* RestartLossy: the ENVIRONMENT restarts the queue server and its state   *)
(* is lost (no persistence, the AOF's last second, a failover that lost    *)
(* writes); the queue detects the loss and moves to a new epoch (model     *)
(* actions.restart_lossy).  Every lease carries its epoch, so no lease of  *)
(* the old one is ever live again and no lease identity is reused, though  *)
(* the queue's counters restart.  What the queue held is forgotten: the    *)
(* pending and leased samples and those whose scrub intent was recorded    *)
(* become LOST (incarnation and delivery counts reset, as the counters     *)
(* were lost), their data still resident; pending and the intents are      *)
(* empty.  The store is another system: residency is unchanged.  Kept:     *)
(* the clock (the server's), the closed flag (see Close), the pause state  *)
(* and parked refs (the producers' blocking puts recompute them at their   *)
(* next step), and completed, scrubbed records (inert; a deployment loses  *)
(* its dead-letter list too, which no property here reads).  Enabled: the  *)
(* queue is open and fewer than MaxRestarts losses happened.  A durable    *)
(* restart is no action: the state is unchanged and leases stay valid; the *)
(* calls it interrupts are lost replies.                                   *)
(***************************************************************************)
RestartLossy ==
    /\ epoch < MaxRestarts
    /\ ~closed
    /\ epoch' = epoch + 1
    /\ LET forgotten == {s \in DOMAIN recs : recs[s].status \in {Pending, Leased}} \cup intents
       IN recs' = [s \in DOMAIN recs |->
                     IF s \in forgotten
                     THEN [recs[s] EXCEPT !.status = Lost, !.incarnation = 0, !.deliveries = 0,
                                          !.redeliveries = 0, !.deadline = NoDeadline]
                     ELSE recs[s]]
    /\ pending' = <<>>
    /\ intents' = {}
    /\ UNCHANGED <<now, closed, paused, ids, resident_bytes, resident_count, dead, parked,
                   consumers, producers, produced, faults, issued>>

(***************************************************************************)
(* Recover(s): the ENVIRONMENT (an operator, after a detected loss)        *)
(* re-puts a sample the queue forgot, as a new incarnation of the new      *)
(* epoch (model actions.recover).  Its data was kept, so nothing is lost   *)
(* but at-most-once: a sample in flight, or acked with its scrub still     *)
(* intended, is delivered again.  Enabled: s is LOST.                      *)
(***************************************************************************)
Recover(s) ==
    /\ s \in DOMAIN recs
    /\ recs[s].status = Lost
    /\ Enqueue(s)
    /\ UNCHANGED <<now, closed, paused, ids, resident_bytes, resident_count, dead, intents, epoch,
                   consumers, producers, produced, faults, issued>>

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
    /\ UNCHANGED <<queue_vars, producers, produced, issued>>

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
    /\ UNCHANGED <<queue_vars, producers, produced, faults, issued>>

(***************************************************************************)
(* The steps as the agreement check names them: each call that answers     *)
(* something is split by its answer, so that the model's return values are *)
(* compared with the spec's too (refqueue.spec_check.agreement.spec_label): *)
(* an ack or fail of a live lease (True) or a stale one (False, D1); a put *)
(* step that enqueues or parks the ref, pausing, resuming or neither (the  *)
(* on_pause / on_resume events, D4, D8).  A call whose reply was lost      *)
(* (AckLost, FailLost, TryPutLost, AcquireLost) is not split: its caller   *)
(* saw no answer, and it is enabled only where it takes effect.            *)
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
    \/ \E p \in Producers : TryPutLost(p)
    \/ \E p \in Producers : PutRetry(p)
    \/ \E p \in Producers : ProducerCrash(p)
    \/ \E s \in SampleSet : CollectOrphan(s)
    \/ \E s \in SampleSet : ScrubIntent(s)
    \/ ReclaimExpired
    \/ Close
    \/ Tick
    \/ RestartLossy
    \/ \E s \in SampleSet : Recover(s)
    \/ \E c \in Consumers : AckCopyLive(c)
    \/ \E c \in Consumers : AckCopyStale(c)
    \/ \E c \in Consumers : FailCopyLive(c)
    \/ \E c \in Consumers : FailCopyStale(c)
    \/ \E c \in Consumers : Acquire(c)
    \/ \E c \in Consumers : AcquireLost(c)
    \/ \E c \in Consumers : Get(c)
    \/ \E c \in Consumers : Release(c)
    \/ \E c \in Consumers : AckLive(c)
    \/ \E c \in Consumers : AckStale(c)
    \/ \E c \in Consumers : AckLost(c)
    \/ \E c \in Consumers : FailLive(c)
    \/ \E c \in Consumers : FailStale(c)
    \/ \E c \in Consumers : FailLost(c)
    \/ \E c \in Consumers : Extend(c)
    \/ \E c \in Consumers : Crash(c)
    \/ \E c \in Consumers : Stop(c)

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Safety: state invariants (refqueue.model.invariants, the same names).   *)

LeaseType == [epoch : Nat, sample_id : SampleSet, incarnation : Nat, redelivery_count : Nat]
RecType == [status : Statuses, incarnation : Nat, deliveries : Nat, redeliveries : Nat,
            deadline : Nat \cup {NoDeadline}, resident : BOOLEAN, nbytes : Nat]

(* Every field has its type: known statuses, natural counters, a deadline  *)
(* exactly while leased, one record per id, pending ids known and unique,  *)
(* parked ids stored and put by a producer, intents on known ids, the      *)
(* epoch within its bound; a consumer holds data only under a lease and a  *)
(* stopped one holds nothing.                                              *)
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
    /\ intents \subseteq DOMAIN recs
    /\ epoch \in 0..MaxRestarts
    /\ issued \subseteq LeaseType
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

(* A stored, pending or leased sample's data is resident (D2), and so is   *)
(* that of a sample a lossy restart made the queue forget (D9).            *)
NoScrubBeforeAck ==
    \A s \in DOMAIN recs : recs[s].status \in {Stored, Pending, Leased, Lost} => recs[s].resident

(* An acked, dead-lettered or dropped sample's data is gone (D2), except   *)
(* while a scrub intent for it is recorded (D9: the deployment's ack is    *)
(* two steps; IntentsHoldCompletedData says what an intent holds).         *)
NothingResidentAfterAck ==
    \A s \in DOMAIN recs :
        recs[s].status \in {Acked, Dead, Dropped} /\ recs[s].resident => s \in intents

(* A recorded scrub intent names a completed (acked or dead-lettered)      *)
(* sample whose data is still resident: the commit records it with the     *)
(* data in place and ScrubIntent removes both together, so an intent never *)
(* outlives its data nor names live work (D9).  The in-process queue       *)
(* records none.                                                           *)
IntentsHoldCompletedData ==
    /\ ~TwoStepAck => intents = {}
    /\ \A s \in intents : recs[s].status \in {Acked, Dead} /\ recs[s].resident

(* No lease of an old epoch is live (D9): a lossy restart revokes every    *)
(* lease, whatever the queue's counters say afterwards.  Stated over the   *)
(* leases the consumers hold or kept.                                      *)
OldEpochNeverLive(l) == l # NoLease /\ l.epoch # epoch => ~IsLive(l)
NoOldEpochLeaseLive ==
    \A c \in Consumers : OldEpochNeverLive(consumers[c].lease) /\ OldEpochNeverLive(consumers[c].kept)

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
(* below High + (|Producers| + 1) * Largest plus orphans.  Until a lossy   *)
(* restart: the operator's recovery re-puts what the queue forgot with     *)
(* plain puts, which admit regardless of the watermarks (the data is       *)
(* resident already; a re-put adds none).                                  *)
BackpressureBound == epoch = 0 => QueueBytes < High + Largest

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

(* A lease that is not live never becomes live again (D1, D9): whatever    *)
(* happens (a restart that loses the queue's counters included), a lease   *)
(* a consumer holds or kept after it went stale stays stale, so a stale    *)
(* holder can never ack, fail or extend someone else's delivery.           *)
StaysStale(l) == l # NoLease /\ ~IsLive(l) => ~IsLiveIn(recs', epoch', l)
StaleLeaseNeverLiveAgain ==
    [][\A c \in Consumers : StaysStale(consumers[c].lease) /\ StaysStale(consumers[c].kept)]_vars

(* No lease identity is issued twice (D1, D9): every lease a step makes    *)
(* live is new, across lossy restarts too (checked with LeaseHistory,      *)
(* whose history variable issued records every lease Deliver issues).      *)
MadeLive == {LeaseIn(recs', epoch', s) : s \in {t \in DOMAIN recs' : recs'[t].status = Leased}}
                \ {LeaseOf(s) : s \in Outstanding}
NoLeaseIssuedTwice == [][LeaseHistory => MadeLive \cap issued = {}]_vars

(* The producer pauses only with effective residency at or above the high  *)
(* watermark, and resumes only at or below the low one (D4, D8).  A step   *)
(* is named by the producer whose TryPut it is.  D8's measure is written   *)
(* out here apart from Effective, the operator TryPut decides with, so a   *)
(* wrong measure in TryPut (the whole residency) is caught.                *)
D8Residency(s) ==
    LET others == {t \in DOMAIN recs : t \in parked /\ t # s}
    IN Max(0, resident_bytes - BytesOf(recs, others) - recs[s].nbytes)
TryPutAny(p) == TryPut(p) \/ TryPutLost(p)   \* a put step of p, its reply received or lost
PauseOnlyAtHigh ==
    [][\A p \in Producers : TryPutAny(p) /\ ~paused /\ paused' => D8Residency(producers[p]) >= High]_vars
ResumeOnlyAtLow ==
    [][\A p \in Producers : TryPutAny(p) /\ paused /\ ~paused' => D8Residency(producers[p]) <= Low]_vars

(* A resume happens strictly below High and a pause strictly above Low, so *)
(* residency must cross the band between a pause and the next resume (what *)
(* an empty band, Low = High, breaks: MCFlapping).                         *)
NoFlapping ==
    [][\A p \in Producers :
          TryPutAny(p) =>
            /\ ~paused /\ paused' => D8Residency(producers[p]) > Low
            /\ paused /\ ~paused' => D8Residency(producers[p]) < High]_vars

(* Delivery is FIFO: a step keeps what was pending in its order, removes   *)
(* at most the head (an acquire) and appends at the tail (a put, a fail, a *)
(* reclaim, a recovery).  A lossy restart forgets what was pending (D9).   *)
PendingIsFifo ==
    [][\/ /\ Len(pending') >= Len(pending)
          /\ SubSeq(pending', 1, Len(pending)) = pending
       \/ /\ pending # <<>>
          /\ pending' = Tail(pending)
       \/ RestartLossy]_vars

(* Completion is absorbing: an acked or dead-lettered incarnation stays so *)
(* until its id is stored again for a new incarnation (exactly once per    *)
(* incarnation); only its data may leave meanwhile (ScrubIntent).  A lossy *)
(* restart is the documented exception (D9): a completion whose scrub was  *)
(* still intended is forgotten, LOST, and delivered again once recovered.  *)
CompletionIsAbsorbing ==
    [][\A s \in DOMAIN recs :
          recs[s].status \in {Acked, Dead} =>
            \/ recs'[s] \in {recs[s], [recs[s] EXCEPT !.resident = FALSE]}
            \/ recs'[s].status = Stored
            \/ RestartLossy /\ recs'[s].status = Lost]_vars

(* The visibility-timeout guarantee: a live lease whose deadline has not   *)
(* passed stays live, with its deadline, unless its holder acks, fails or  *)
(* extends it (its reply lost or not): nothing another consumer, a         *)
(* producer or the environment does takes it away early (a Tick of         *)
(* TimeNeverStops only ages it), but a lossy restart, which revokes every  *)
(* lease (D9).                                                             *)
LeaseLiveUntilDeadline ==
    [][\A s \in Outstanding :
          recs[s].deadline > now =>
            \/ /\ recs'[s].status = Leased
               /\ recs'[s].incarnation = recs[s].incarnation
               /\ recs'[s].redeliveries = recs[s].redeliveries
               /\ (recs'[s].deadline = recs[s].deadline \/ Tick)
            \/ \E c \in Consumers : /\ IsLive(consumers[c].lease)
                                   /\ consumers[c].lease.sample_id = s
                                   /\ (Ack(c) \/ Fail(c) \/ Extend(c) \/ AckLost(c) \/ FailLost(c))
            \/ RestartLossy]_vars

(* A lease lasts its visibility timeout: a step that makes a sample       *)
(* leased (Acquire, AcquireLost) or moves a leased sample's deadline       *)
(* (Extend) sets the deadline to exactly now + VisibilityTimeout.  Never   *)
(* shorter: a lease that falls due early is reclaimed under a consumer     *)
(* still working on it (DeadlineWithinVisibility bounds it from above      *)
(* only, LeaseLiveUntilDeadline trusts whatever deadline was set).  Only a *)
(* Tick of TimeNeverStops moves a deadline otherwise (it ages it).         *)
DeadlineSet(s) == /\ recs'[s].status = Leased
                  /\ \/ s \notin DOMAIN recs
                     \/ recs[s].status # Leased
                     \/ recs'[s].deadline # recs[s].deadline
LeaseLastsItsTimeout ==
    [][~Tick => \A s \in DOMAIN recs' : DeadlineSet(s) => recs'[s].deadline = now + VisibilityTimeout]_vars

(* The dead-letter list lists exactly the samples dead-lettered: a step    *)
(* keeps the list as it was and appends one entry, with its reason, for    *)
(* each sample it dead-letters, and none for anything else.  (The closed   *)
(* world dead-letters only for MaxDeliveries; RedeliveryCountsDeliveries   *)
(* says such a sample was delivered exactly that often.)                   *)
NewlyDead == {s \in DOMAIN recs' : recs'[s].status = Dead /\ ~(s \in DOMAIN recs /\ recs[s].status = Dead)}
DeadLettersListed ==
    [][/\ Len(dead') = Len(dead) + Cardinality(NewlyDead)
       /\ SubSeq(dead', 1, Len(dead)) = dead
       /\ {dead'[i][1] : i \in (Len(dead) + 1)..Len(dead')} = NewlyDead
       /\ \A i \in (Len(dead) + 1)..Len(dead') : dead'[i][2] = MaxDeliveriesReason]_vars

(* Backpressure follows the hysteresis of D8's measure exactly: every put  *)
(* step leaves paused' = IF paused THEN measure > Low ELSE measure >= High *)
(* (PauseOnlyAtHigh and ResumeOnlyAtLow say only that a change needs the   *)
(* measure past a watermark; this says the measure past it forces the      *)
(* change, so a measure that subtracts too much, e.g. every ref stored but *)
(* not yet enqueued instead of the parked ones, is caught).                *)
PauseFollowsHysteresis ==
    [][\A p \in Producers :
          TryPutAny(p) => paused' = IF paused THEN D8Residency(producers[p]) > Low
                                    ELSE D8Residency(producers[p]) >= High]_vars

(* A put step that does not admit its ref parks it: the producer waits     *)
(* with its bytes in parked, which D8's measure subtracts for the others   *)
(* (a step that never parks makes Waiting, hence                           *)
(* PausedProducerEventuallyResumes and NoStuckProducer, vacuous, and the   *)
(* measure larger).                                                        *)
BlockedPutIsParked ==
    [][\A p \in Producers : TryPut(p) /\ producers'[p] # NoSample => producers[p] \in parked']_vars

(* A completed id may be put again (D5): RePutDelivered is a state in      *)
(* which a sample in its second incarnation or later (stored, put and      *)
(* completed once, then stored and put again) is leased.  It is a witness, *)
(* not a property: MCRePut asks TLC to reach it (RePutNeverDelivered must  *)
(* be violated), so a spec that refuses re-puts, or never delivers them,   *)
(* fails there.                                                            *)
RePutDelivered == \E s \in DOMAIN recs : recs[s].incarnation >= 2 /\ recs[s].status = Leased
RePutNeverDelivered == ~RePutDelivered

-----------------------------------------------------------------------------
(* Liveness.                                                               *)

Enqueued(s) == s \in DOMAIN recs /\ recs[s].status \in {Pending, Leased}
Completed(s) == s \in DOMAIN recs /\ recs[s].status \in {Acked, Dead}
Resident(s) == s \in DOMAIN recs /\ recs[s].resident

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

(* Every blocking put returns, or the queue closes: stated on the put, not *)
(* on the parked set, so a blocked step that never records its ref as      *)
(* parked (Waiting never true) cannot make it vacuous.  A producer that    *)
(* crashes has returned too (its call left).  Not for LostReplies: a       *)
(* producer whose put's reply was lost holds its id until it retries, and  *)
(* nothing forces a retry.                                                 *)
Putting(p) == producers[p] # NoSample
PutEventuallyReturns == \A p \in Producers : Putting(p) ~> (~Putting(p) \/ closed)

(* Once closed, the queue drains and every consumer stops (D3).            *)
ClosedLeadsToDrained == closed ~> Drained
EveryConsumerEventuallyStops == closed ~> \A c \in Consumers : consumers[c].stopped

(* Every completed sample's data is eventually scrubbed (D9), however the  *)
(* two steps of the deployment's ack interleave with crashes, lost replies *)
(* and lossy restarts: no acked or dead-lettered data stays resident for   *)
(* ever (TwoStepAck configs; in-process, completion scrubs at once).       *)
CompletedDataEventuallyScrubbed == \A s \in SampleSet : (Completed(s) /\ Resident(s)) ~> ~Resident(s)

(* The fairness these need; nothing else is assumed of anyone (in         *)
(* particular nothing of StorePut, Get, Release, Extend, Close, the        *)
(* crashes, the lost replies, a producer's retry, and the use of retained  *)
(* copies).                                                                *)
FairSpec ==
    /\ Spec
    \* An idle consumer keeps asking for work: otherwise a pending sample can
    \* wait forever with every consumer idle.
    /\ \A c \in Consumers : WF_vars(Acquire(c))
    \* A consumer that keeps working does not sit on a lease forever: it
    \* eventually acks or fails it (the loader acks after the step succeeds and
    \* fails on an exception).  Without it a consumer could extend one lease
    \* forever.  Nothing is assumed of Crash: a real system does not crash on
    \* demand, so no liveness property may lean on a crash to move a sample on
    \* (before, this was SF of Ack \/ Fail \/ Crash, and a queue whose live ack
    \* changed nothing passed MCLiveness by crashing).  Strong fairness: under
    \* a FaultBudget, Fail runs out and Ack is enabled only between a Release
    \* and the next Get, so a consumer that gets and releases forever must
    \* still ack.
    /\ \A c \in Consumers : SF_vars(Ack(c) \/ Fail(c))
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
    \* The collector runs (the reclaimer loop's collect_intents, gc(), any
    \* later client): a recorded scrub intent is eventually scrubbed, whether
    \* or not the committing client lived to do it.  (Stated only where there
    \* are intents: TLC's liveness check pays for every fairness condition.)
    /\ TwoStepAck => \A s \in SampleSet : WF_vars(ScrubIntent(s))
    \* After a detected loss the operator recovers the queue: every sample it
    \* forgot is eventually re-put.
    /\ MaxRestarts > 0 => \A s \in SampleSet : WF_vars(Recover(s))
=============================================================================
