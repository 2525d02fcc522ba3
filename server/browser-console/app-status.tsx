// How an app is doing, in words: its state (the Ready condition), replicas and every condition with its message;
// long work (a model pulling, an app starting from zero) shows as progress.
import type { AppView, Condition } from "./api.ts";

/** Reasons of work under way: shown with a progress bar. */
const WORKING = new Set(["Pulling", "Starting", "Scaling", "Progressing", "Pending", "ScalingUp", "Rollout"]);

export function stateOf(a: AppView): { label: string; tone: "ok" | "busy" | "bad" | "idle"; message: string } {
  if (a.deleting) return { label: "Deleting", tone: "busy", message: "the app and its pods are being deleted" };
  const r = a.ready;
  if (!r) return { label: "Pending", tone: "busy", message: "waiting for the operator" };
  if (r.status === "True")
    return r.reason === "ScaledToZero"
      ? { label: "Scaled to zero", tone: "idle", message: r.message }
      : { label: "Ready", tone: "ok", message: r.message };
  return { label: r.reason, tone: WORKING.has(r.reason) ? "busy" : "bad", message: r.message };
}

export function StateBadge({ app }: { app: AppView }) {
  const s = stateOf(app);
  return (
    <span class={`badge ${s.tone}`}>
      {s.label}
      {s.tone === "busy" && <progress class="inline" aria-label={`${app.name}: ${s.label}`} />}
    </span>
  );
}

export const replicasText = (a: AppView): string =>
  `${a.readyReplicas ?? 0}/${a.replicas ?? 0} ready · scales ${a.minReplicas ?? 0}–${a.maxReplicas ?? 1}`;

export function Conditions({ conditions }: { conditions: Condition[] | undefined }) {
  if (!conditions?.length) return <p class="help">No conditions reported yet: the operator has not seen the app.</p>;
  return (
    <div class="table-wrap">
      <table class="conditions">
        <caption class="visually-hidden">Conditions</caption>
        <thead>
          <tr>
            <th scope="col">Condition</th>
            <th scope="col">Status</th>
            <th scope="col">Reason</th>
            <th scope="col">Message</th>
          </tr>
        </thead>
        <tbody>
          {conditions.map((c) => (
            <tr key={c.type}>
              <th scope="row">{c.type}</th>
              <td>{c.status}</td>
              <td>
                {c.reason}
                {c.status !== "True" && WORKING.has(c.reason) && (
                  <progress class="inline" aria-label={`${c.type}: ${c.reason}`} />
                )}
              </td>
              <td>{c.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
