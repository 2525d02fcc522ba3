// Splits a generated GGUF into a real llama.cpp split set (`<prefix>-0000i-of-0000N.gguf`), as gguf-split does: the
// first file keeps all metadata, every file carries split.no / split.count / split.tensors.count and its share of
// the tensors.
import path from "node:path";
import { readGgufInfo, readTensorBytes } from "../../support/gguf/reader.ts";
import { kv, rowByteSize, type GgufMetadata } from "../../support/gguf/types.ts";
import { writeGguf, type TensorSpec } from "../../support/gguf/writer.ts";

export async function splitGguf(source: string, dir: string, prefix: string, count: number): Promise<string[]> {
  const info = readGgufInfo(source);
  const perFile = Math.ceil(info.tensors.length / count);
  const files: string[] = [];
  for (let i = 0; i < count; i++) {
    const split: GgufMetadata = {
      "split.no": kv.u16(i),
      "split.count": kv.u16(count),
      "split.tensors.count": kv.i32(info.tensors.length),
    };
    const tensors: TensorSpec[] = info.tensors.slice(i * perFile, (i + 1) * perFile).map((t) => {
      const bytes = readTensorBytes(source, info, t.name);
      return {
        name: t.name,
        dims: t.dims,
        type: t.type,
        fill: (out, chunk) => {
          const rowBytes = rowByteSize(t.type, chunk.rowLength);
          bytes.copy(out, 0, chunk.firstRow * rowBytes, (chunk.firstRow + chunk.rowCount) * rowBytes);
        },
      };
    });
    const file = path.join(
      dir,
      `${prefix}-${String(i + 1).padStart(5, "0")}-of-${String(count).padStart(5, "0")}.gguf`,
    );
    await writeGguf(file, i === 0 ? { ...info.metadata, ...split } : split, tensors);
    files.push(file);
  }
  return files;
}
