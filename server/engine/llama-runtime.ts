// The node-llama-cpp runtime: loaded once per process (getLlama test-loads the binary in a child process, ~0.5 s) and
// never compiled at run time. Threads are always explicit: the library default oversubscribes small machines.
import { getLlama, LlamaLogLevel, type Llama } from "node-llama-cpp";
import type { Logger } from "../common/logger.ts";

const runtimes = new Map<number, Promise<Llama>>();

export function llamaRuntime(threads: number, logger: Logger): Promise<Llama> {
  let p = runtimes.get(threads);
  if (!p) {
    p = getLlama({
      gpu: process.env.NODE_LLAMA_CPP_GPU ? "auto" : false,
      build: "never",
      maxThreads: threads,
      logLevel: LlamaLogLevel.warn,
      logger: (level, message) => {
        const text = message.trim();
        if (!text) return;
        if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) logger.error({ component: "llama.cpp" }, text);
        else if (level === LlamaLogLevel.warn) logger.warn({ component: "llama.cpp" }, text);
        else logger.debug({ component: "llama.cpp" }, text);
      },
    });
    runtimes.set(threads, p);
    p.catch(() => runtimes.delete(threads));
  }
  return p;
}
