------------------------- MODULE MCDeploymentLiveness -------------------------
(***************************************************************************)
(* Liveness of the deployment (D9) under FairSpec with time that never     *)
(* stops: two-step acks (TwoStepAck), lost replies (LostReplies) and one   *)
(* lossy restart (MaxRestarts 1), one producer, one one-byte sample, one   *)
(* consumer.  Every completed sample's data is eventually scrubbed         *)
(* (CompletedDataEventuallyScrubbed: the collector's fairness, WF          *)
(* ScrubIntent), every enqueued sample is eventually completed through a   *)
(* restart (the operator's recovery, WF Recover), and the queue drains     *)
(* once closed.  It records every lease issued (LeaseHistory), so it also  *)
(* checks NoLeaseIssuedTwice across the restart.                           *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0">>
MCSizes == <<1>>
=============================================================================
