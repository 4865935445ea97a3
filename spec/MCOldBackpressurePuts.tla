------------------------ MODULE MCOldBackpressurePuts ------------------------
(***************************************************************************)
(* Counterexample (D8, liveness, stated on the put): the bounds of         *)
(* MCOldBackpressureLiveness, checked against PutEventuallyReturns, which  *)
(* does not read the parked set: the pre-D8 rule's deadlock fails it, and  *)
(* so does that rule with a blocked step that never parks its ref, where   *)
(* PausedProducerEventuallyResumes (Waiting never true) says ok.           *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>
=============================================================================
