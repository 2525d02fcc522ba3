// A gateway process with the queue on, for tests that kill it (kill -9) and the queue benchmark: one public app
// `local/echo` at POD_URL, the broker at REDIS_URL, listening on PORT, CONCURRENCY queued requests at once (default 8);
// prints "ready" once it serves.
import { endpointAt, MemoryKeys, StaticApps } from "../../server/gateway/memory.ts";
import { startQueueGateway } from "./queue.ts";

const apps = new StaticApps();
apps.set({ org: "local", name: "echo", auth: "public", uid: "1" }, [endpointAt(process.env.POD_URL!)]);
const queue = {
  redisUrl: process.env.REDIS_URL!,
  concurrencyPerReplica: Number(process.env.CONCURRENCY ?? 8),
  stalledSeconds: 1,
  webhooks: { allowPrivateAddresses: true, backoffMs: 20 },
};
await startQueueGateway(apps, new MemoryKeys(), { queue }, undefined, Number(process.env.PORT));
process.stdout.write("ready\n");
