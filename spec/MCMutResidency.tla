--------------------------- MODULE MCMutResidency ---------------------------
(***************************************************************************)
(* Mutant-killing config (refqueue check-spec --mutants,                   *)
(* spec/mutants.json): two producers, samples of 1, 2 and 1 bytes, a wide  *)
(* band (High 3 / Low 1). PauseOnlyAtHigh and ResumeOnlyAtLow are stated   *)
(* on Effective, the very operator TryPut decides with, so a wrong measure *)
(* (the mutant whole-residency: the pre-D8 residency with D8's empty-queue *)
(* admission) satisfies them.  Here they are stated once more on D8's      *)
(* measure written out on its own, as the Python model's                   *)
(* invariants.effective_residency is written apart from actions.try_put.   *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 2, 1>>

(* D8: the store's residency less the bytes of every other parked ref and  *)
(* of the stepping ref itself.                                             *)
D8Residency(s) ==
    LET others == {t \in DOMAIN recs : t \in parked /\ t # s}
    IN Max(0, resident_bytes - BytesOf(recs, others) - recs[s].nbytes)

PauseOnlyAtD8High ==
    [][\A p \in Producers :
          TryPut(p) /\ ~paused /\ paused' => D8Residency(producers[p]) >= High]_vars
ResumeOnlyAtD8Low ==
    [][\A p \in Producers :
          TryPut(p) /\ paused /\ ~paused' => D8Residency(producers[p]) <= Low]_vars
=============================================================================
