// The package version, read once from package.json.
import fs from "node:fs";
import path from "node:path";

export const VERSION: string = (
  JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "..", "..", "package.json"), "utf8")) as { version: string }
).version;
