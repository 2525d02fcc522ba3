// The org's API keys: the same Secrets `gantry keys` lists, creates and revokes. A new key's secret is shown once,
// here, with a copy button and a curl line; it is not kept anywhere in the page after it is dismissed.
import { useState } from "preact/hooks";
import { get, orgPath, request, type AppView, type KeyView } from "../api.ts";
import { curlLine } from "../snippets.ts";
import { ago, Code, ConfirmButton, dateTime, Empty, ErrorText, usePoll, CopyButton } from "../ui.tsx";

type Created = KeyView & { key: string };

export function KeysPage({ org }: { org: string }) {
  const [keys, setKeys] = useState<KeyView[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [created, setCreated] = useState<Created | undefined>(undefined);
  const [showForm, setShowForm] = useState(false);
  const [example, setExample] = useState<AppView | undefined>(undefined);
  const load = async (signal?: AbortSignal) => {
    try {
      setKeys((await get<{ keys: KeyView[] }>(orgPath(org, "keys"), signal)).keys);
      setError(undefined);
    } catch (e) {
      if ((e as Error).name !== "AbortError") setError(e);
    }
  };
  usePoll(load, 15_000, [org]);
  usePoll(
    async (signal) => setExample((await get<{ apps: AppView[] }>(orgPath(org, "apps"), signal)).apps[0]),
    60_000,
    [org],
  );
  const now = Date.now();
  return (
    <>
      <h1>API keys</h1>
      <p class="help">
        Keys call the org's apps (<strong>api</strong>) or also manage the org (<strong>admin</strong>). The same keys
        as <code>gantry keys list --org {org}</code>.
      </p>
      <ErrorText error={error} />
      {created && <NewKey created={created} example={example} onDone={() => setCreated(undefined)} />}
      {!showForm && !created && (
        <p>
          <button type="button" onClick={() => setShowForm(true)}>
            Create key
          </button>
        </p>
      )}
      {showForm && (
        <CreateKey
          org={org}
          onCancel={() => setShowForm(false)}
          onCreated={(k) => {
            setShowForm(false);
            setCreated(k);
            void load();
          }}
        />
      )}
      {keys?.length === 0 && !showForm && !created && (
        <Empty title="No keys yet">
          <p>Create a key to call the org's apps from code: the button above makes one and shows its secret once.</p>
        </Empty>
      )}
      {keys && keys.length > 0 && (
        <div class="table-wrap">
          <table id="keys">
            <caption class="visually-hidden">API keys of org {org}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key id</th>
                <th scope="col">Scope</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} data-key-id={k.id}>
                  <th scope="row" class="key-name">
                    {k.name || <span class="help">(no name)</span>}
                  </th>
                  <td class="mono">{k.id}</td>
                  <td>{k.scope}</td>
                  <td title={dateTime(k.created)}>{ago(k.created, now)}</td>
                  <td>{k.expires ? `${dateTime(k.expires)}${k.expired ? " (expired)" : ""}` : "never"}</td>
                  <td title={k.lastUsed ? dateTime(k.lastUsed) : undefined}>{ago(k.lastUsed, now)}</td>
                  <td>
                    <ConfirmButton
                      danger
                      label="Revoke"
                      title={`Revoke key ${k.name || k.id}?`}
                      message={`Requests with key ${k.id} get 401 from now on, on every gateway. This cannot be undone.`}
                      confirm="Revoke key"
                      onConfirm={async () => {
                        await request("DELETE", orgPath(org, `keys/${encodeURIComponent(k.id)}`));
                        await load();
                      }}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

const EXPIRIES: Array<[string, string]> = [
  ["", "never"],
  ["1d", "in 1 day"],
  ["30d", "in 30 days"],
  ["90d", "in 90 days"],
  ["365d", "in a year"],
];

function CreateKey({
  org,
  onCreated,
  onCancel,
}: {
  org: string;
  onCreated: (k: Created) => void;
  onCancel: () => void;
}) {
  const [name, setName] = useState("");
  const [scope, setScope] = useState<"api" | "admin">("api");
  const [expires, setExpires] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card"
      aria-labelledby="create-title"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          onCreated(
            await request<Created>("POST", orgPath(org, "keys"), {
              scope,
              ...(name ? { name } : {}),
              ...(expires ? { expires } : {}),
            }),
          );
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="create-title">New key</h2>
      <label for="key-name">Name</label>
      <input
        id="key-name"
        maxLength={253}
        value={name}
        placeholder="what it is for"
        onInput={(e) => setName((e.target as HTMLInputElement).value)}
      />
      <fieldset>
        <legend>Scope</legend>
        <label>
          <input type="radio" name="scope" value="api" checked={scope === "api"} onChange={() => setScope("api")} />{" "}
          api: call the org's apps
        </label>
        <label>
          <input
            type="radio"
            name="scope"
            value="admin"
            checked={scope === "admin"}
            onChange={() => setScope("admin")}
          />{" "}
          admin: also manage keys and apps
        </label>
      </fieldset>
      <label for="key-expires">Expires</label>
      <select id="key-expires" value={expires} onChange={(e) => setExpires((e.target as HTMLSelectElement).value)}>
        {EXPIRIES.map(([v, label]) => (
          <option key={v} value={v}>
            {label}
          </option>
        ))}
      </select>
      <ErrorText error={error} />
      <div class="actions">
        <button type="submit" disabled={busy}>
          {busy ? "Creating…" : "Create key"}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function NewKey({ created, example, onDone }: { created: Created; example: AppView | undefined; onDone: () => void }) {
  const url = example
    ? (example.url ?? `${location.origin}/${example.org}/${example.name}`)
    : `${location.origin}/${created.org}/<app>`;
  const model = example?.servedModel ?? example?.model ?? "<model>";
  return (
    <section class="card new-key" aria-labelledby="new-key-title">
      <h2 id="new-key-title">Key {created.name ? `"${created.name}"` : created.id} created</h2>
      <p role="status">
        <strong>Copy the key now: it is shown only this once.</strong> Gantry keeps only a hash of its secret.
      </p>
      <div class="secret">
        <input
          id="new-key-value"
          readOnly
          value={created.key}
          aria-label="the new key"
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
        <CopyButton text={created.key} label="Copy key" />
      </div>
      <Code text={curlLine(url, model, created.key)} label="curl command with the new key" />
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </section>
  );
}
