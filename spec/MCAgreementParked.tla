-------------------------- MODULE MCAgreementParked ---------------------------
(***************************************************************************)
(* The agreement size that reaches what D8's measure is about: two         *)
(* producers parked at once (High 2 / Low 0 with samples of 1, 2 and 2     *)
(* bytes: the second producer's step still finds the measure above Low     *)
(* after the first's ref is subtracted), an effective residency inside     *)
(* the band while paused, and an orphan while paused (producer crashes).   *)
(* Horizon 1: time moves once, so leases expire and go stale.  Its       *)
(* graph must equal the Python model's, so the subtraction of the other    *)
(* parked refs and the hysteresis band are compared with the model here.   *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 2, 2>>
MCProducers == {0, 1}
MCConsumers == {0}
=============================================================================
