----------------------------- MODULE MCMutLease -----------------------------
(***************************************************************************)
(* Mutant-killing config (refqueue check-spec --mutants,                   *)
(* spec/mutants.json): two consumers, a visibility timeout of 2 and a      *)
(* horizon of 3, so that a stale holder's step can meet a live lease that  *)
(* still has time left (in the manifest's configs the timeout is 1, where  *)
(* every lease a stale holder could touch is already due, or there is one  *)
(* consumer): mutant extend-any-outstanding-lease.  Its two checks,       *)
(* DeadlineWithinVisibility and PendingIsFifo, were first written here     *)
(* (mutants extend-from-old-deadline and requeue-at-head showed no spec    *)
(* property noticed either) and now live in SampleRefQueue.tla.           *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>

=============================================================================
