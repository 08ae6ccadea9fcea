#!/usr/bin/env node
/**
 * Builds the packages and examples (tsup) and the dashboard (vite) only when their sources changed since the last
 * build made here, and quietly: one line while it builds, the tools' own output only if the build fails. `npm start` and `npm run keys` run
 * it, so that the key the reference server prints once is not buried under build logs, and a second start costs
 * no build.
 *
 * "Changed" is a fingerprint of every input (path, size, mtime of each source file, the build and TypeScript
 * configuration, the lockfile) kept in node_modules/.cache/mcp-fleet/build.json, plus every output present.
 *
 *   node scripts/build-if-stale.mjs           build if stale
 *   node scripts/build-if-stale.mjs --check   exit 0 when fresh, 1 when a build is due (builds nothing)
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from './build.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const STAMP = join(ROOT, 'node_modules', '.cache', 'mcp-fleet', 'build.json');
const PACKAGES = ['core', 'hono', 'express', 'sqlite', 'redis', 'postgres', 'client', 'otel', 'prometheus'];
const EXAMPLES = ['reference-server', 'express-app'];
/** What tsup.config.ts makes; one missing (a deleted dist/) means a build is due whatever the fingerprint says. */
const OUTPUTS = [
  ...PACKAGES.flatMap((name) => [`packages/${name}/dist/index.js`, `packages/${name}/dist/index.cjs`, `packages/${name}/dist/index.d.ts`]),
  'examples/reference-server/dist/main.js',
  'examples/reference-server/dist/keys.js',
  'examples/reference-server/dist/secrets.js',
  'examples/reference-server/dist/mcp-fleet.js',
  'examples/express-app/dist/main.js',
  'packages/core/dist/dashboard/index.html',
];

function* files(dir) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile() && !/\.test\.ts$/.test(entry.name)) yield path;
  }
}

function fingerprint() {
  const inputs = [
    ...PACKAGES.flatMap((name) => [...files(join(ROOT, 'packages', name, 'src')), join(ROOT, 'packages', name, 'package.json')]),
    ...EXAMPLES.flatMap((name) => [...files(join(ROOT, 'examples', name, 'src')), join(ROOT, 'examples', name, 'package.json')]),
    // The dashboard (docs/dashboard.md): its sources, page and Vite configuration.
    ...files(join(ROOT, 'packages', 'core', 'ui')),
    join(ROOT, 'tsup.config.ts'),
    join(ROOT, 'tsconfig.json'),
    join(ROOT, 'tsconfig.build.json'),
    join(ROOT, 'scripts', 'build.mjs'),
    join(ROOT, 'package-lock.json'),
  ].sort();
  const hash = createHash('sha256');
  for (const path of inputs) {
    const stat = existsSync(path) ? statSync(path) : undefined;
    hash.update(`${relative(ROOT, path)}\0${stat?.size ?? -1}\0${stat?.mtimeMs ?? -1}\n`);
  }
  return hash.digest('hex');
}

function stale(print) {
  if (OUTPUTS.some((path) => !existsSync(join(ROOT, path)))) return true;
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8')).fingerprint !== print;
  } catch {
    return true;
  }
}

const print = fingerprint();
const due = stale(print);
if (process.argv.includes('--check')) process.exit(due ? 1 : 0);
if (due) {
  const started = Date.now();
  process.stderr.write('mcp-fleet: building the packages (first run, or the sources changed)… ');
  const { code, output } = await build({ quiet: true });
  if (code !== 0) {
    process.stderr.write('failed:\n\n');
    process.stderr.write(output);
    process.exit(code ?? 1);
  }
  process.stderr.write(`done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  mkdirSync(dirname(STAMP), { recursive: true });
  // The fingerprint of the sources as they were when the build started: an edit made meanwhile builds again next time.
  writeFileSync(STAMP, JSON.stringify({ fingerprint: print, built_at: new Date().toISOString() }));
}
