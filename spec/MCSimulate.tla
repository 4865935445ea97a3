----------------------------- MODULE MCSimulate ------------------------------
(***************************************************************************)
(* Random simulation at production-like constants (refqueue check-spec     *)
(* runs it with TLC -simulate for a bounded time: about a minute in CI,    *)
(* longer with --deep): 3 producers, 6 consumers, 12 samples of 1 to 5     *)
(* bytes (several larger than Low), High 8 / Low 3, a visibility timeout   *)
(* of 5, MaxDeliveries 3, producer crashes, retained lease copies, time    *)
(* that never stops, and the deployment of D9: two-step acks, lost         *)
(* replies, up to two lossy restarts, the lease history.  Too large to     *)
(* enumerate; every safety property is checked on every state of every     *)
(* random behaviour.                                                       *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s00", "s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08", "s09", "s10", "s11">>
MCSizes == <<1, 2, 3, 1, 2, 5, 1, 1, 3, 2, 1, 4>>
=============================================================================
