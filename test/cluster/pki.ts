// Certificates of a test control plane, generated with openssl: a throw-away CA, the apiserver serving cert, an admin
// client cert (group system:masters) and the service-account signing key pair.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export interface Pki {
  dir: string;
  caCrt: string;
  caKey: string;
  apiserverCrt: string;
  apiserverKey: string;
  adminCrt: string;
  adminKey: string;
  kubeletCrt: string;
  kubeletKey: string;
  saKey: string;
  saPub: string;
}

const openssl = (cwd: string, args: string[]): void => {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
};

function sign(dir: string, name: string, subject: string, extensions: string[]): void {
  openssl(dir, [
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    `${name}.key`,
    "-out",
    `${name}.csr`,
    "-subj",
    subject,
  ]);
  fs.writeFileSync(
    path.join(dir, `${name}.ext`),
    ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment", ...extensions].join("\n") +
      "\n",
  );
  openssl(dir, [
    "x509",
    "-req",
    "-in",
    `${name}.csr`,
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    `${name}.crt`,
    "-days",
    "365",
    "-extfile",
    `${name}.ext`,
  ]);
}

export function generatePki(dir: string, advertiseIp: string, serviceIp = "10.96.0.1"): Pki {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  openssl(dir, [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "3650",
    "-subj",
    "/CN=gantry-test-ca",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
  ]);
  const sans = [
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
    "IP:127.0.0.1",
    `IP:${serviceIp}`,
    `IP:${advertiseIp}`,
  ];
  sign(dir, "apiserver", "/CN=kube-apiserver", [
    "extendedKeyUsage=serverAuth",
    `subjectAltName=${[...new Set(sans)].join(",")}`,
  ]);
  sign(dir, "admin", "/O=system:masters/CN=kubernetes-admin", ["extendedKeyUsage=clientAuth"]);
  // Serving cert of the process runtime's kubelet log endpoint (the nodes' InternalIP is 127.0.0.1).
  sign(dir, "kubelet", "/CN=gantry-process-runtime", [
    "extendedKeyUsage=serverAuth",
    "subjectAltName=IP:127.0.0.1,DNS:localhost",
  ]);
  openssl(dir, ["genrsa", "-out", "sa.key", "2048"]);
  openssl(dir, ["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
  for (const f of fs.readdirSync(dir)) if (f.endsWith(".key")) fs.chmodSync(path.join(dir, f), 0o600);
  const p = (f: string): string => path.join(dir, f);
  return {
    dir,
    caCrt: p("ca.crt"),
    caKey: p("ca.key"),
    apiserverCrt: p("apiserver.crt"),
    apiserverKey: p("apiserver.key"),
    adminCrt: p("admin.crt"),
    adminKey: p("admin.key"),
    kubeletCrt: p("kubelet.crt"),
    kubeletKey: p("kubelet.key"),
    saKey: p("sa.key"),
    saPub: p("sa.pub"),
  };
}

export function kubeconfigYaml(pki: Pki, apiUrl: string): string {
  const b64 = (f: string): string => fs.readFileSync(f).toString("base64");
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    "- name: gantry-test",
    "  cluster:",
    `    server: ${apiUrl}`,
    `    certificate-authority-data: ${b64(pki.caCrt)}`,
    "users:",
    "- name: kubernetes-admin",
    "  user:",
    `    client-certificate-data: ${b64(pki.adminCrt)}`,
    `    client-key-data: ${b64(pki.adminKey)}`,
    "contexts:",
    "- name: gantry-test",
    "  context: {cluster: gantry-test, user: kubernetes-admin, namespace: default}",
    "current-context: gantry-test",
    "",
  ].join("\n");
}
