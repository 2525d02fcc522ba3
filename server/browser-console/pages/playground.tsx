// Chat with one of the org's apps through the gateway, streamed, as the signed-in session: the request goes to the
// management API's playground route, which sends it into the app's pipeline; no key is ever in the page. Shows the
// time to the first token and the tokens per second of each answer.
import { useEffect, useRef, useState } from "preact/hooks";
import { API, ApiError, get, lines, orgPath, request, type AppView } from "../api.ts";
import { ErrorText, NumberField } from "../ui.tsx";
import { servedModel } from "../snippets.ts";

interface Turn {
  role: "user" | "assistant";
  content: string;
  stats?: string;
}

export function PlaygroundPage({ org, app: wanted }: { org: string; app: string | undefined }) {
  const [apps, setApps] = useState<AppView[] | undefined>(undefined);
  const [app, setApp] = useState(wanted ?? "");
  const [temperature, setTemperature] = useState("0.7");
  const [maxTokens, setMaxTokens] = useState("256");
  const [prompt, setPrompt] = useState("");
  const [turns, setTurns] = useState<Turn[]>([]);
  const [error, setError] = useState<unknown>(undefined);
  const [status, setStatus] = useState("");
  const ctl = useRef<AbortController | undefined>(undefined);
  useEffect(() => {
    get<{ apps: AppView[] }>(orgPath(org, "apps")).then(
      (r) => {
        setApps(r.apps);
        if (!wanted && r.apps[0]) setApp(r.apps[0].name);
      },
      (e: unknown) => setError(e),
    );
    return () => ctl.current?.abort();
  }, [org]);
  const chosen = apps?.find((a) => a.name === app);

  const send = async () => {
    if (!chosen || !prompt.trim()) return;
    const history: Turn[] = [...turns, { role: "user", content: prompt }];
    setTurns([...history, { role: "assistant", content: "" }]);
    setPrompt("");
    setError(undefined);
    setStatus("Sending… (an app scaled to zero starts a replica first)");
    const abort = (ctl.current = new AbortController());
    const t0 = performance.now();
    let first = 0,
      text = "",
      completion = 0;
    const update = (stats?: string) =>
      setTurns([...history, { role: "assistant", content: text, ...(stats ? { stats } : {}) }]);
    try {
      const res = await request<Response>(
        "POST",
        `${API}/${orgPath(org, `apps/${encodeURIComponent(chosen.name)}/v1/chat/completions`)}`,
        {
          model: servedModel(chosen),
          messages: history.map(({ role, content }) => ({ role, content })),
          stream: true,
          stream_options: { include_usage: true },
          temperature: Number(temperature),
          max_tokens: Number(maxTokens),
        },
        { signal: abort.signal, raw: true },
      );
      setStatus("Waiting for the first token…");
      for await (const line of lines(res)) {
        if (!line.startsWith("data:")) continue; // ": warming up" while the app starts
        const data = line.slice(5).trim();
        if (data === "[DONE]") continue;
        const ev = JSON.parse(data) as {
          error?: { message?: string };
          choices?: Array<{ delta?: { content?: string } }>;
          usage?: { completion_tokens?: number };
        };
        if (ev.error) throw new ApiError(0, ev.error.message ?? "the app's answer broke off");
        const piece = ev.choices?.[0]?.delta?.content;
        if (piece) {
          if (!first) {
            first = performance.now();
            setStatus("Streaming…");
          }
          text += piece;
          update();
        }
        if (ev.usage?.completion_tokens !== undefined) completion = ev.usage.completion_tokens;
      }
      const end = performance.now();
      const ttft = first ? first - t0 : end - t0;
      const rate = first && completion > 1 && end > first ? (completion - 1) / ((end - first) / 1000) : undefined;
      update(
        `${completion} tokens · time to first token ${Math.round(ttft)} ms${rate ? ` · ${rate.toFixed(1)} tokens/s` : ""}`,
      );
      setStatus("");
    } catch (e) {
      setStatus("");
      if ((e as Error).name === "AbortError") update("stopped");
      else setError(e);
    } finally {
      ctl.current = undefined;
    }
  };

  return (
    <>
      <h1>Playground</h1>
      {apps?.length === 0 && (
        <p class="empty-line">The org has no apps to chat with yet: deploy one first (see Apps).</p>
      )}
      <form
        class="playground"
        onSubmit={(e) => {
          e.preventDefault();
          void send();
        }}
      >
        <div class="inline-form">
          <label>
            App
            <select value={app} onChange={(e) => setApp((e.target as HTMLSelectElement).value)}>
              {(apps ?? []).map((a) => (
                <option key={a.name} value={a.name}>
                  {a.name}
                </option>
              ))}
            </select>
          </label>
          <NumberField label="Temperature" min={0} max={2} step={0.1} value={temperature} onValue={setTemperature} />
          <NumberField label="Max tokens" min={1} max={32768} value={maxTokens} onValue={setMaxTokens} />
          <button type="button" class="secondary" onClick={() => setTurns([])} disabled={turns.length === 0}>
            New chat
          </button>
        </div>
        <ol class="chat" id="chat" aria-label="Conversation" aria-live="polite">
          {turns.map((t, i) => (
            <li key={i} class={t.role}>
              <span class="role">{t.role === "user" ? "You" : (chosen?.name ?? "app")}</span>
              <div class="content">{t.content}</div>
              {t.stats && <div class="stats">{t.stats}</div>}
            </li>
          ))}
        </ol>
        {status && (
          <p role="status" class="progress-line">
            <progress aria-label="answer in progress" /> {status}
          </p>
        )}
        <ErrorText error={error} />
        <label for="prompt">Message</label>
        <textarea
          id="prompt"
          rows={3}
          value={prompt}
          onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              void send();
            }
          }}
        />
        <div class="actions">
          <button type="submit" disabled={!chosen || !prompt.trim() || ctl.current !== undefined}>
            Send
          </button>
          {ctl.current && (
            <button type="button" class="secondary" onClick={() => ctl.current?.abort()}>
              Stop
            </button>
          )}
          <span class="help">Ctrl+Enter sends</span>
        </div>
      </form>
    </>
  );
}
