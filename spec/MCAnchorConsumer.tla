-------------------------- MODULE MCAnchorConsumer --------------------------
(***************************************************************************)
(* Counterexample (D3): the anchor's consumer loop stops when acquire      *)
(* returns None and the queue is closed, even with leases outstanding.     *)
(* TLC must find TerminalNoneMeansDrained violated: a consumer stops while *)
(* a lease is still out; if that lease is reclaimed, nobody acquires it.   *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
=============================================================================
