// The package version, read once from package.json (at the package root: two levels up in a checkout, three in the
// built package's dist/).
import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "./package-files.ts";

export const VERSION: string = (
  JSON.parse(fs.readFileSync(path.join(packageRoot(), "package.json"), "utf8")) as { version: string }
).version;
