// The model store must be writable by the serving process before it starts: a container's model volume owned by
// another user (a host directory owned by root, a volume made by an image with another uid) would otherwise fail
// only at the first pull, deep in a download. The error names the directory and this process's user, and the fix.
import fs from "node:fs/promises";
import path from "node:path";

export class ModelStoreNotWritableError extends Error {}

/** Creates `dir` if needed and checks that this process can create and remove a file in it. */
export async function assertWritableStore(dir: string): Promise<void> {
  const probe = path.join(dir, `.gantry-write-check-${process.pid}`);
  try {
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(probe, "");
    await fs.rm(probe, { force: true });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "error";
    if (!["EACCES", "EPERM", "EROFS"].includes(code)) throw e;
    const uid = process.getuid?.() ?? -1;
    const gid = process.getgid?.() ?? -1;
    throw new ModelStoreNotWritableError(
      `the model store ${dir} (GANTRY_MODELS) is not writable by this process, uid ${uid} gid ${gid} (${code}): ` +
        `make it writable by that user, e.g. chown -R ${uid}:${gid} on the directory or volume mounted there ` +
        `(the image runs as uid 65532; a named volume created by the image gets that owner)`,
    );
  }
}
