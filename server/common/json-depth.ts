// How deeply a parsed JSON value nests, measured without recursion (a body of 20,000 nested objects parses fine but
// overflows the stack of any recursive walk: schema checks, grammar compilers, JSON.stringify). Pure.

/** Whether `value` nests objects and arrays more than `limit` levels deep (a scalar is depth 0, `{}` depth 1). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * Whether JSON text nests objects and arrays more than `limit` levels deep, read before parsing it: V8 parses a deeply
 * nested value hundreds of times slower per byte than a flat one (docs/decisions/0008), so a body is measured first.
 * Text with no more opening brackets than the limit is not scanned at all (the common request). Pure.
 */
export function textNestsDeeperThan(b: Buffer, limit: number): boolean {
  let opens = 0;
  for (const c of [0x5b, 0x7b]) for (let i = b.indexOf(c); i >= 0 && opens <= limit; i = b.indexOf(c, i + 1)) opens++;
  if (opens <= limit) return false;
  let depth = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c === 0x22) {
      for (i++; i < b.length && b[i] !== 0x22; i++) if (b[i] === 0x5c) i++; // a string: skipped, escapes too
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
