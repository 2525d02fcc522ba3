// GANTRY_STEP_PIPELINE's values, as the settings catalogue takes them (apart from the engine, so the image's engine
// stage, which copies only what its build imports, needs no engine code for it). Pure.

/** auto = on where all the model's layers are on a GPU; on = always (a CPU measurement); off (docs/decisions/0022). */
export const STEP_PIPELINE_SETTINGS = ["auto", "on", "off"] as const;
export type StepPipelineSetting = (typeof STEP_PIPELINE_SETTINGS)[number];
