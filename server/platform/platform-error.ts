// The error of a platform command that is not about the app file (exit code 1). Its own file: the CLI's commands
// import it at start, and kube-target.ts (which loads @kubernetes/client-node) must stay loaded on use only.

/** A failure of a platform command that is not about the app file (exit code 1). */
export class PlatformError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PlatformError";
  }
}
