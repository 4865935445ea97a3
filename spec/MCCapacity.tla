----------------------------- MODULE MCCapacity ------------------------------
(***************************************************************************)
(* A store whose byte cap binds: a StorePut waits for room (two producers, *)
(* samples of 1 and 2 bytes, Capacity 3), and backpressure that pauses     *)
(* under it: High 2 / Low 1 (D8's measure leaves the stepping ref out, so  *)
(* with High = Capacity, as before, nothing could ever pause and the       *)
(* pause properties were vacuous here).  Agreement with the Python model   *)
(* is checked here too.                                                    *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 2, 1>>
MCProducers == {0, 1}
MCConsumers == {0}
=============================================================================
