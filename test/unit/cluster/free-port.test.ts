import assert from "node:assert/strict";
import net from "node:net";
import test from "node:test";
import { ephemeralPortRange, freePort } from "../../cluster/processes.ts";

test("freePort gives a listenable port below the ephemeral range, where no outgoing connection can take it", async () => {
  const [low] = ephemeralPortRange();
  const ports = await Promise.all(Array.from({ length: 5 }, () => freePort()));
  for (const port of ports) {
    assert.ok(port >= 10_000 && port < low, `${port} is below the ephemeral range's ${low}`);
    const srv = net.createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(port, "127.0.0.1", () => resolve());
    });
    await new Promise((resolve) => srv.close(resolve));
  }
});
