// `gantry serve` with an EngineTuning, for benchmarks and A/B tests only (startTestServer's `tuning`): the tuning comes
// as JSON in GANTRY_BENCH_TUNING, a variable only this entry reads; the server's own configuration is as for `gantry
// serve`. Usage: GANTRY_BENCH_TUNING='{"inlineDecode":false}' node test/support/tuned-serve.ts [--model <ref>]...
import { serve } from "../../server/cli/processes/serve.ts";
import { EngineTuningSchema } from "../../server/engine/tuning.ts";

const parsed = EngineTuningSchema.safeParse(JSON.parse(process.env.GANTRY_BENCH_TUNING ?? "{}"));
if (!parsed.success) {
  console.error(
    `GANTRY_BENCH_TUNING: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`,
  );
  process.exit(2);
}
await serve(process.argv.slice(2), process.env, parsed.data);
