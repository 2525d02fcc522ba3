import assert from "node:assert/strict";
import { test } from "node:test";
import { expectPositionals, parseArgs, UsageError } from "../../../server/cli/args.ts";

test("flags and positionals, with short aliases", () => {
  const r = parseArgs("create", ["mymodel", "-f", "./Modelfile"], { file: { type: "string", short: "f" } });
  assert.deepEqual(r.positionals, ["mymodel"]);
  assert.equal(r.flags.file, "./Modelfile");
  const s = parseArgs("show", ["m", "--modelfile"], { modelfile: { type: "boolean" } });
  assert.equal(s.flags.modelfile, true);
});

test("prompt words after the model stay positionals, in order", () => {
  const r = parseArgs("run", ["tiny", "why", "is", "the", "sky", "blue?", "--verbose"], {
    verbose: { type: "boolean" },
  });
  assert.deepEqual(r.positionals, ["tiny", "why", "is", "the", "sky", "blue?"]);
  assert.equal(r.flags.verbose, true);
});

test("unknown flags and missing values are one-line usage errors naming the command", () => {
  assert.throws(
    () => parseArgs("show", ["m", "--nope"], {}),
    (e: unknown) => e instanceof UsageError && e.message === "show: Unknown option '--nope'",
  );
  assert.throws(
    () => parseArgs("create", ["m", "-f"], { file: { type: "string", short: "f" } }),
    (e: unknown) =>
      e instanceof UsageError &&
      e.message.startsWith("create: ") &&
      e.message.includes("-f") &&
      !e.message.includes("\n"),
  );
});

test("a flag without its value says so, whether it ends the line or another flag follows", () => {
  const flags = {
    auth: { type: "string" },
    "app-name": { type: "string" },
    file: { type: "string", short: "f" },
  } as const;
  const message = (argv: string[]) => {
    try {
      parseArgs("deploy", argv, flags);
    } catch (e) {
      assert.ok(e instanceof UsageError);
      return e.message;
    }
    assert.fail("accepted");
  };
  assert.equal(message(["app.ts::chat", "--auth"]), "deploy: flag --auth needs a value");
  assert.equal(message(["-f"]), "deploy: flag --file needs a value");
  assert.equal(
    message(["app.ts::chat", "--auth", "--app-name", "x"]),
    "deploy: flag --auth needs a value (one that starts with a dash is written --auth=-value)",
  );
  assert.equal(parseArgs("deploy", ["--auth=-x"], flags).flags.auth, "-x");
});

test("expectPositionals reports what is missing or extra", () => {
  assert.deepEqual(expectPositionals(["a", "b"], ["source", "destination"], "gantry cp <s> <d>"), ["a", "b"]);
  assert.throws(
    () => expectPositionals(["a"], ["source", "destination"], "gantry cp <s> <d>"),
    /missing destination \(usage: gantry cp <s> <d>\)/,
  );
  assert.throws(() => expectPositionals([], ["source", "destination"], "u"), /missing source and destination/);
  assert.throws(() => expectPositionals(["a", "b", "c"], ["source", "destination"], "u"), /unexpected argument "c"/);
});
