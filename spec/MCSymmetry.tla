----------------------------- MODULE MCSymmetry -----------------------------
(***************************************************************************)
(* Safety at wider bounds than the agreement config: three consumers,      *)
(* reduced by consumer symmetry.  Sound: the spec treats consumers alike   *)
(* (they are only quantified over and compared for equality), so permuting *)
(* them maps behaviours to behaviours and each invariant to itself.        *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
ConsumerSymmetry == Permutations(Consumers)
=============================================================================
