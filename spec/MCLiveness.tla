----------------------------- MODULE MCLiveness -----------------------------
(***************************************************************************)
(* Liveness under FairSpec: EverySampleEventuallyAckedOrDead and           *)
(* PausedProducerEventuallyResumes, with time that never stops             *)
(* (TimeNeverStops, Horizon = 0: now stays 0 and a deadline is the time a  *)
(* lease has left, see Tick).  No symmetry: TLC cannot combine symmetry    *)
(* with liveness checking soundly.  The safety properties are checked too. *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
=============================================================================
