-------------------------- MODULE MCReleaseScrubs ---------------------------
(***************************************************************************)
(* Counterexample (D2): a store whose release drops the sample's data,     *)
(* like the anchor's.  TLC must find NoScrubBeforeAck violated: a consumer *)
(* gets and releases its sample before acking it, and the data of a leased *)
(* sample is gone (a redelivery after a fail or reclaim would find none).  *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
=============================================================================
