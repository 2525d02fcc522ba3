// One app: its URL and how to call it, its traffic over time, its conditions, its last log lines (followed while the
// page is open), its scaling bounds (editable) and its deletion.
import { useEffect, useMemo, useState } from "preact/hooks";
import { API, appUrl, get, ndjson, orgPath, request, type AppView, type UsageRow } from "../api.ts";
import { Conditions, StateBadge, replicasText, stateOf } from "../app-status.tsx";
import { TimeChart } from "../chart.tsx";
import { href, navigate } from "../router.ts";
import { curlLine, openaiSnippet, servedModel } from "../snippets.ts";
import { bucketTimes, perBucket } from "../usage-data.ts";
import { Code, ConfirmButton, ErrorText, NumberField, usePoll } from "../ui.tsx";

export function AppPage({ org, name }: { org: string; name: string }) {
  const [app, setApp] = useState<(AppView & { progress?: string }) | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  usePoll(
    async (signal) => {
      try {
        setApp(await get(orgPath(org, `apps/${encodeURIComponent(name)}`), signal));
        setError(undefined);
      } catch (e) {
        if ((e as Error).name !== "AbortError") setError(e);
      }
    },
    3000,
    [org, name],
  );
  if (!app)
    return (
      <>
        <h1>{name}</h1>
        <ErrorText error={error} />
        {!error && <p aria-busy="true">Loading…</p>}
      </>
    );
  const url = appUrl(app);
  const state = stateOf(app);
  return (
    <>
      <h1>
        {app.name} <StateBadge app={app} />
      </h1>
      <ErrorText error={error} />
      <p class="help">{state.message}</p>
      {app.progress && (
        <p class="progress-line" role="status">
          <progress aria-label="model download" /> {app.progress}
        </p>
      )}
      <dl class="facts">
        <dt>URL</dt>
        <dd class="mono" id="app-url">
          {url}
        </dd>
        {app.queueUrl && (
          <>
            <dt>Queue URL</dt>
            <dd class="mono" id="app-queue-url">
              {app.queueUrl}
            </dd>
          </>
        )}
        <dt>Model</dt>
        <dd class="mono">{servedModel(app)}</dd>
        <dt>Auth</dt>
        <dd>{app.auth}</dd>
        <dt>Replicas</dt>
        <dd>{replicasText(app)}</dd>
      </dl>
      <p>
        <a class="button" href={href({ page: "playground", app: app.name })}>
          Try it in the playground
        </a>
      </p>
      <section aria-labelledby="call-title">
        <h2 id="call-title">Call it</h2>
        <Code text={curlLine(url, servedModel(app))} label="curl command" />
        <Code text={openaiSnippet(url, servedModel(app))} label="openai snippet" />
      </section>
      <Traffic org={org} app={app.name} />
      <section aria-labelledby="conditions-title">
        <h2 id="conditions-title">Conditions</h2>
        <Conditions conditions={app.conditions} />
      </section>
      <Scaling org={org} app={app} onChanged={setApp} />
      {app.queueUrl && <Requests org={org} app={app.name} />}
      <Logs org={org} app={app.name} />
      <section aria-labelledby="delete-title" class="danger-zone">
        <h2 id="delete-title">Delete</h2>
        <p>Deleting the app removes its pods and Service; the model volume stays while other apps use it.</p>
        <ConfirmButton
          danger
          label="Delete app"
          title={`Delete app ${app.name}?`}
          message={`The app ${app.name} and its pods go away; requests to ${url} get 404.`}
          confirm="Delete"
          onConfirm={async () => {
            await request("DELETE", orgPath(org, `apps/${encodeURIComponent(app.name)}`));
            navigate(href({ page: "apps" }));
          }}
        />
      </section>
    </>
  );
}

interface RequestRow {
  id: string;
  state: "queued" | "running" | "completed" | "failed";
  submittedAt: string;
  latencyMs?: number;
  status?: number;
  error?: string;
}

const STATE_TONE: Record<RequestRow["state"], string> = {
  queued: "idle",
  running: "busy",
  completed: "ok",
  failed: "bad",
};

