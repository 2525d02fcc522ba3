// The ModelApp `gantry deploy` applies, rendered from an app definition and the command's flags, and what it prints
// about the result (the example request). Pure.
import {
  API_VERSION,
  KIND,
  MAX_NAME_LENGTH,
  type AuthMode,
  type ModelApp,
  type RolloutStrategy,
} from "../../operator/api/v1alpha1/modelapp.ts";
import { DNS_LABEL } from "../common/kube-names.ts";
import type { AppSpec } from "./app-definition.ts";

/** Where a deployed app came from (`examples/chat.ts::chat`), for `gantry apps get`. */
export const SOURCE_ANNOTATION = "gantry.dev/source";

/** Why `name` cannot be an app name (a DNS label of at most 53 characters), or undefined when it can. */
export function appNameProblem(name: string): string | undefined {
  if (name.length > MAX_NAME_LENGTH) return `app name "${name}" is longer than ${MAX_NAME_LENGTH} characters`;
  if (!DNS_LABEL.test(name))
    return `app name "${name}" must be lowercase letters, digits and '-', starting and ending with a letter or digit`;
  return undefined;
}

/** An app name from an export name: myChat → my-chat. */
export function defaultAppName(exportName: string): string {
  return exportName
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX_NAME_LENGTH)
    .replace(/-+$/, "");
}

export interface ManifestOptions {
  name: string;
  org: string;
  /** --auth: replaces the definition's. */
  auth?: AuthMode | undefined;
  /** --strategy: replaces the definition's. */
  strategy?: RolloutStrategy | undefined;
  /** `<file>::<export>` as the user wrote it. */
  source: string;
}

/** The ModelApp: the definition's spec as written (the operator applies the defaults) with the flags' overrides. */
export function renderModelApp(spec: AppSpec, o: ManifestOptions): ModelApp {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: o.name, namespace: o.org, annotations: { [SOURCE_ANNOTATION]: o.source } },
    spec: {
      ...spec,
      ...(o.auth ? { auth: o.auth } : {}),
      ...(o.strategy ? { strategy: o.strategy } : {}),
    } as ModelApp["spec"],
  };
}

/** How to call a deployed app: a curl request (with the Key header unless the app is public) and an openai client. */
export function exampleRequest(url: string, model: string, auth: string): string {
  const body = JSON.stringify({ model, messages: [{ role: "user", content: "Hello!" }], max_tokens: 64 });
  const apiKey = auth === "public" ? '"unused"' : "process.env.GANTRY_API_KEY";
  return [
    `  curl ${url}/v1/chat/completions \\`,
    ...(auth === "public" ? [] : [`    -H "Authorization: Key $GANTRY_API_KEY" \\`]),
    `    -H "Content-Type: application/json" \\`,
    `    -d '${body}'`,
    "",
    auth === "public"
      ? "  // with the openai npm client"
      : "  // with the openai npm client (it sends the key as a Bearer token, which the gateway accepts too)",
    `  import OpenAI from "openai";`,
    `  const client = new OpenAI({ baseURL: "${url}/v1", apiKey: ${apiKey} });`,
    `  const reply = await client.chat.completions.create({ model: ${JSON.stringify(model)}, messages: [{ role: "user", content: "Hello!" }] });`,
    "  console.log(reply.choices[0].message.content);",
  ].join("\n");
}
