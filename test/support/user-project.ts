// A user's project folder, made the way users make one: `npm init -y` (npm 11 writes "type": "commonjs"), a
// package.json saying "type": "module", or no package.json at all. App files written as the README shows must load in
// each.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export type ProjectKind = "npm-init" | "module" | "none";
export const PROJECT_KINDS: readonly ProjectKind[] = ["npm-init", "module", "none"];

/** A new folder under `parent` (default: the system's temp directory) set up as `kind`. */
export function userProject(kind: ProjectKind, parent = os.tmpdir()): string {
  const dir = fs.mkdtempSync(path.join(parent, `project-${kind}-`));
  if (kind === "npm-init")
    execFileSync("npm", ["init", "-y"], { cwd: dir, stdio: "ignore", env: { ...process.env, npm_config_yes: "true" } });
  else if (kind === "module") fs.writeFileSync(path.join(dir, "package.json"), '{ "type": "module" }\n');
  return dir;
}
