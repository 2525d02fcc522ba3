// Worker thread of file-hasher.ts: hashes a file front to back as far as it is told the file is written.
import { createHash } from "node:crypto";
import fs from "node:fs";
import { parentPort, workerData } from "node:worker_threads";

const { file } = workerData as { file: string };
const fd = fs.openSync(file, "r");
const hash = createHash("sha256");
const buf = Buffer.allocUnsafe(4 << 20);
let pos = 0;

parentPort!.on("message", (m: { upTo: number; finish?: boolean }) => {
  try {
    while (pos < m.upTo) {
      const n = fs.readSync(fd, buf, 0, Math.min(buf.length, m.upTo - pos), pos);
      if (n <= 0) throw new Error(`${file} ends at ${pos}, expected ${m.upTo} bytes`);
      hash.update(buf.subarray(0, n));
      pos += n;
    }
    if (m.finish) {
      fs.closeSync(fd);
      parentPort!.postMessage({ sha256: hash.digest("hex") });
    }
  } catch (e) {
    parentPort!.postMessage({ error: (e as Error).message });
  }
});
