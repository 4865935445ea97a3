-------------------------- MODULE MCOldBackpressure --------------------------
(***************************************************************************)
(* Counterexample (D8): the backpressure rule before D8 (the whole         *)
(* residency, which includes what producers stored but have not enqueued,  *)
(* and no admission on an empty queue) deadlocks with two producers: each  *)
(* stores one sample, both step, both are parked, nothing is pending or    *)
(* leased, and no consumer can free a byte. TLC must find NoStuckProducer  *)
(* violated.                                                               *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 1, 1>>
=============================================================================
