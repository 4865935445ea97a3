--------------------------- MODULE MCMutTimeLiveness -------------------------
(***************************************************************************)
(* Mutant killer (check-spec --mutants): MCTimeLiveness's bounds with one  *)
(* temporal property, EverySampleEventuallyAcked, so that TLC names it.    *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 2, 1>>
=============================================================================
