// The engine tests run on the patched addon that setup builds (the test command requires it: env.sh runs the engine
// build with --strict). Where it is missing the tests fail, saying why; they never skip, so a machine that could not
// build it cannot pass them untested.
import assert from "node:assert/strict";
import { patchedBuild, readBuildStatus } from "../../server/engine/native/patched-build.ts";
import { testEngineBuild } from "./engine-build.ts";

export function requirePatchedBuild(): void {
  const build = patchedBuild(testEngineBuild());
  const status = readBuildStatus(build);
  assert.equal(
    status?.state,
    "built",
    `the patched engine build is required and missing: ${
      status?.state === "failed" ? `its build failed (${status.reason}; log: ${status.log})` : `nothing in ${build.dir}`
    }; \`npm test\` builds it during setup (server/setup/engine-build.ts --strict)`,
  );
}
