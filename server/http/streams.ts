// Streaming response writers: NDJSON (Ollama) and Server-Sent Events (OpenAI). Each line is flushed as written.
import type { Response } from "express";

export interface LineStream {
  write(obj: unknown): void;
  end(): void;
}

export function startNdjson(res: Response): LineStream {
  res.status(200);
  res.setHeader("Content-Type", "application/x-ndjson");
  res.setHeader("Cache-Control", "no-cache");
  res.flushHeaders();
  return {
    write: (obj) => {
      if (!res.writableEnded) res.write(JSON.stringify(obj) + "\n");
    },
    end: () => {
      if (!res.writableEnded) res.end();
    },
  };
}

function sendSseHead(res: Response): void {
  res.status(200);
  res.setHeader("Content-Type", "text/event-stream");
  res.setHeader("Cache-Control", "no-cache");
  res.setHeader("Connection", "keep-alive");
  res.flushHeaders();
}

export function startSse(res: Response): LineStream {
  sendSseHead(res);
  return {
    write: (obj) => {
      if (!res.writableEnded) res.write(`data: ${JSON.stringify(obj)}\n\n`);
    },
    end: () => {
      if (!res.writableEnded) {
        res.write("data: [DONE]\n\n");
        res.end();
      }
    },
  };
}

/** Server-Sent Events with names (`event: <name>`), as the Responses and Anthropic Messages APIs stream. */
export interface NamedEventStream {
  write(event: string, data: object): void;
  end(): void;
}

export function startNamedSse(res: Response): NamedEventStream {
  sendSseHead(res);
  return {
    write: (event, data) => {
      if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    end: () => {
      if (!res.writableEnded) res.end();
    },
  };
}

/**
 * An AbortSignal that fires when the client goes away before the response finished; already aborted when it went away
 * before this was called (during the body's parsing or the model's lookup, say: "close" fired then, and a signal that
 * waited for it would let the request run to its end for nobody).
 */
export function clientAbortSignal(res: Response): AbortSignal {
  const ac = new AbortController();
  const gone = () => {
    if (!res.writableFinished) ac.abort(new Error("client disconnected"));
  };
  if (res.closed) gone();
  else res.on("close", gone);
  return ac.signal;
}
