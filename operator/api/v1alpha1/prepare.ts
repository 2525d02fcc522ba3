// What `gantry prepare` (the pods' init step and the model cache Job) tells the operator besides its JSON report in
// the termination message: an exit code of its own when the model does not exist, so a Job stops retrying at once
// (podFailurePolicy) instead of asking the hub again for something it does not have.
export const PREPARE_EXIT_MODEL_NOT_FOUND = 3;

/** The name of the container that runs it, in a server pod (init) and in the model cache Job's pod. */
export const PREPARE_CONTAINER = "prepare";
