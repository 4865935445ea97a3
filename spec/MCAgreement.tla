---------------------------- MODULE MCAgreement -----------------------------
(***************************************************************************)
(* The bounds of refqueue.model.world.make_world() with its defaults: the  *)
(* config whose state graph must equal the Python model's, state for state *)
(* and labelled transition for transition (refqueue check-spec             *)
(* --agreement).  No symmetry: the Python graph keeps consumers apart.     *)
(* Consumers are 0 and 1, the Python tuple's indices.                      *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCConsumers == {0, 1}
=============================================================================
