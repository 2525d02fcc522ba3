// `gantry prepare <model>`: puts a model into the local store (GANTRY_MODELS) without a server — the init step of a
// ModelApp's pods. A hub model is pulled unless the store has it (resumable: a restarted pod continues a cut download);
// a named model must already be in the store. An optional Modelfile (FROM <model> plus overrides) is applied as --as
// <name>. With
// --report <file> (the pod's termination log) it writes one JSON line: {"model", "digest"} or {"error", "code"}.
import fs from "node:fs";
import path from "node:path";
import { hubModelName, isHubRef, parseHubRef } from "../../common/hub-ref.ts";
import { envHelp, parseEnv } from "../../common/config.ts";
import { releaseHeldLocks, withDirLock } from "../../common/dir-lock.ts";
import { PREPARE_EXIT_MODEL_NOT_FOUND } from "../../../operator/api/v1alpha1/prepare.ts";
import { isAppError } from "../../common/errors.ts";
import { ServerConfigSchema } from "../../config.ts";
import { pullModel } from "../../hub/pull.ts";
import { ModelStore } from "../../store/model-store.ts";
import { expectPositionals, parseArgs, stringFlag, UsageError } from "../args.ts";
import type { Command } from "../context.ts";
import { ProgressDisplay } from "../progress.ts";
import { readModelfile } from "../commands/create.ts";

/** What `gantry prepare` reads: the store, and the hub it pulls from. */
const PrepareEnvSchema = ServerConfigSchema.pick({ GANTRY_MODELS: true, GANTRY_HUB_URL: true, HF_TOKEN: true });

export const prepareCommand: Command = {
  group: "platform",
  name: "prepare",
  usage: "gantry prepare <model> [--modelfile <file> --as <name>] [--report <file>]",
  summary: "Put a model into GANTRY_MODELS without a server (pulls hub models; used by pods' init step)",
  details: () => envHelp("Environment variables", PrepareEnvSchema),
  async run(args, ctx) {
    const { positionals, flags } = parseArgs("prepare", args, {
      modelfile: { type: "string" },
      as: { type: "string" },
      report: { type: "string" },
    });
    const [model] = expectPositionals(positionals, ["model"], this.usage);
    const modelfile = stringFlag(flags.modelfile),
      as = stringFlag(flags.as),
      reportFile = stringFlag(flags.report);
    if (Boolean(modelfile) !== Boolean(as)) throw new UsageError("prepare: --modelfile and --as go together");
    const report = (r: Record<string, string>) => {
      if (reportFile) fs.writeFileSync(reportFile, `${JSON.stringify(r)}\n`);
    };
    // A pod deleted mid-pull gives the volume's pull lock up at once (the next pod need not wait out its heartbeat).
    process.once("SIGTERM", () => {
      releaseHeldLocks();
      process.exit(143);
    });
    try {
      const config = parseEnv(PrepareEnvSchema, ctx.env);
      const store = new ModelStore({ root: config.GANTRY_MODELS });
      // A pod's log: a bar line every 2 s while a pull moves, which `gantry deploy` shows as the app's progress.
      const display = new ProgressDisplay(
        { write: (t) => ctx.stderr.write(t), isTTY: ctx.stderr.isTTY === true },
        Date.now,
        { logEveryMs: 2000 },
      );
      let name: string;
      try {
        // A model already in the volume is used as it is: a restarted pod needs neither the hub nor the network.
        const lookup = () =>
          store.resolve(isHubRef(model!) ? hubModelName(parseHubRef(model!)) : model!).catch((e: unknown) => {
            if (isHubRef(model!) && isAppError(e) && e.code === "MODEL_NOT_FOUND") return undefined;
            throw e;
          });
        const stored = await lookup();
        name = stored
          ? stored.name
          : // One pull into a volume at a time, whichever pod asks (replicas starting together, the model cache Job;
            // models may share blobs): the others wait, then find their model in place or pull it.
            (
              await withDirLock(
                path.join(config.GANTRY_MODELS, "locks", "pull"),
                async () =>
                  (await lookup()) ??
                  pullModel(model!, {
                    store,
                    hubUrl: config.GANTRY_HUB_URL,
                    token: config.HF_TOKEN,
                    onProgress: (p) => display.update(p),
                  }),
                {
                  acrossHosts: true,
                  onWait: () => ctx.say(`another process is pulling into ${config.GANTRY_MODELS}: waiting for it`),
                },
              )
            ).name;
        if (stored) ctx.say(`${name} is already in ${config.GANTRY_MODELS}`);
        if (modelfile && as) {
          const {
            from: _from,
            adapters: _adapters,
            requires: _requires,
            parameters,
            ...rest
          } = readModelfile(modelfile);
          await store.create(
            { model: as, from: name, ...rest, ...(parameters ? { parameters: parameters as never } : {}) },
            (p) => display.update(p),
          );
          name = as;
        }
      } finally {
        display.finish();
      }
      const { name: served, digest } = await store.resolve(name);
      report({ model: served, digest });
      ctx.say(`${served} is ready (${digest})`);
    } catch (e) {
      report({ error: e instanceof Error ? e.message : String(e), code: isAppError(e) ? e.code : "INTERNAL" });
      if (isAppError(e) && e.code === "MODEL_NOT_FOUND")
        throw Object.assign(e, { exitCode: PREPARE_EXIT_MODEL_NOT_FOUND });
      throw e;
    }
  },
};
