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
