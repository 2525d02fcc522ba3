// nginx (the Debian package) as a plain reverse proxy in front of the same upstream, for comparison: one worker (the
// gateway is one Node process), keep-alive connections to the upstream, no buffering, the prefix stripped, and the
// equivalent of the gateway's key check: the Authorization header compared with the key (a static string compare;
// the gateway verifies a salted hash, cached). Config and logs in a temp dir; loopback only.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

function findNginx(): string | undefined {
  for (const p of ["/usr/sbin/nginx", "/usr/bin/nginx"]) if (fs.existsSync(p)) return p;
  const r = spawnSync("sh", ["-c", "command -v nginx"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/**
 * The nginx binary, installed from Debian's packages when missing and this process may (root with apt-get), so the
 * comparison runs on a fresh machine too; undefined (the rows say so) where it cannot be had.
 */
export function nginxBinary(): string | undefined {
  const found = findNginx();
  if (found || process.getuid?.() !== 0 || spawnSync("sh", ["-c", "command -v apt-get"]).status !== 0) return found;
  console.error("bench: installing nginx (Debian package) for the comparison");
  const install = "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx";
  const out = { stdio: ["ignore", "ignore", "inherit"] as ["ignore", "ignore", "inherit"] };
  if (spawnSync("sh", ["-c", install], out).status !== 0)
    spawnSync("sh", ["-c", `apt-get update -q && ${install}`], out);
  return findNginx();
}

export async function startNginx(
  bin: string,
  port: number,
  upstreamPort: number,
  key: string,
): Promise<{ pid: number; stop(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-bench-nginx-"));
  const conf = path.join(dir, "nginx.conf");
  fs.writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log /dev/null;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream app { server 127.0.0.1:${upstreamPort}; keepalive 128; }
  server {
    listen 127.0.0.1:${port};
    location /acme/chat/ {
      if ($http_authorization != "Key ${key}") { return 401; }
      proxy_pass http://app/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "";
      proxy_buffering off;
    }
  }
}
`,
  );
  const proc: ChildProcess = spawn(bin, ["-c", conf, "-p", dir], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) throw new Error(`nginx exited: ${err}`);
    const ok = await fetch(`http://127.0.0.1:${port}/acme/chat/api/version`, {
      headers: { authorization: `Key ${key}` },
    }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid: proc.pid!,
    stop: async () => {
      proc.kill("SIGTERM");
      await new Promise((r) => proc.once("exit", r));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
