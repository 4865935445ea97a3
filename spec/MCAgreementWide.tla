--------------------------- MODULE MCAgreementWide ---------------------------
(***************************************************************************)
(* The second agreement size: two producers, a wide band (High 3 / Low 1), *)
(* a sample larger than Low (3 bytes), a re-put of a completed id (s0      *)
(* twice, D5), producers that crash between store put and queue put        *)
(* (orphans, collected), a consumer that keeps copies of the leases it     *)
(* gave back and uses them later, and a visibility timeout of 2 (so an     *)
(* Extend of a lease that has not expired is explored). Its graph must     *)
(* equal the Python model's, return values included.                       *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s0">>
MCSizes == <<1, 3, 1>>
MCProducers == {0, 1}
MCConsumers == {0}
=============================================================================
