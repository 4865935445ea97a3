---------------------- MODULE MCOldBackpressureLiveness ----------------------
(***************************************************************************)
(* Counterexample (D8, liveness): under FairSpec the pre-D8 rule leaves a  *)
(* paused producer blocked forever with 2 producers. TLC must find         *)
(* PausedProducerEventuallyResumes violated (a lasso: the system stutters  *)
(* with both producers parked). NoStuckProducer is left out, or TLC would  *)
(* stop at it first.                                                       *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>
=============================================================================
