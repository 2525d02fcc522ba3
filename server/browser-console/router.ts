// Client-side routes under /_gantry/console/ (the gateway answers every such path with the page).
import { useEffect, useState } from "preact/hooks";

export const BASE = "/_gantry/console/";

export type Route =
  | { page: "apps" }
  | { page: "app"; name: string }
  | { page: "keys" }
  | { page: "usage" }
  | { page: "playground"; app?: string };

export function parseRoute(pathname: string, search: string): Route {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : "";
  const parts = rest.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "apps" && parts[1]) return { page: "app", name: parts[1] };
  if (parts[0] === "keys") return { page: "keys" };
  if (parts[0] === "usage") return { page: "usage" };
  if (parts[0] === "playground") {
    const app = new URLSearchParams(search).get("app");
    return app ? { page: "playground", app } : { page: "playground" };
  }
  return { page: "apps" };
}

export const href = (r: Route): string => {
  switch (r.page) {
    case "apps":
      return BASE;
    case "app":
      return `${BASE}apps/${encodeURIComponent(r.name)}`;
    case "playground":
      return `${BASE}playground${r.app ? `?app=${encodeURIComponent(r.app)}` : ""}`;
    default:
      return `${BASE}${r.page}`;
  }
};

const listeners = new Set<() => void>();

export function navigate(to: string): void {
  history.pushState(null, "", to);
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.pathname, location.search));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.pathname, location.search));
    listeners.add(update);
    window.addEventListener("popstate", update);
    return () => {
      listeners.delete(update);
      window.removeEventListener("popstate", update);
    };
  }, []);
  return route;
}

/** A link that changes the page without a reload (a plain link with a modifier key opens a new tab as usual). */
export function onLinkClick(e: MouseEvent): void {
  const a = (e.target as HTMLElement).closest("a");
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(BASE) || a.target || a.hasAttribute("download"))
    return;
  e.preventDefault();
  navigate(url.pathname + url.search);
}
