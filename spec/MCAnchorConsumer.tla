-------------------------- MODULE MCAnchorConsumer ---------------------------
(***************************************************************************)
(* Counterexample (D3): the anchor's consumer loop stops on acquire() is   *)
(* None and is_closed with a lease still outstanding. TLC must find        *)
(* TerminalNoneMeansDrained violated.                                      *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>
=============================================================================
