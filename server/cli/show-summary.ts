// The readable summary `gantry show <model>` prints by default (Ollama's layout). Pure.
import type { ShowResponse } from "../api/store-schemas.ts";
import { humanParameterCount } from "../gguf/metadata.ts";

type ShowSummaryInput = Pick<
  ShowResponse,
  "details" | "model_info" | "capabilities" | "parameters" | "system" | "license"
> &
  Pick<Partial<ShowResponse>, "projector_info">;

const section = (title: string, rows: readonly string[]): string[] =>
  rows.length === 0 ? [] : [`  ${title}`, ...rows.map((r) => `    ${r}`), ""];

const table = (pairs: readonly (readonly [string, string | undefined])[]): string[] => {
  const present = pairs.filter((p): p is readonly [string, string] => p[1] !== undefined && p[1] !== "");
  const width = Math.max(0, ...present.map(([k]) => k.length));
  return present.map(([k, v]) => `${k.padEnd(width + 4)}${v}`);
};

/** First `n` non-empty lines of a text block. */
const head = (text: string | undefined, n: number): string[] =>
  (text ?? "")
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== "")
    .slice(0, n);

export function formatShowSummary(show: ShowSummaryInput): string {
  const info = show.model_info;
  const arch = typeof info["general.architecture"] === "string" ? info["general.architecture"] : show.details.family;
  const num = (key: string): string | undefined => (typeof info[key] === "number" ? String(info[key]) : undefined);
  const lines = [
    ...section(
      "Model",
      table([
        ["architecture", arch],
        ["parameters", show.details.parameter_size],
        ["context length", num(`${arch}.context_length`)],
        ["embedding length", num(`${arch}.embedding_length`)],
        ["quantization", show.details.quantization_level],
      ]),
    ),
    ...section("Capabilities", show.capabilities),
    ...(show.projector_info ? section("Projector", projectorRows(show.projector_info)) : []),
    ...section(
      "Parameters",
      head(show.parameters, 50).map((l) => l.replace(/^(\S+)\s+/, (_m, k: string) => `${k.padEnd(16)}`)),
    ),
    ...section("System", head(show.system, 5)),
    ...section("License", head(show.license, 2)),
  ];
  return lines.join("\n") + (lines.length ? "\n" : "");
}

/** A vision model's projector (Ollama's "Projector" section): architecture, parameters, image size, width. */
function projectorRows(info: Record<string, unknown>): string[] {
  const val = (key: string): string | undefined =>
    typeof info[key] === "number" || typeof info[key] === "string" ? String(info[key]) : undefined;
  const params = typeof info["general.parameter_count"] === "number" ? info["general.parameter_count"] : undefined;
  return table([
    ["architecture", val("general.architecture")],
    ["parameters", params === undefined ? undefined : humanParameterCount(params)],
    ["projector type", val("clip.projector_type")],
    ["embedding length", val("clip.vision.embedding_length")],
    ["dimensions", val("clip.vision.projection_dim")],
    ["image size", val("clip.vision.image_size")],
    ["patch size", val("clip.vision.patch_size")],
  ]);
}
