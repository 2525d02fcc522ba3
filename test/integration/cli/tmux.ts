// Drives an interactive program in a real pseudo-terminal through tmux (send-keys, capture-pane). Each session has a
// tmux server of its own (-L): a new session started while the last one's server is exiting fails "server exited
// unexpectedly" (seen when one test's session ended just before the next began).
import { execFileSync } from "node:child_process";

const tmux = (name: string, args: string[], opts: { encoding?: "utf8"; stdio?: "ignore" } = {}) =>
  execFileSync("tmux", ["-L", `gantry-${name}`, ...args], opts);

export class TmuxSession {
  readonly name: string;

  private constructor(name: string) {
    this.name = name;
  }

  /** Starts `command` (a shell command line) in a detached 200x50 session. */
  static start(name: string, command: string): TmuxSession {
    tmux(name, ["new-session", "-d", "-s", name, "-x", "200", "-y", "50", command]);
    return new TmuxSession(name);
  }

  /** Types text literally, then presses Enter unless told not to. */
  type(text: string, enter = true): void {
    tmux(this.name, ["send-keys", "-t", this.name, "-l", text]);
    if (enter) this.key("Enter");
  }

  key(key: string): void {
    tmux(this.name, ["send-keys", "-t", this.name, key]);
  }

  /** Everything on the screen and in the scrollback, wrapped lines joined. */
  screen(): string {
    return tmux(this.name, ["capture-pane", "-p", "-J", "-t", this.name, "-S", "-5000"], {
      encoding: "utf8",
    }) as string;
  }

  /** Waits until `check(screen)` holds; fails with the screen after `timeoutMs`. */
  async waitFor(what: string, check: (screen: string) => boolean, timeoutMs = 60_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = this.screen();
      if (check(s)) return s;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; screen:\n${s}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  kill(): void {
    try {
      tmux(this.name, ["kill-server"], { stdio: "ignore" });
    } catch {
      /* already gone */
    }
  }
}
