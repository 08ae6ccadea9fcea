import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What a built ESM file loads before its first line runs: the files it reaches through static `import` and `export
 * … from` (its chunks, followed), and the bare specifiers (packages) any of them names. Dynamic `import()` is not
 * followed: it is what a file loads later, when asked.
 */
export function staticImports(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const [, from] of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\b[^;'"]*?(?:from\s*)?["']([^"']+)["'];?$/gm)) {
      if (from?.startsWith('.')) visit(join(file, '..', from));
      else packages.add(from as string);
    }
  };
  visit(entry);
  return { files, packages };
}
