----------------------- MODULE MCMutProducerLiveness ------------------------
(***************************************************************************)
(* Mutant-killing liveness config: the bounds of MCMutLiveness, the one    *)
(* temporal property PausedProducerEventuallyResumes (see MCMutLiveness).  *)
(***************************************************************************)
EXTENDS MCMutLiveness
=============================================================================
