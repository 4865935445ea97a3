--------------------------- MODULE MCMutResidency ---------------------------
(***************************************************************************)
(* Mutant-killing config (refqueue check-spec --mutants,                   *)
(* spec/mutants.json): two producers, samples of 1, 2 and 1 bytes, a wide  *)
(* band (High 3 / Low 1), for the mutant whole-residency (the pre-D8       *)
(* residency with D8's empty-queue admission).  PauseOnlyAtHigh and        *)
(* ResumeOnlyAtLow were stated on Effective, the very operator TryPut      *)
(* decides with, so a wrong measure satisfied them; they now use           *)
(* D8Residency, written apart, as the Python model's                       *)
(* invariants.effective_residency is written apart from actions.try_put.   *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 2, 1>>

=============================================================================
