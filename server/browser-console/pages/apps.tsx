// The org's apps: model, auth, replicas, state with its message, URL; refreshed every few seconds (an app scaling
// from zero or pulling its model moves on its own). No apps: how to deploy one.
import { useState } from "preact/hooks";
import { appUrl, get, orgPath, type AppView } from "../api.ts";
import { StateBadge, stateOf, replicasText } from "../app-status.tsx";
import { href } from "../router.ts";
import { Code, Empty, ErrorText, usePoll } from "../ui.tsx";

export const deployLine = (org: string) =>
  `gantry deploy examples/chat.ts::chat --app-name chat --auth private --org ${org}`;
export const appYaml = (org: string) => `apiVersion: gantry.dev/v1alpha1
kind: ModelApp
metadata: { name: chat, namespace: ${org} }
spec:
  model: hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M
  auth: private
  scaling: { minReplicas: 0, maxReplicas: 2 }`;

export function AppsPage({ org }: { org: string }) {
  const [apps, setApps] = useState<AppView[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  usePoll(
    async (signal) => {
      try {
        setApps((await get<{ apps: AppView[] }>(orgPath(org, "apps"), signal)).apps);
        setError(undefined);
      } catch (e) {
        if ((e as Error).name !== "AbortError") setError(e);
      }
    },
    3000,
    [org],
  );
  return (
    <>
      <h1>Apps</h1>
      <ErrorText error={error} />
      {apps === undefined && !error && <p aria-busy="true">Loading the apps…</p>}
      {apps?.length === 0 && (
        <Empty title="No apps yet">
          <p>Deploy one with the CLI (it needs a kubeconfig of the cluster):</p>
          <Code text={deployLine(org)} label="deploy command" />
          <p>or apply a ModelApp with kubectl:</p>
          <Code text={appYaml(org)} label="ModelApp YAML" />
        </Empty>
      )}
      {apps && apps.length > 0 && (
        <div class="table-wrap">
          <table id="apps">
            <caption class="visually-hidden">Apps of org {org}</caption>
            <thead>
              <tr>
                <th scope="col">App</th>
                <th scope="col">Model</th>
                <th scope="col">Auth</th>
                <th scope="col">Replicas</th>
                <th scope="col">State</th>
                <th scope="col">URL</th>
              </tr>
            </thead>
            <tbody>
              {apps.map((a) => (
                <tr key={a.name}>
                  <th scope="row">
                    <a href={href({ page: "app", name: a.name })}>{a.name}</a>
                  </th>
                  <td class="mono">{a.servedModel ?? a.model ?? "—"}</td>
                  <td>{a.auth}</td>
                  <td>{replicasText(a)}</td>
                  <td>
                    <StateBadge app={a} />
                    <div class="help">{stateOf(a).message}</div>
                  </td>
                  <td class="mono url">{appUrl(a)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
