// The Dockerfile read as stages: each stage's name, base, ENV and COPY instructions (continuation lines joined).
// Used by the tests that check what the image is made of without building it.
import fs from "node:fs";
import path from "node:path";
import { REPO } from "./server.ts";

export const DOCKERFILE = path.join(REPO, "Dockerfile");

export interface Copy {
  /** The stage copied from (--from=), or undefined for the build context. */
  from?: string;
  sources: string[];
  dest: string;
}

export interface Stage {
  name: string;
  base: string;
  env: Record<string, string>;
  copies: Copy[];
}

export function dockerfileStages(file = DOCKERFILE): Stage[] {
  const lines = fs.readFileSync(file, "utf8").replace(/\\\n/g, " ").split("\n");
  const stages: Stage[] = [];
  for (const line of lines) {
    const from = /^FROM (\S+) AS (\S+)$/.exec(line);
    if (from) {
      stages.push({ name: from[2]!, base: from[1]!, env: {}, copies: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) continue;
    if (line.startsWith("ENV ")) for (const m of line.slice(4).matchAll(/(\w+)=(\S+)/g)) stage.env[m[1]!] = m[2]!;
    if (line.startsWith("COPY ")) {
      const words = line.slice(5).trim().split(/\s+/);
      const flag = words.find((w) => w.startsWith("--from="));
      const paths = words.filter((w) => !w.startsWith("--"));
      stage.copies.push({
        ...(flag ? { from: flag.slice("--from=".length) } : {}),
        sources: paths.slice(0, -1),
        dest: paths.at(-1)!,
      });
    }
  }
  return stages;
}

export function stage(name: string, stages = dockerfileStages()): Stage {
  const s = stages.find((x) => x.name === name);
  if (!s) throw new Error(`no stage ${name} in the Dockerfile`);
  return s;
}

/** The files of the build context a stage copies (directories expanded), relative to the repository. */
export function contextFiles(s: Stage): Set<string> {
  const out = new Set<string>();
  const add = (rel: string): void => {
    const abs = path.join(REPO, rel);
    if (!fs.existsSync(abs)) return;
    if (fs.statSync(abs).isDirectory()) for (const f of fs.readdirSync(abs)) add(path.join(rel, f));
    else out.add(rel);
  };
  for (const c of s.copies) if (!c.from) for (const src of c.sources) add(src);
  return out;
}

/** The repository's TypeScript files `entry` imports, directly or not (relative imports), itself included. */
export function importClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (rel: string): void => {
    if (seen.has(rel)) return;
    seen.add(rel);
    const text = fs.readFileSync(path.join(REPO, rel), "utf8");
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/gms))
      if (!/^import\s+type\s/.test(m[0])) visit(path.join(path.dirname(rel), m[1]!));
  };
  visit(entry);
  return seen;
}
