// The operator's API clients, all on one connection pool. client-node 2.0 gives every request a new undici Agent: a new
// TLS connection with its own TLS context, closed only once idle. At fleet scale that was most of the operator's memory
// (resident memory grew with the request count, never given back: docs/decisions/0017-operator-cost-per-app.md).
import {
  createConfiguration,
  ServerConfiguration,
  setHeaderMiddleware,
  type Configuration,
  type KubeConfig,
  type RequestContext,
  type SecurityAuthentication,
} from "@kubernetes/client-node";

type Dispatcher = ReturnType<RequestContext["getDispatcher"]>;

/**
 * The kubeconfig's authentication, with the first request's Agent kept for every later one. The TLS identity (CA,
 * client certificate) is the kubeconfig's as loaded; tokens are headers and stay fresh per request.
 */
export class PooledAuthentication implements SecurityAuthentication {
  private readonly kc: KubeConfig;
  private dispatcher: Dispatcher;

  constructor(kc: KubeConfig) {
    this.kc = kc;
  }

  getName(): string {
    return "kubeconfig authentication, one connection pool";
  }

  async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await this.kc.applySecurityAuthentication(context); // sets a new (unconnected, so cheap) Agent: replaced below
    this.dispatcher ??= context.getDispatcher();
    if (this.dispatcher) context.setDispatcher(this.dispatcher);
  }
}

/** Makes API clients like `kc.makeApiClient`, all sharing one connection pool. */
export function pooledApiClients(kc: KubeConfig): <T>(api: new (config: Configuration) => T) => T {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error("No active cluster!");
  const config = createConfiguration({
    baseServer: new ServerConfiguration(server, {}),
    authMethods: { default: new PooledAuthentication(kc) },
    middleware: [setHeaderMiddleware("User-Agent", "gantry-operator")],
  });
  return (api) => new api(config);
}
