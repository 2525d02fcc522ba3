// What the machine the GPU check runs on has: cores, memory, the GPU (nvidia-smi), CUDA's compiler and the build tools;
// and the environment a CUDA build and the servers need there (CUDACXX, CUDA's libraries on LD_LIBRARY_PATH).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { run, which } from "../../server/setup/llama-source.ts";

export interface Gpu {
  name: string;
  /** "9.0" */
  computeCap: string;
  memoryMiB: number;
  driver: string;
}

export interface Machine {
  cores: number;
  memoryGiB: number;
  load: number;
  gpus: Gpu[];
  /** nvcc's path, when there is one. */
  nvcc?: string;
  /** One line per tool: its version, or "missing". */
  tools: Record<string, string>;
}

/** nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader,nounits. */
export function parseGpus(csv: string): Gpu[] {
  return csv
    .split("\n")
    .map((l) => l.split(",").map((c) => c.trim()))
    .filter((c) => c.length >= 4 && /^\d+\.\d+$/.test(c[1]!))
    .map(([name, computeCap, memory, driver]) => ({
      name: name!,
      computeCap: computeCap!,
      memoryMiB: Number(memory),
      driver: driver!,
    }));
}

/** CMAKE_CUDA_ARCHITECTURES for these GPUs' compute capabilities: "9.0" → "90" (each once). */
export function cudaArchitectures(gpus: Gpu[]): string {
  return [...new Set(gpus.map((g) => g.computeCap.replace(".", "")))].join(";");
}

const firstLine = async (cmd: string, args: string[]): Promise<string> => {
  try {
    return (await run(cmd, args, { capture: true })).trim().split("\n")[0] ?? "";
  } catch {
    return "missing";
  }
};

/** nvcc on PATH, else CUDA's usual install folders (/usr/local/cuda, the newest /usr/local/cuda-*). */
export function findNvcc(searchPath: string): string | undefined {
  const onPath = which(searchPath, "nvcc");
  if (onPath) return onPath;
  const local = "/usr/local";
  const dirs = fs.existsSync(local)
    ? fs
        .readdirSync(local)
        .filter((d) => /^cuda(-[\d.]+)?$/.test(d))
        .sort()
        .reverse()
    : [];
  return dirs.map((d) => path.join(local, d, "bin", "nvcc")).find((p) => fs.existsSync(p));
}

export async function inspectMachine(searchPath: string): Promise<Machine> {
  let gpus: Gpu[] = [];
  try {
    gpus = parseGpus(
      await run(
        "nvidia-smi",
        ["--query-gpu=name,compute_cap,memory.total,driver_version", "--format=csv,noheader,nounits"],
        { capture: true },
      ),
    );
  } catch {
    // no NVIDIA GPU or driver
  }
  const nvcc = findNvcc(searchPath);
  const tools: Record<string, string> = {
    nvcc: nvcc ? ((await run(nvcc, ["--version"], { capture: true })).trim().split("\n").at(-1) ?? "") : "missing",
    cmake: await firstLine("cmake", ["--version"]),
    ninja: which(searchPath, "ninja") ? await firstLine("ninja", ["--version"]) : "missing",
    "c++": await firstLine("c++", ["--version"]),
    git: which(searchPath, "git") ? "present" : "missing",
    patch: which(searchPath, "patch") ? "present" : "missing",
    xz: which(searchPath, "xz") ? "present" : "missing",
  };
  return {
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    load: os.loadavg()[0]!,
    gpus,
    ...(nvcc ? { nvcc } : {}),
    tools,
  };
}

/**
 * The variables a CUDA build and CUDA programs need: CUDACXX (CMake's CUDA compiler) and CUDA's library folders on
 * LD_LIBRARY_PATH (libcudart, libcublas), after what is there already.
 */
export function cudaEnvironment(nvcc: string, ldLibraryPath: string | undefined): Record<string, string> {
  const root = path.dirname(path.dirname(nvcc));
  const libs = [path.join(root, "lib64"), path.join(root, "targets", "x86_64-linux", "lib")].filter((d) =>
    fs.existsSync(d),
  );
  const ld = [...(ldLibraryPath ? ldLibraryPath.split(":") : []), ...libs].filter((d, i, a) => d && a.indexOf(d) === i);
  return { CUDACXX: nvcc, CUDA_HOME: root, LD_LIBRARY_PATH: ld.join(":") };
}

export function describeMachine(m: Machine): string[] {
  return [
    `${m.cores} cores, ${m.memoryGiB} GiB memory, load ${m.load.toFixed(2)}`,
    m.gpus.length
      ? m.gpus.map((g) => `GPU: ${g.name}, compute ${g.computeCap}, ${g.memoryMiB} MiB, driver ${g.driver}`).join("; ")
      : "GPU: none (nvidia-smi found none)",
    `tools: ${Object.entries(m.tools)
      .map(([k, v]) => `${k} ${v}`)
      .join("; ")}`,
  ];
}
