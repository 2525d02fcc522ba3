// `npm run build` part two: the console's browser code (server/browser-console, Preact + uPlot) bundled by esbuild into
// dist/console: content-hashed JS, CSS and icon under assets/ (cached for a year by the gateway), index.html naming
// them (no inline script: the CSP forbids it), each compressible file also as .br and .gz (the gateway sends the
// encoding the browser prefers, compressed once here instead of per request), and manifest.json listing them.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { packageRoot } from "../common/package-files.ts";

const COMPRESSIBLE = /\.(js|css|html|svg|json)$/;

export async function buildConsole(
  root = packageRoot(),
  out = path.join(root, "dist", "console"),
): Promise<{ files: number; bytes: number; seconds: number }> {
  const started = performance.now();
  const src = path.join(root, "server", "browser-console");
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(path.join(out, "assets"), { recursive: true });
  const esbuild = await import("esbuild"); // a dev dependency: loaded only when building
  const result = await esbuild.build({
    entryPoints: [path.join(src, "main.tsx")],
    bundle: true,
    format: "esm",
    splitting: false,
    minify: true,
    target: ["es2022", "chrome110", "firefox110", "safari16"],
    jsx: "automatic",
    jsxImportSource: "preact",
    outdir: out,
    entryNames: "assets/[name]-[hash]",
    assetNames: "assets/[name]-[hash]",
    legalComments: "eof",
    metafile: true,
    write: false,
    logLevel: "warning",
    define: { "process.env.NODE_ENV": '"production"' },
    absWorkingDir: root,
  });
  const written: string[] = [];
  const write = (rel: string, body: Buffer | string) => {
    fs.writeFileSync(path.join(out, rel), body);
    written.push(rel);
  };
  let js = "",
    css = "";
  for (const f of result.outputFiles) {
    const rel = path.relative(out, f.path).split(path.sep).join("/");
    if (rel.endsWith(".js")) js = rel;
    if (rel.endsWith(".css")) css = rel;
    write(rel, Buffer.from(f.contents));
  }
  if (!js || !css) throw new Error("the console build produced no JS or no CSS");
  const iconBody = fs.readFileSync(path.join(src, "icon.svg"));
  const icon = `assets/icon-${hash(iconBody).slice(0, 8)}.svg`;
  write(icon, iconBody);
  const base = "/_gantry/console/";
  const html = fs
    .readFileSync(path.join(src, "index.html"), "utf8")
    .replace("%ICON%", base + icon)
    .replace("%CSS%", base + css)
    .replace("%JS%", base + js);
  write("index.html", html);
  const files = written.map((rel) => {
    const body = fs.readFileSync(path.join(out, rel));
    const encodings: string[] = [];
    if (COMPRESSIBLE.test(rel) && body.length > 256) {
      fs.writeFileSync(
        path.join(out, `${rel}.br`),
        zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }),
      );
      fs.writeFileSync(path.join(out, `${rel}.gz`), zlib.gzipSync(body, { level: 9 }));
      encodings.push("br", "gzip");
    }
    return { path: rel, etag: `"${hash(body).slice(0, 16)}"`, hashed: rel.startsWith("assets/"), encodings };
  });
  fs.writeFileSync(path.join(out, "manifest.json"), `${JSON.stringify({ files }, null, 2)}\n`);
  const bytes = files.reduce((n, f) => n + fs.statSync(path.join(out, f.path)).size, 0);
  return { files: files.length, bytes, seconds: (performance.now() - started) / 1000 };
}

const hash = (b: Buffer) => crypto.createHash("sha256").update(b).digest("hex");

if (import.meta.main) {
  const r = await buildConsole();
  process.stderr.write(`built dist/console (${r.files} files, ${r.bytes} bytes) in ${r.seconds.toFixed(1)} s\n`);
}
