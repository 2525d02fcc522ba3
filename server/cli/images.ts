// Image paths written inside a prompt ("what is in ./cat.jpg?") are attached as images, as Ollama's CLI does.
// Pure apart from the injected `exists` check.
import path from "node:path";

export const IMAGE_EXTENSIONS = [".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp"] as const;

export const isImagePath = (p: string): boolean =>
  IMAGE_EXTENSIONS.includes(path.extname(p).toLowerCase() as (typeof IMAGE_EXTENSIONS)[number]);

/** A path token: absolute, ./, ../ or ~/, optionally quoted; backslash-escaped spaces allowed ("my\ cat.png"). */
const PATH_TOKEN = /(['"])((?:~|\.{1,2})?\/[^'"]+?)\1|((?:~|\.{1,2})?\/(?:\\ |\S)+)/g;

export interface ExtractedImages {
  /** The prompt with the attached paths removed and whitespace tidied. */
  prompt: string;
  /** Paths as written, with ~ and escapes resolved by `resolve`. */
  paths: string[];
  /** Image paths (by their extension) that name no file: left in the prompt, for the caller to report. */
  missing: string[];
}

/**
 * Finds existing image files named in a prompt. `resolve` turns a written path into a real one (~, relative to cwd);
 * `exists` says whether it is a file. Paths that do not exist stay in the prompt as text and are listed as missing.
 */
export function extractImagePaths(
  prompt: string,
  resolve: (p: string) => string,
  exists: (p: string) => boolean,
): ExtractedImages {
  const paths: string[] = [];
  const missing: string[] = [];
  const rest = prompt.replace(
    PATH_TOKEN,
    (whole, _q: string | undefined, quoted: string | undefined, bare: string | undefined) => {
      const written = quoted ?? (bare ?? "").replace(/[.,;:!?)]+$/, "");
      const trailing = quoted === undefined ? (bare ?? "").slice(written.length) : "";
      const unescaped = written.replace(/\\ /g, " ");
      if (!isImagePath(unescaped)) return whole;
      const real = resolve(unescaped);
      if (!exists(real)) {
        missing.push(unescaped);
        return whole;
      }
      paths.push(real);
      return trailing;
    },
  );
  return { prompt: rest.replace(/[ \t]{2,}/g, " ").trim(), paths, missing };
}
