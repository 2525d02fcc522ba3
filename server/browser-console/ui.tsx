// Small pieces every page uses: an error in words next to what caused it, a copy button, code blocks, empty states,
// a confirmation dialog and time formatting. Text is always rendered as text (Preact escapes it); nothing here sets
// HTML.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export function ErrorText({ error, id }: { error: unknown; id?: string }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <p class="error" role="alert" id={id}>
      {message}
    </p>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState<"" | "copied" | "failed">("");
  return (
    <button
      type="button"
      class="secondary"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone("copied");
        } catch {
          setDone("failed");
        }
        setTimeout(() => setDone(""), 2000);
      }}
    >
      {done === "copied" ? "Copied" : done === "failed" ? "Select and copy" : label}
    </button>
  );
}

export function Code({ text, label }: { text: string; label: string }) {
  return (
    <div class="code">
      <pre aria-label={label} tabIndex={0}>
        <code>{text}</code>
      </pre>
      <CopyButton text={text} label={`Copy ${label}`} />
    </div>
  );
}

/** A labelled number input whose text is kept as typed (the caller parses it when the form is sent). */
export function NumberField(p: {
  label: string;
  value: string;
  onValue: (value: string) => void;
  min: number;
  max: number;
  step?: number;
  required?: boolean;
}) {
  return (
    <label>
      {p.label}
      <input
        type="number"
        min={p.min}
        max={p.max}
        step={p.step}
        required={p.required}
        value={p.value}
        onInput={(e) => p.onValue((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}

export function Empty({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="empty" aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

/** A button that asks first, in a modal dialog, and shows the action's error there. */
export function ConfirmButton(p: {
  label: string;
  title: string;
  message: ComponentChildren;
  confirm: string;
  onConfirm: () => Promise<void>;
  danger?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    if (open && dialog.current && !dialog.current.open) dialog.current.showModal();
  }, [open]);
  const close = () => {
    dialog.current?.close();
    setOpen(false);
    setError(undefined);
  };
  return (
    <>
      <button type="button" class={p.danger ? "danger" : "secondary"} onClick={() => setOpen(true)}>
        {p.label}
      </button>
      {open && (
        <dialog ref={dialog} aria-labelledby="confirm-title" onClose={() => setOpen(false)}>
          <h2 id="confirm-title">{p.title}</h2>
          <p>{p.message}</p>
          <ErrorText error={error} />
          <div class="actions">
            <button
              type="button"
              class={p.danger ? "danger" : ""}
              disabled={busy}
              onClick={async () => {
                setBusy(true);
                setError(undefined);
                try {
                  await p.onConfirm();
                  close();
                } catch (e) {
                  setError(e);
                } finally {
                  setBusy(false);
                }
              }}
            >
              {busy ? "Working…" : p.confirm}
            </button>
            <button type="button" class="secondary" onClick={close}>
              Cancel
            </button>
          </div>
        </dialog>
      )}
    </>
  );
}

export function ago(iso: string | undefined, now = Date.now()): string {
  if (!iso) return "never";
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 0) return `in ${duration(-s)}`;
  if (s < 5) return "just now";
  return `${duration(s)} ago`;
}

function duration(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86_400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

export const dateTime = (iso: string | undefined): string => (iso ? new Date(iso).toLocaleString() : "—");

/** Calls `fn` now and every `ms` while the component is shown (and the tab visible). */
export function usePoll(fn: (signal: AbortSignal) => Promise<void>, ms: number, deps: unknown[]): void {
  useEffect(() => {
    const ctl = new AbortController();
    let timer: number | undefined;
    const tick = async () => {
      if (document.visibilityState !== "hidden") await fn(ctl.signal).catch(() => undefined);
      if (!ctl.signal.aborted) timer = window.setTimeout(tick, ms);
    };
    void tick();
    return () => {
      ctl.abort();
      clearTimeout(timer);
    };
  }, deps);
}
