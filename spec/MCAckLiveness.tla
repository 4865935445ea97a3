---------------------------- MODULE MCAckLiveness ----------------------------
(***************************************************************************)
(* Bounded failures: at most one Fail or Crash in a behaviour (FaultBudget *)
(* 1 < MaxDeliveries 2), consumers that ack, fail or extend before their   *)
(* lease is due (PromptConsumers), two producers and a wide band. Then     *)
(* every enqueued sample is eventually *acked*, not merely acked or dead-  *)
(* lettered: the liveness cannot be satisfied by dead-lettering            *)
(* everything.                                                             *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 2, 1>>
=============================================================================
