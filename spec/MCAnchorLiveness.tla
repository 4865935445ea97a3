-------------------------- MODULE MCAnchorLiveness ---------------------------
(***************************************************************************)
(* Liveness counterexample (D3): under the same fairness as MCLiveness,    *)
(* the anchor's consumer loop loses work. TLC must find                    *)
(* EverySampleEventuallyAckedOrDead violated: both consumers stop while a  *)
(* lease is out; it is reclaimed and stays pending forever. Shows that the *)
(* liveness property is not vacuous. TerminalNoneMeansDrained is left out  *)
(* here, or TLC would stop at that invariant first.                        *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1">>
MCSizes == <<1, 1>>
=============================================================================
