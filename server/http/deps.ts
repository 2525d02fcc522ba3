// What the HTTP app is built from. main wires real implementations; tests may wire their own.
import type { Logger } from "../common/logger.ts";
import type { Engine } from "../engine/types.ts";
import type { ModelResolver } from "../store/types.ts";
import type { ImageInputConfig } from "./images.ts";
import type { ServerMetrics } from "./metrics.ts";

export interface ReadinessState {
  /** Model named by `gantry serve --model`, while it is still loading (health answers 503). */
  loading: string | null;
  /** Set when the process is shutting down (health answers 503). */
  shuttingDown: boolean;
  /** Error of a failed --model load (health answers 503 with it). */
  failed: string | null;
}

export interface ServerDeps {
  logger: Logger;
  engine: Engine;
  store: ModelResolver;
  metrics: ServerMetrics;
  version: string;
  readiness: ReadinessState;
  /** `images`: request image settings (default DEFAULT_IMAGE_INPUT). */
  config: { bodyLimit: string; origins: string; images?: ImageInputConfig };
}
