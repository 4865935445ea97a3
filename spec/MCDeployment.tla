---------------------------- MODULE MCDeployment ----------------------------
(***************************************************************************)
(* The deployment over two systems (D9), as an agreement config: the ack   *)
(* and the dead-letter commit with a scrub intent and ScrubIntent scrubs   *)
(* later (TwoStepAck), acquire, ack, fail and a put step may take effect   *)
(* with their reply lost (LostReplies: AcquireLost, AckLost, FailLost,     *)
(* TryPutLost, then PutRetry), and the queue server may lose its state     *)
(* once (RestartLossy, then Recover).  Two producers, two productions of   *)
(* s0 (a re-put, D5, which waits while a producer retries its put), one    *)
(* consumer, High 2 / Low 1, visibility 1, horizon 1.  Its graph must      *)
(* equal the Python model's, return values included.                       *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s0">>
MCSizes == <<1, 1>>
MCProducers == {0, 1}
MCConsumers == {0}
=============================================================================
