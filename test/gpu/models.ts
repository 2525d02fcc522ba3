// `node test/gpu/models.ts <shape>`: writes one benchmark model with the project's GGUF writer (cached in
// $GANTRY_CACHE/test-models) and prints its path; the GPU check runs one process per model, at once.
import fs from "node:fs";
import { BENCH_SHAPES, type BenchShapeName } from "../support/gguf/bench.ts";
import { benchModelPath } from "../support/models.ts";

const shape = process.argv[2] as BenchShapeName;
if (!(shape in BENCH_SHAPES)) throw new Error(`unknown model shape ${shape} (${Object.keys(BENCH_SHAPES).join(", ")})`);
const started = performance.now();
const file = await benchModelPath(shape);
console.log(
  JSON.stringify({
    shape,
    file,
    bytes: fs.statSync(file).size,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  }),
);
