// The gateway as the benchmark runs it: the same pipeline as `gantry gateway` (server/gateway/gateway.ts) with the
// in-process seams (memory.ts) instead of Kubernetes watches, so no cluster is needed: one private app whose pod is
// the upstream `gantry serve`, one key. JSON request logs at info level go to /dev/null (serialised and buffered, as
// in production).
//   node gateway-process.ts <port> <upstream origin>      prints the key on stdout once listening
import { bufferedDestination, createLogger } from "../../../server/common/logger.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { Gateway } from "../../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../../server/gateway/http-server.ts";
import { endpointAt, MemoryKeys, MemoryUsage, StaticApps } from "../../../server/gateway/memory.ts";
import { reportCpuOnRequest } from "./cpu-report.ts";

const [port, upstream] = process.argv.slice(2) as [string, string];
const apps = new StaticApps(),
  keys = new MemoryKeys();
apps.set({ org: "acme", name: "chat", auth: "private", uid: "bench" }, [endpointAt(upstream)]);
const { key } = await keys.create("acme", { scope: "api" });
const logger = createLogger({ level: "info", name: "gantry-gateway", destination: bufferedDestination("/dev/null") });
const config = parseGatewayConfig({ limits: { requestsPerSecond: 0, burst: 1, concurrent: 0 } });
const gateway = new Gateway({
  config,
  apps,
  keys,
  usage: new MemoryUsage(),
  logger,
});
const server = createGatewayServer(config, gateway.handle);
reportCpuOnRequest();
server.listen(Number(port), "127.0.0.1", () => console.log(key));
process.on("SIGTERM", () => process.exit(0));
process.on("SIGINT", () => process.exit(0));
