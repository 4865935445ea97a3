------------------------- MODULE MCDeploymentLeases -------------------------
(***************************************************************************)
(* The deployment over two systems (D9), as an agreement config: the ack   *)
(* and the dead-letter commit with a scrub intent and ScrubIntent scrubs   *)
(* later (TwoStepAck), acquire, ack, fail and a put step may take effect   *)
(* with their reply lost (LostReplies: AcquireLost, AckLost, FailLost,     *)
(* TryPutLost, then PutRetry), and the queue server may lose its state     *)
(* once (RestartLossy, then Recover), with two consumers: one may hold a   *)
(* lease across the restart while the other acquires the recovered        *)
(* sample.  One producer, one one-byte sample, High 2 / Low 1, visibility  *)
(* 1, horizon 1.  Its graph must equal the Python model's, return values   *)
(* included.                                                               *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0">>
MCSizes == <<1>>
MCProducers == {0}
MCConsumers == {0, 1}
=============================================================================
