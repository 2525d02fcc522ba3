// Usage of the org over a chosen range: requests and tokens per hour or day (charts), per app and per key (tables),
// and the same numbers as a CSV file.
import { useMemo, useState } from "preact/hooks";
import { get, orgPath, type UsageRow } from "../api.ts";
import { TimeChart } from "../chart.tsx";
import { ErrorText, usePoll } from "../ui.tsx";
import { bucketTimes, perBucket, perGroup, usageCsv, type Bucket, type Totals } from "../usage-data.ts";

const RANGES: Array<[string, string, number]> = [
  ["24h", "Last 24 hours", 1],
  ["7d", "Last 7 days", 7],
  ["30d", "Last 30 days", 30],
];

export function UsagePage({ org }: { org: string }) {
  const [range, setRange] = useState("24h");
  const [bucket, setBucket] = useState<Bucket>("hour");
  const [rows, setRows] = useState<UsageRow[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [window_, setWindow] = useState({ from: 0, to: 0 });
  usePoll(
    async (signal) => {
      const days = RANGES.find((r) => r[0] === range)![2];
      const to = Date.now() + 1;
      const from = to - days * 86_400_000;
      try {
        const q = new URLSearchParams({ from: new Date(from).toISOString(), to: new Date(to).toISOString() });
        setRows((await get<{ usage: UsageRow[] }>(orgPath(org, `usage?${q}`), signal)).usage);
        setWindow({ from, to });
        setError(undefined);
      } catch (e) {
        if ((e as Error).name !== "AbortError") setError(e);
      }
    },
    30_000,
    [org, range],
  );
  const times = useMemo(() => (window_.to ? bucketTimes(window_.from, window_.to, bucket) : []), [window_, bucket]);
  const totals = useMemo(() => (rows ? perBucket(rows, times, bucket) : []), [rows, times, bucket]);
  const requests = useMemo(
    () => [
      { label: "requests", values: totals.map((t) => t.requests) },
      { label: "errors", values: totals.map((t) => t.errors) },
    ],
    [totals],
  );
  const tokens = useMemo(
    () => [
      { label: "prompt tokens", values: totals.map((t) => t.promptTokens) },
      { label: "completion tokens", values: totals.map((t) => t.completionTokens) },
    ],
    [totals],
  );
  return (
    <>
      <h1>Usage</h1>
      <form class="inline-form" aria-label="Usage range" onSubmit={(e) => e.preventDefault()}>
        <label>
          Range
          <select value={range} onChange={(e) => setRange((e.target as HTMLSelectElement).value)}>
            {RANGES.map(([v, label]) => (
              <option key={v} value={v}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Buckets
          <select value={bucket} onChange={(e) => setBucket((e.target as HTMLSelectElement).value as Bucket)}>
            <option value="hour">hours</option>
            <option value="day">days</option>
          </select>
        </label>
        <button
          type="button"
          class="secondary"
          disabled={!rows}
          onClick={() => {
            const blob = new Blob([usageCsv(rows ?? [], bucket)], { type: "text/csv" });
            const a = document.createElement("a");
            a.href = URL.createObjectURL(blob);
            a.download = `gantry-usage-${org}-${range}-${bucket}.csv`;
            a.click();
            setTimeout(() => URL.revokeObjectURL(a.href), 1000);
          }}
        >
          Export CSV
        </button>
      </form>
      <ErrorText error={error} />
      {!rows && !error && <p aria-busy="true">Loading usage…</p>}
      {rows && rows.length === 0 && (
        <p class="empty-line">No requests in this range yet. Calls to the org's apps show here within seconds.</p>
      )}
      {rows && (
        <>
          <div class="charts">
            <TimeChart
              id="usage-requests"
              title={`Requests per ${bucket}`}
              unit="requests"
              times={times}
              series={requests}
              bucket={bucket}
            />
            <TimeChart
              id="usage-tokens"
              title={`Tokens per ${bucket}`}
              unit="tokens"
              times={times}
              series={tokens}
              bucket={bucket}
            />
          </div>
          <GroupTable id="usage-by-app" title="Per app" head="App" groups={perGroup(rows, "app")} />
          <GroupTable id="usage-by-key" title="Per key" head="Key id" groups={perGroup(rows, "keyId")} />
        </>
      )}
    </>
  );
}

function GroupTable({
  id,
  title,
  head,
  groups,
}: {
  id: string;
  title: string;
  head: string;
  groups: Array<[string, Totals]>;
}) {
  return (
    <section aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <div class="table-wrap">
        <table id={id}>
          <thead>
            <tr>
              <th scope="col">{head}</th>
              <th scope="col">Requests</th>
              <th scope="col">Errors</th>
              <th scope="col">Prompt tokens</th>
              <th scope="col">Completion tokens</th>
            </tr>
          </thead>
          <tbody>
            {groups.length === 0 && (
              <tr>
                <td colSpan={5}>none</td>
              </tr>
            )}
            {groups.map(([name, t]) => (
              <tr key={name}>
                <th scope="row" class="mono">
                  {name === "-" ? "(no key: public app)" : name}
                </th>
                <td>{t.requests}</td>
                <td>{t.errors}</td>
                <td>{t.promptTokens}</td>
                <td>{t.completionTokens}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
