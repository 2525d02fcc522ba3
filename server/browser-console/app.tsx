// The console's shell: the session (asked of the gateway at start; signed out → the sign-in page), the header with
// the org and the navigation, and the page of the current route.
import { useEffect, useState } from "preact/hooks";
import { get, request, useSession, type Session } from "./api.ts";
import { AppPage } from "./pages/app.tsx";
import { AppsPage } from "./pages/apps.tsx";
import { KeysPage } from "./pages/keys.tsx";
import { PlaygroundPage } from "./pages/playground.tsx";
import { SignIn } from "./pages/sign-in.tsx";
import { UsagePage } from "./pages/usage.tsx";
import { href, onLinkClick, useRoute, type Route } from "./router.ts";
import { ErrorText } from "./ui.tsx";

const TITLES: Record<Route["page"], string> = {
  apps: "Apps",
  app: "App",
  keys: "API keys",
  usage: "Usage",
  playground: "Playground",
};

export function App() {
  const [session, setSession] = useState<Session | undefined | null>(undefined); // undefined: asking; null: none
  const [signedOutWhy, setSignedOutWhy] = useState("");
  const [error, setError] = useState<unknown>(undefined);
  const route = useRoute();

  useEffect(() => {
    useSession(session ?? undefined, (message) => {
      setSignedOutWhy(message);
      setSession(null);
    });
  }, [session]);

  useEffect(() => {
    get<Session>("session").then(setSession, () => setSession(null));
  }, []);

  useEffect(() => {
    const name = route.page === "app" ? route.name : TITLES[route.page];
    document.title = session ? `${name} · ${session.org} · Gantry console` : "Sign in · Gantry console";
  }, [route, session]);

  if (session === undefined)
    return (
      <main id="main" class="loading" aria-busy="true">
        <p>Loading…</p>
      </main>
    );
  if (session === null)
    return (
      <SignIn
        message={signedOutWhy}
        onSignedIn={(s) => {
          setSignedOutWhy("");
          setSession(s);
        }}
      />
    );

  const nav: Array<[Route, string]> = [
    [{ page: "apps" }, "Apps"],
    [{ page: "keys" }, "Keys"],
    [{ page: "usage" }, "Usage"],
    [{ page: "playground" }, "Playground"],
  ];
  const current = route.page === "app" ? "apps" : route.page;
  return (
    <div class="shell" onClick={(e) => onLinkClick(e as unknown as MouseEvent)}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <a class="brand" href={href({ page: "apps" })}>
          Gantry
        </a>
        <nav aria-label="Console">
          <ul>
            {nav.map(([r, label]) => (
              <li key={label}>
                <a href={href(r)} aria-current={current === r.page ? "page" : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span title={`signed in with key ${session.keyId}`}>
            org <strong>{session.org}</strong>
          </span>
          <button
            type="button"
            class="secondary"
            onClick={async () => {
              try {
                await request("DELETE", "session");
                setSession(null);
              } catch (e) {
                setError(e);
              }
            }}
          >
            Sign out
          </button>
        </div>
      </header>
      <ErrorText error={error} />
      <main id="main" tabIndex={-1}>
        {route.page === "apps" && <AppsPage org={session.org} />}
        {route.page === "app" && <AppPage org={session.org} name={route.name} />}
        {route.page === "keys" && <KeysPage org={session.org} />}
        {route.page === "usage" && <UsagePage org={session.org} />}
        {route.page === "playground" && <PlaygroundPage org={session.org} app={route.app} />}
      </main>
    </div>
  );
}
