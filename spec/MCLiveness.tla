----------------------------- MODULE MCLiveness ------------------------------
(***************************************************************************)
(* Liveness under FairSpec with time that never stops (TimeNeverStops,     *)
(* Horizon 0: now stays 0 and a deadline is the time a lease has left, see *)
(* Tick): two producers, samples of 2, 1 and 2 bytes (two larger than      *)
(* Low), a wide band (High 3 / Low 1), producers that crash and leave      *)
(* orphans (collection is not assumed fair: D8 needs none), a visibility   *)
(* timeout of 2. EverySampleEventuallyAckedOrDead,                         *)
(* PausedProducerEventuallyResumes, ClosedLeadsToDrained,                  *)
(* EveryConsumerEventuallyStops and every safety property. No symmetry:    *)
(* TLC cannot combine symmetry with liveness checking soundly.             *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<2, 1, 2>>
=============================================================================
