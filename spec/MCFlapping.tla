----------------------------- MODULE MCFlapping ------------------------------
(***************************************************************************)
(* Counterexample (D4): an empty band (Low = High) pauses where the        *)
(* producer may already resume. TLC must find NoFlapping violated.         *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 1, 1>>
=============================================================================
