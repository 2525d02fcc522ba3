// The chart's broker image where no registry serves valkey/valkey (this project's machines): a Debian root
// filesystem with Debian's redis-server package (mmdebstrap, as the offline Node base is made: decision 0013) and
// redis-server as its entrypoint, which is all the chart's broker StatefulSet runs (its args and `redis-cli ping`).
// The root filesystem is cached in $GANTRY_CACHE/image-base, the image in the engine's storage.
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { gantryCache } from "../cluster/control-plane.ts";
import { engineRun, type ContainerImage } from "./container-image.ts";

const run = promisify(execFile);
export const BROKER_IMAGE = "localhost/gantry-test/redis:bookworm";

/** Makes BROKER_IMAGE with the engine that built the Gantry image, unless it is there; returns its name. */
export async function brokerImage(img: ContainerImage): Promise<string> {
  const present = await engineRun(img, ["image", "inspect", BROKER_IMAGE]).then(
    () => true,
    () => false,
  );
  if (present) return BROKER_IMAGE;
  const dir = path.join(gantryCache(), "image-base");
  const tar = path.join(dir, "debian-bookworm-redis.tar");
  if (!fs.existsSync(tar)) {
    fs.mkdirSync(dir, { recursive: true });
    await run(
      "mmdebstrap",
      ["--quiet", "--format=tar", "--variant=minbase", "--include=redis-server", "bookworm", `${tar}.tmp`],
      {
        maxBuffer: 16 << 20,
      },
    );
    fs.renameSync(`${tar}.tmp`, tar);
  }
  await engineRun(img, ["import", "--change", 'ENTRYPOINT ["redis-server"]', tar, BROKER_IMAGE]);
  return BROKER_IMAGE;
}
