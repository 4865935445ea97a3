--------------------------- MODULE MCMutLiveness ----------------------------
(***************************************************************************)
(* Mutant-killing liveness configs (refqueue check-spec --mutants,         *)
(* spec/mutants.json): FairSpec with time that never stops, one producer,  *)
(* one consumer, three one-byte samples and High 2 / Low 1 (so the         *)
(* producer parks).  Each .cfg checks ONE temporal property, so that TLC's *)
(* "Temporal properties were violated" names it: MCMutLiveness.cfg         *)
(* EverySampleEventuallyAckedOrDead, MCMutProducerLiveness.cfg             *)
(* PausedProducerEventuallyResumes.                                        *)
(***************************************************************************)
EXTENDS SampleRefQueue

MCSamples == <<"s0", "s1", "s2">>
MCSizes == <<1, 1, 1>>
=============================================================================
