// The batch-item → sequence mapping DecodeSync orders batches by relies on a node-llama-cpp internal (queued decodes
// share the item's tokens array): checked here against the real library, so an upgrade that changes it shows up.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fairShare } from "../../../server/engine/decode-sync.ts";
import { llamaRuntime } from "../../../server/engine/llama-runtime.ts";
import { queuedSequenceId } from "../../../server/engine/loaded-model.ts";
import { silentLogger } from "../../../server/common/logger.ts";
import { tinyModelPath } from "../../support/models.ts";

test("every batch item maps to the sequence that queued it", async () => {
  const { llama } = await llamaRuntime(2, silentLogger);
  const model = await llama.loadModel({ modelPath: await tinyModelPath({ controlLogit: -8 }) });
  try {
    const seen: Array<number | undefined> = [];
    let idOf: ReturnType<typeof queuedSequenceId> = () => undefined;
    const context = await model.createContext({
      contextSize: 128, sequences: 3, threads: 2,
      batching: { itemPrioritizationStrategy: ({ items, size }) => { seen.push(...items.map((i) => idOf(i))); return fairShare(items, size); } },
    });
    idOf = queuedSequenceId(context);
    const sequences = [context.getSequence(), context.getSequence(), context.getSequence()];
    await Promise.all(sequences.map(async (seq, i) => {
      const it = seq.evaluate(model.tokenize(`hello ${i}`, true), { temperature: 0 });
      for (let k = 0; k < 3; k++) await it.next();
      await it.return(undefined);
    }));
    assert.ok(seen.length >= 9);
    assert.deepEqual([...new Set(seen)].sort(), [0, 1, 2], "the three sequences, never undefined");
    await context.dispose();
  } finally {
    await model.dispose();
  }
});
