// The lines a person copies to call an app: curl with the Authorization header, and the openai client. Pure.
import type { AppView } from "./api.ts";

export const servedModel = (a: AppView): string => a.servedModel ?? a.model ?? "<model>";

export const curlLine = (url: string, model: string, key = "$GANTRY_KEY"): string =>
  `curl ${url}/v1/chat/completions \\
  -H "Authorization: Key ${key}" \\
  -H "Content-Type: application/json" \\
  -d '{"model": "${model}", "messages": [{"role": "user", "content": "Hello!"}]}'`;

export const openaiSnippet = (url: string, model: string): string =>
  `import OpenAI from "openai";

const client = new OpenAI({
  baseURL: "${url}/v1",
  apiKey: process.env.GANTRY_KEY, // <key_id>:<key_secret>, sent as Authorization: Bearer
});
const r = await client.chat.completions.create({
  model: "${model}",
  messages: [{ role: "user", content: "Hello!" }],
});
console.log(r.choices[0].message.content);`;
