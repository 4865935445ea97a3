--------------------------- MODULE MCTimeLiveness ----------------------------
(***************************************************************************)
(* Liveness with time running and no crash on demand: fairness asks only   *)
(* that a consumer that keeps working acks or fails its lease (nothing of  *)
(* Crash).  Time runs (TimeNeverStops, visibility 2, so leases are         *)
(* extended and age), consumers ack, fail or extend before a running       *)
(* consumer's lease is due (PromptConsumers: the heartbeat), one fault at  *)
(* most (FaultBudget 1 < MaxDeliveries 2: a Fail or a Crash, whose lease   *)
(* then expires and is reclaimed), and the consumer keeps the leases it    *)
(* gave back and uses them later (stale copies).  Two producers and a wide *)
(* band, so puts park and pause.  Checked: every enqueued sample is        *)
(* eventually *acked* (so a live ack that changes nothing fails here: its  *)
(* sample is reclaimed until it is dead-lettered), every blocking put      *)
(* returns or the queue closes, and the rest of the liveness properties.   *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 2, 1>>
=============================================================================
