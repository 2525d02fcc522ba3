// `gantry keys create|list|revoke --org <org>`: API keys of an org, managed from the kubeconfig like kubectl (the
// Secrets are written and deleted directly; the secret is hashed here and printed once).
import { parseArgs, stringFlag, UsageError } from "../args.ts";
import type { Command } from "../context.ts";
import { formatTable } from "../format.ts";

const USAGE = "gantry keys create|list|revoke [<key_id>] --org <org>";
const FLAGS =
  "[--scope api|admin] [--name N] [--expires 30d|<RFC 3339 time>] [--output json] [--kubeconfig <file>] [--context <name>]";

export const keysCommand: Command = {
  name: "keys",
  usage: USAGE,
  group: "platform",
  summary: "Create, list and revoke an org's API keys (from the kubeconfig)",
  details: () =>
    `Flags: ${FLAGS}\n` +
    "  create   a new key; prints <key_id>:<key_secret> once (the cluster keeps only a hash)\n" +
    "  list     the org's keys, without secrets\n" +
    "  revoke   deletes a key: it stops working on every gateway within a second\n" +
    "Scopes: api calls the org's apps; admin also manages the org through the gateway's management API.\n" +
    "Uses --kubeconfig, else KUBECONFIG, ~/.kube/config or the in-cluster service account; --context, else the current.\n",
  async run(args, ctx) {
    const { positionals, flags } = parseArgs("keys", args, {
      org: { type: "string" },
      scope: { type: "string" },
      name: { type: "string" },
      expires: { type: "string" },
      output: { type: "string", short: "o" },
      kubeconfig: { type: "string" },
      context: { type: "string" },
    });
    const [action, ...rest] = positionals;
    const org = stringFlag(flags.org);
    if (!action || !["create", "list", "revoke"].includes(action))
      throw new UsageError(`keys: say create, list or revoke (usage: ${USAGE} ${FLAGS})`);
    if (!org) throw new UsageError(`keys ${action}: --org is required (usage: ${USAGE} ${FLAGS})`);
    const output = stringFlag(flags.output);
    if (output !== undefined && output !== "json") throw new UsageError(`keys: --output takes only json`);
    const json = output === "json";
    if (action !== "revoke" && rest.length > 0)
      throw new UsageError(`keys ${action}: unexpected argument "${rest[0]}"`);
    if (action !== "create" && (flags.scope !== undefined || flags.name !== undefined || flags.expires !== undefined))
      throw new UsageError(`keys ${action}: --scope, --name and --expires are for create`);

    // client-node is slow to load: only here.
    const { CoreV1Api } = await import("@kubernetes/client-node");
    const { loadCliConfig } = await import("../../platform/cli-config.ts");
    const { connect, kubeErrorMessage, PlatformError } = await import("../../platform/kube-target.ts");
    const { createKeySecret, listKeySecrets, revokeKeySecret } = await import("../../gateway/kube/key-admin.ts");
    const { KEY_SCOPES, NewKeyNameSchema, parseExpiry } = await import("../../gateway/2-authenticate/api-keys.ts");
    const { isDnsLabel } = await import("../../common/kube-names.ts");
    const { keyInfo } = await import("../../gateway/management/management-api.ts");
    if (!isDnsLabel(org)) throw new UsageError(`keys: "${org}" is not a valid org (a namespace name)`);
    // The cluster as kubectl picks it (--kubeconfig, KUBECONFIG, ~/.kube/config, in-cluster; --context), and the API
    // server's errors as one sentence (an org that does not exist, a cluster that cannot be reached).
    const target = connect(
      { kubeconfig: stringFlag(flags.kubeconfig), context: stringFlag(flags.context), org },
      loadCliConfig(ctx.config),
      ctx.config,
    );
    const core = target.kc.makeApiClient(CoreV1Api);
    const api = <T>(p: Promise<T>): Promise<T> =>
      p.catch((e: unknown) => {
        // The client's errors: an answer (a numeric code) or no connection (a cause); ours pass unchanged.
        const c = e as { code?: unknown; cause?: unknown } | undefined;
        if (typeof c?.code !== "number" && c?.cause === undefined) throw e;
        throw new PlatformError(kubeErrorMessage(e, target, `keys ${action}`));
      });
    const out = (text: string) => ctx.stdout.write(text);

    if (action === "create") {
      const scope = stringFlag(flags.scope) ?? "api";
      if (!(KEY_SCOPES as readonly string[]).includes(scope))
        throw new UsageError(`keys create: --scope is api or admin, not "${scope}"`);
      const expiresFlag = stringFlag(flags.expires);
      const now = new Date();
      const expires = expiresFlag === undefined ? undefined : parseExpiry(expiresFlag, now);
      const name = stringFlag(flags.name);
      const nameIssue = name === undefined ? undefined : NewKeyNameSchema.safeParse(name).error?.issues[0];
      if (nameIssue) throw new UsageError(`keys create: --name ${nameIssue.message}`);
      const { record, key } = await api(
        createKeySecret(core, org, {
          scope: scope as "api" | "admin",
          now,
          ...(name !== undefined ? { name } : {}),
          ...(expires ? { expires } : {}),
        }),
      );
      if (json) out(`${JSON.stringify({ ...keyInfo(record, now.getTime()), key })}\n`);
      else {
        out(`${key}\n`);
        ctx.say(
          `Created ${record.scope} key ${record.id} for org ${org}${record.expires ? `, expires ${record.expires}` : ""}. ` +
            "This is the only time the key is shown: store it now.",
        );
      }
      return;
    }
    if (action === "list") {
      const now = Date.now();
      const keys = (await api(listKeySecrets(core, org))).map((k) => keyInfo(k, now));
      if (json) out(`${JSON.stringify({ keys })}\n`);
      else
        out(
          formatTable(
            ["ID", "SCOPE", "NAME", "CREATED", "EXPIRES"],
            keys.map((k) => [
              k.id,
              k.scope,
              k.name || "-",
              k.created,
              k.expired ? `${k.expires} (expired)` : (k.expires ?? "never"),
            ]),
          ),
        );
      return;
    }
    if (rest.length !== 1) throw new UsageError(`keys revoke: name one key id (usage: ${USAGE} ${FLAGS})`);
    const id = rest[0]!;
    if (!(await api(revokeKeySecret(core, org, id)))) throw new Error(`org ${org} has no key ${id}`);
    if (json) out(`${JSON.stringify({ id, org, revoked: true })}\n`);
    else ctx.say(`Revoked key ${id} of org ${org}.`);
  },
};
