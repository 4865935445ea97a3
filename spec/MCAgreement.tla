----------------------------- MODULE MCAgreement -----------------------------
(***************************************************************************)
(* The bounds of refqueue.model.world.make_world() with its defaults: the  *)
(* config whose state graph must equal the Python model's, state for state *)
(* and labelled transition for transition, return values included          *)
(* (refqueue check-spec --agreement). No symmetry: the Python graph keeps  *)
(* consumers apart. Consumers and producers are numbered as the Python     *)
(* tuples' indices.                                                        *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 1, 1>>
MCProducers == {0}
MCConsumers == {0, 1}
=============================================================================
