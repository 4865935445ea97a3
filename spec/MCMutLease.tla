----------------------------- MODULE MCMutLease -----------------------------
(***************************************************************************)
(* Mutant-killing config (refqueue check-spec --mutants,                   *)
(* spec/mutants.json): two consumers, a visibility timeout of 2 and a      *)
(* horizon of 3, so that a stale holder's step can meet a live lease that  *)
(* still has time left (in the manifest's configs the timeout is 1, where  *)
(* every lease a stale holder could touch is already due, or there is one  *)
(* consumer): mutant extend-any-outstanding-lease.  It also states two     *)
(* properties that SampleRefQueue.tla lacks, which mutants                 *)
(* extend-from-old-deadline and requeue-at-head showed are needed (no spec *)
(* property notices either).                                               *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>

(* A live lease never runs longer than one visibility timeout from now:    *)
(* acquire and extend set deadline = now + VisibilityTimeout, time only    *)
(* shortens it.                                                            *)
DeadlineWithinVisibility ==
    \A s \in Outstanding : recs[s].deadline <= now + VisibilityTimeout

(* Delivery is FIFO: a step keeps what was pending in its order, removes   *)
(* at most the head (an acquire) and appends at the tail (a put, a fail, a *)
(* reclaim).                                                               *)
PendingIsFifo ==
    [][\/ /\ Len(pending') >= Len(pending)
          /\ SubSeq(pending', 1, Len(pending)) = pending
       \/ /\ pending # <<>>
          /\ pending' = Tail(pending)]_vars
=============================================================================