/** The app's latest queued requests: queued, running, completed and failed, with latency and a failure's error. */
function Requests({ org, app }: { org: string; app: string }) {
  const [rows, setRows] = useState<RequestRow[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  usePoll(
    async (signal) => {
      try {
        const path = orgPath(org, `apps/${encodeURIComponent(app)}/requests`);
        setRows((await get<{ requests: RequestRow[] }>(path, signal)).requests);
        setError(undefined);
      } catch (e) {
        if ((e as Error).name !== "AbortError") setError(e);
      }
    },
    3000,
    [org, app],
  );
  const count = (s: RequestRow["state"]) => rows?.filter((r) => r.state === s).length ?? 0;
  return (
    <section aria-labelledby="requests-title">
      <h2 id="requests-title">Queued requests</h2>
      <ErrorText error={error} />
      {rows && (
        <p class="help">
          {count("queued")} queued, {count("running")} running, {count("completed")} completed, {count("failed")} failed
          (latest)
        </p>
      )}
      {rows && rows.length > 0 && (
        // Focusable: at phone width the table scrolls inside its box, and a keyboard must reach that scroll.
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Queued requests table">
          <table id="queued-requests">
            <caption class="visually-hidden">Latest queued requests of app {app}</caption>
            <thead>
              <tr>
                <th scope="col">Request</th>
                <th scope="col">State</th>
                <th scope="col">Submitted</th>
                <th scope="col">Latency</th>
                <th scope="col">Error</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.id} data-request-id={r.id}>
                  <th scope="row" class="mono">
                    {r.id}
                  </th>
                  <td>
                    <span class={`badge ${STATE_TONE[r.state]}`}>{r.state}</span>
                  </td>
                  <td>{new Date(r.submittedAt).toLocaleString()}</td>
                  <td>{r.latencyMs === undefined ? "" : `${(r.latencyMs / 1000).toFixed(2)} s`}</td>
                  <td class="request-error">{r.error ? `${r.status ?? ""} ${r.error}`.trim() : ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function Traffic({ org, app }: { org: string; app: string }) {
  const [rows, setRows] = useState<UsageRow[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [range] = useState(() => ({ from: Date.now() - 24 * 3_600_000, to: Date.now() + 1 }));
  usePoll(
    async (signal) => {
      try {
        const q = new URLSearchParams({
          from: new Date(range.from).toISOString(),
          to: new Date(Date.now() + 1).toISOString(),
        });
        setRows(
          (await get<{ usage: UsageRow[] }>(orgPath(org, `usage?${q}`), signal)).usage.filter((r) => r.app === app),
        );
        setError(undefined);
      } catch (e) {
        if ((e as Error).name !== "AbortError") setError(e);
      }
    },
    10_000,
    [org, app],
  );
  const times = useMemo(() => bucketTimes(range.from, range.to, "hour"), [range]);
  const totals = useMemo(() => (rows ? perBucket(rows, times, "hour") : []), [rows, times]);
  const series = useMemo(
    () => ({
      requests: [{ label: "requests", values: totals.map((t) => t.requests) }],
      tokens: [
        { label: "prompt tokens", values: totals.map((t) => t.promptTokens) },
        { label: "completion tokens", values: totals.map((t) => t.completionTokens) },
      ],
      ttft: [
        {
          label: "time to first token (ms)",
          values: totals.map((t) => (t.streamed ? t.firstTokenMs / t.streamed : null)),
        },
      ],
    }),
    [totals],
  );
  const sum = totals.reduce((n, t) => n + t.requests, 0);
  return (
    <section aria-labelledby="traffic-title">
      <h2 id="traffic-title">Last 24 hours</h2>
      <ErrorText error={error} />
      {rows && (
        <>
          <p id="traffic-summary">
            {plural(sum, "request")},{" "}
            {plural(
              totals.reduce((n, t) => n + t.promptTokens + t.completionTokens, 0),
              "token",
            )}
            {totals.some((t) => t.streamed) ? "" : " · no streamed answers yet, so no time to first token"}
          </p>
          <div class="charts">
            <TimeChart
              id="app-requests"
              title="Requests per hour"
              unit="requests"
              times={times}
              series={series.requests}
              bucket="hour"
            />
            <TimeChart
              id="app-tokens"
              title="Tokens per hour"
              unit="tokens"
              times={times}
              series={series.tokens}
              bucket="hour"
            />
            <TimeChart
              id="app-ttft"
              title="Time to first token (streamed answers, hourly mean)"
              unit="ms"
              times={times}
              series={series.ttft}
              bucket="hour"
            />
          </div>
        </>
      )}
    </section>
  );
}

function Scaling({ org, app, onChanged }: { org: string; app: AppView; onChanged: (a: AppView) => void }) {
  const [min, setMin] = useState(String(app.minReplicas ?? 0));
  const [max, setMax] = useState(String(app.maxReplicas ?? 1));
  const [error, setError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState("");
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setMin(String(app.minReplicas ?? 0));
    setMax(String(app.maxReplicas ?? 1));
  }, [app.minReplicas, app.maxReplicas]);
  return (
    <section aria-labelledby="scaling-title">
      <h2 id="scaling-title">Scaling</h2>
      <form
        class="inline-form"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          setSaved("");
          try {
            const a = await request<AppView>("PATCH", orgPath(org, `apps/${encodeURIComponent(app.name)}`), {
              minReplicas: Number(min),
              maxReplicas: Number(max),
            });
            onChanged({ ...app, ...a });
            setSaved(`Saved: the app scales between ${a.minReplicas} and ${a.maxReplicas} replicas.`);
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <NumberField label="Min replicas" min={0} max={1000} required value={min} onValue={setMin} />
        <NumberField label="Max replicas" min={1} max={1000} required value={max} onValue={setMax} />
        <button type="submit" disabled={busy}>
          {busy ? "Saving…" : "Save scaling"}
        </button>
      </form>
      <p class="help">
        Min 0 lets the app scale to zero when idle (the first request then waits for a replica to start).
      </p>
      <ErrorText error={error} />
      {saved && (
        <p role="status" class="ok-text">
          {saved}
        </p>
      )}
    </section>
  );
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

const MAX_LINES = 500;

function Logs({ org, app }: { org: string; app: string }) {
  const [lines, setLines] = useState<Array<{ pod: string; line: string }>>([]);
  const [status, setStatus] = useState<"connecting" | "following" | "ended">("connecting");
  const [error, setError] = useState<unknown>(undefined);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    setLines([]);
    setError(undefined);
    setStatus("connecting");
    (async () => {
      const res = await request<Response>(
        "GET",
        `${API}/${orgPath(org, `apps/${encodeURIComponent(app)}/logs?tail=100&follow=true`)}`,
        undefined,
        { signal: ctl.signal, raw: true },
      );
      setStatus("following");
      for await (const l of ndjson<{ pod?: string; line?: string; error?: string }>(res)) {
        if (l.error) setError(new Error(l.error));
        else if (l.line !== undefined) {
          const entry = { pod: l.pod ?? "", line: l.line };
          setLines((prev) => [...prev.slice(-(MAX_LINES - 1)), entry]);
        }
      }
      setStatus("ended");
    })().catch((e: unknown) => {
      if ((e as Error).name === "AbortError") return;
      setError(e);
      setStatus("ended");
    });
    return () => ctl.abort();
  }, [org, app, attempt]);
  const pods = new Set(lines.map((l) => l.pod));
  return (
    <section aria-labelledby="logs-title">
      <h2 id="logs-title">
        Logs <span class="help">(server container, {status === "following" ? "following" : status})</span>
      </h2>
      <ErrorText error={error} />
      {status === "ended" && (
        <button type="button" class="secondary" onClick={() => setAttempt((n) => n + 1)}>
          Follow again
        </button>
      )}
      <pre class="logs" id="logs" role="log" tabIndex={0} aria-label="log lines" aria-live="off">
        {lines.length === 0 && status !== "connecting" && !error ? "(no log lines yet)" : ""}
        {lines.map((l, i) => (
          <span key={i}>
            {pods.size > 1 ? `[${l.pod}] ` : ""}
            {l.line}
            {"\n"}
          </span>
        ))}
      </pre>
    </section>
  );
}
