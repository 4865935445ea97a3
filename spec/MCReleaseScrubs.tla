--------------------------- MODULE MCReleaseScrubs ---------------------------
(***************************************************************************)
(* Counterexample (D2): the anchor's store drops a sample's data on        *)
(* release, while the lease is still live. TLC must find NoScrubBeforeAck  *)
(* violated.                                                               *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>
=============================================================================
