// Sign-in: an admin key of the org, exchanged for a session. The key goes to the gateway once and is not kept
// anywhere in the browser (the field is cleared; the session is an HttpOnly cookie).
import { useState } from "preact/hooks";
import { request, type Session } from "../api.ts";
import { ErrorText } from "../ui.tsx";

export function SignIn({ message, onSignedIn }: { message: string; onSignedIn: (s: Session) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  return (
    <main id="main" class="sign-in">
      <h1>Gantry console</h1>
      {message && (
        <p class="notice" role="status">
          {message}
        </p>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          try {
            const s = await request<Session>("POST", "session", { key });
            setKey("");
            onSignedIn(s);
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label for="key">Admin key of your org</label>
        <input
          id="key"
          name="key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          value={key}
          placeholder="key_id:key_secret"
          aria-describedby="key-help key-error"
          aria-invalid={error ? "true" : undefined}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
        <ErrorText error={error} id="key-error" />
        <p id="key-help" class="help">
          An admin key is made by a cluster admin: <code>gantry keys create --org &lt;org&gt; --scope admin</code>. The
          key is exchanged for a session; it is not stored in this browser.
        </p>
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
