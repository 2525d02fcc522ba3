// A subset of Go's fmt.Sprintf for templates: verbs %v %s %d %q %t %f %e %g %x %X %c %%, flags "-", "0", "+",
// width and precision. Mismatches print Go's diagnostics (%!d(string=x)) instead of failing, as Go does.
import { formatNumber, formatValue, kindOf, utf8 } from "./values.ts";

const VERB_RE = /%([-+ 0#]*)(\d+)?(?:\.(\d+))?([a-zA-Z%])/g;

function pad(s: string, width: number | undefined, flags: string, numeric: boolean): string {
  if (width === undefined || s.length >= width) return s;
  if (flags.includes("-")) return s.padEnd(width);
  if (flags.includes("0") && numeric) {
    const sign = /^[+-]/.test(s) ? s[0]! : "";
    return sign + s.slice(sign.length).padStart(width - sign.length, "0");
  }
  return s.padStart(width);
}

const bad = (verb: string, arg: unknown) => `%!${verb}(${kindOf(arg)}=${formatValue(arg)})`;

function withSign(s: string, n: number, flags: string): string {
  return flags.includes("+") && n >= 0 ? `+${s}` : s;
}

function exponent(n: number, precision: number): string {
  return n.toExponential(precision).replace(/e([+-])(\d)$/, "e$10$2");
}

function formatOne(verb: string, flags: string, precision: number | undefined, arg: unknown): string {
  switch (verb) {
    case "v":
      return typeof arg === "number" ? withSign(formatNumber(arg), arg, flags) : formatValue(arg);
    case "s":
      if (typeof arg === "number" || typeof arg === "boolean") return bad(verb, arg);
      return precision === undefined ? formatValue(arg) : [...formatValue(arg)].slice(0, precision).join("");
    case "q":
      if (typeof arg === "string") return JSON.stringify(arg);
      if (typeof arg === "number" && Number.isInteger(arg)) return `'${String.fromCodePoint(arg)}'`;
      return bad(verb, arg);
    case "t":
      return typeof arg === "boolean" ? String(arg) : bad(verb, arg);
    case "d":
      return typeof arg === "number" && Number.isInteger(arg) ? withSign(String(arg), arg, flags) : bad(verb, arg);
    case "c":
      return typeof arg === "number" && Number.isInteger(arg) ? String.fromCodePoint(arg) : bad(verb, arg);
    case "f":
    case "F":
      return typeof arg === "number" ? withSign(arg.toFixed(precision ?? 6), arg, flags) : bad(verb, arg);
    case "e":
      return typeof arg === "number" ? withSign(exponent(arg, precision ?? 6), arg, flags) : bad(verb, arg);
    case "g":
      return typeof arg === "number"
        ? withSign(
            precision === undefined ? formatNumber(arg) : formatNumber(Number(arg.toPrecision(precision))),
            arg,
            flags,
          )
        : bad(verb, arg);
    case "x":
    case "X": {
      let s: string;
      if (typeof arg === "number" && Number.isInteger(arg)) s = (arg < 0 ? "-" : "") + Math.abs(arg).toString(16);
      else if (typeof arg === "string") s = [...utf8(arg)].map((b) => b.toString(16).padStart(2, "0")).join("");
      else return bad(verb, arg);
      return verb === "X" ? s.toUpperCase() : s;
    }
    default:
      return `%!${verb}(${kindOf(arg)}=${formatValue(arg)})`;
  }
}

export function sprintf(format: string, args: readonly unknown[]): string {
  let next = 0;
  const out = format.replace(
    VERB_RE,
    (_m, flags: string, width: string | undefined, precision: string | undefined, verb: string) => {
      if (verb === "%") return "%";
      if (next >= args.length) return `%!${verb}(MISSING)`;
      const arg = args[next++];
      const text = formatOne(verb, flags, precision === undefined ? undefined : Number(precision), arg);
      return pad(text, width === undefined ? undefined : Number(width), flags, typeof arg === "number");
    },
  );
  if (next < args.length) {
    const extra = args
      .slice(next)
      .map((a) => `${kindOf(a)}=${formatValue(a)}`)
      .join(", ");
    return `${out}%!(EXTRA ${extra})`;
  }
  return out;
}
