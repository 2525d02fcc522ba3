// Follows a deployed app until it is Ready: prints each condition as it changes (Scheduled, ModelCached, Ready), the
// model download's progress from the init container's log while it pulls, and waits for a rollout to finish when a
// redeploy replaces running pods. A failure condition (InsufficientGPU, ModelNotFound, InvalidSpec…) ends the wait
// with its message; so does the timeout.
import { CONDITION, REASON } from "../../operator/api/v1alpha1/conditions.ts";
import type { ModelApp } from "../../operator/api/v1alpha1/modelapp.ts";
import { PREPARE_CONTAINER } from "../../operator/api/v1alpha1/prepare.ts";
import type { AppsClient } from "./apps-client.ts";
import { condition, conditionChanges, deployState, observed, rolloutPending } from "./app-status.ts";
import { PlatformError } from "./kube-target.ts";

export interface WaitOutput {
  /** A line that stays (a condition changed). */
  line(text: string): void;
  /** A line that replaces the previous progress line (download progress, rollout); undefined clears it. */
  progress(text: string | undefined): void;
}

export interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The last progress line of a running prepare step (pulling the model: a replica's init container, or the model cache
 * Job's container), if any.
 */
export async function pullProgress(client: AppsClient, app: ModelApp): Promise<string | undefined> {
  for (const pod of await client.pods(app, { modelCache: true })) {
    const running = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
      (c) => c.name === PREPARE_CONTAINER && c.state?.running,
    );
    if (!running) continue;
    const last = (await client.logTail(pod.metadata!.name!, running.name, 1)).trim().split("\n").at(-1)?.trim();
    if (last) return last;
  }
  return undefined;
}

/** Waits until generation `generation` of app `name` is Ready and rolled out; returns the app as it is then. */
export async function waitForDeploy(
  client: AppsClient,
  name: string,
  generation: number,
  out: WaitOutput,
  opts: WaitOptions,
): Promise<ModelApp> {
  const deadline = Date.now() + opts.timeoutMs;
  let before: ModelApp | undefined, lastProgress: string | undefined;
  const progress = (text: string | undefined) => {
    if (text === lastProgress) return;
    lastProgress = text;
    out.progress(text);
  };
  for (;;) {
    const app = await client.get(name);
    if (!app) throw new PlatformError(`${client.org}/${name} was deleted while deploying`);
    // A later generation (the autoscaler writing spec.replicas, a concurrent change) includes this deploy's spec.
    generation = Math.max(generation, app.metadata.generation ?? 0);
    const changes = conditionChanges(before, app, generation);
    if (changes.length) progress(undefined);
    for (const l of changes) out.line(l);
    before = app;
    const state = deployState(app, generation);
    if (state.phase === "failed") {
      progress(undefined);
      throw new PlatformError(`${client.org}/${name} cannot become ready: ${state.reason}: ${state.message}`);
    }
    if (state.phase === "ready") {
      const d = await client.deployment(app);
      const pending = d ? rolloutPending(d) : undefined;
      if (!pending) {
        progress(undefined);
        return app;
      }
      progress(`Rollout: ${pending}`);
    } else if (!observed(app, generation)) {
      progress("waiting for the operator to see the new spec");
    } else if (condition(app, CONDITION.ModelCached)?.reason === REASON.Pulling) {
      const pulled = await pullProgress(client, app);
      if (pulled) progress(`ModelCached: ${pulled}`);
    }
    if (Date.now() > deadline) {
      progress(undefined);
      const ready = condition(app, CONDITION.Ready);
      throw new PlatformError(
        `${client.org}/${name} is not ready after ${Math.round(opts.timeoutMs / 1000)} s${ready ? ` (${ready.reason}: ${ready.message})` : ""}; it goes on deploying (gantry apps get ${name})`,
      );
    }
    await sleep(opts.pollMs ?? 500);
  }
}
