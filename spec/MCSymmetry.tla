----------------------------- MODULE MCSymmetry ------------------------------
(***************************************************************************)
(* Safety with 3 consumers reduced by consumer symmetry, otherwise the     *)
(* make_world() defaults. Consumers are model values: the spec never       *)
(* depends on which consumer is which (they are only quantified over and   *)
(* compared for equality), so permuting them maps behaviours to behaviours *)
(* and each invariant to itself.                                           *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 1, 1>>
MCProducers == {0}
ConsumerSymmetry == Permutations(Consumers)
=============================================================================
