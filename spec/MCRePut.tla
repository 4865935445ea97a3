------------------------------- MODULE MCRePut --------------------------------
(***************************************************************************)
(* A witness, not a check of safety: D5 lets a completed id be stored and  *)
(* put again as a new incarnation.  TLC must reach RePutDelivered (a       *)
(* sample in its second incarnation leased), that is find the invariant    *)
(* RePutNeverDelivered violated; the trace it prints is the re-put.  A     *)
(* spec that dedups completed ids for ever, or never admits or delivers a  *)
(* re-put, makes it unreachable and fails here.  One producer, s0 twice,   *)
(* one consumer; its graph must equal the Python model's (with the witness *)
(* invariant left out), which reaches the same state as explore's goal.    *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s0">>
MCSizes == <<1, 1>>
MCProducers == {0}
MCConsumers == {0}
=============================================================================
