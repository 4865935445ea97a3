----------------------------- MODULE MCFlapping -----------------------------
(***************************************************************************)
(* Counterexample (D4): hysteresis with an empty band, Low = High (the     *)
(* queue constructor rejects it; the spec admits it here).  TLC must find  *)
(* NoFlapping violated: the producer pauses at a residency that already    *)
(* allows it to resume, so it flips on every step.                         *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
=============================================================================
