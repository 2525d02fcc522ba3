// Graceful shutdown on SIGTERM/SIGINT, shared by every long-running gantry process (serve, operator, gateway).
import type { Logger } from "./logger.ts";

/**
 * Runs `close` once on the first SIGTERM or SIGINT, then exits 0 (1 if closing failed). A repeated SIGTERM
 * (kubelets and supervisors resend it) never cuts the graceful shutdown short; a second Ctrl-C exits at once.
 */
export function exitOnShutdownSignals(close: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      if (signal === "SIGINT") process.exit(130);
      logger.info({ signal }, "already shutting down");
      return;
    }
    stopping = true;
    logger.info({ signal }, "received signal, shutting down");
    close().then(
      () => process.exit(0),
      (e: unknown) => {
        logger.error({ err: e }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}
