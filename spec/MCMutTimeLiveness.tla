--------------------------- MODULE MCMutTimeLiveness -------------------------
(***************************************************************************)
(* Mutant killer (check-spec --mutants): MCTimeLiveness's constants with  *)
(* one producer and two samples of 1 byte (small enough for the mutant run *)
(* to finish inside its minute), and one temporal property,                *)
(* EverySampleEventuallyAcked, so that TLC names it.                       *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>
=============================================================================
