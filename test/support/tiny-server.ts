// A `gantry serve` process with the two tiny test models and the real `ollama` and `openai` clients pointed at it.
import { Ollama } from "ollama";
import OpenAI from "openai";
import { tinyModelPath } from "./models.ts";
import { createModel, startTestServer, type TestServer } from "./server.ts";

export interface TinyServer {
  srv: TestServer;
  ollama: Ollama;
  openai: OpenAI;
}

/** "tiny" ends now and then (end-of-generation logit -3); "babbler" practically never does. */
export async function startTinyServer(env: Record<string, string> = {}): Promise<TinyServer> {
  const srv = await startTestServer({ env });
  await createModel(srv.url, "tiny", await tinyModelPath());
  await createModel(srv.url, "babbler", await tinyModelPath({ controlLogit: -8 }));
  return {
    srv,
    ollama: new Ollama({ host: srv.url }),
    openai: new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "placeholder" }),
  };
}
