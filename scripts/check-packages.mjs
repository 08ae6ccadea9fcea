#!/usr/bin/env node
/**
 * Lints the packages as npm would publish them: publint and @arethetypeswrong/cli on each packed tarball.
 *
 *   npm run build && npm run check:packages
 *   node scripts/check-packages.mjs DIR     checks the tarballs already in DIR (the consumer test does)
 *
 * Exits 1 if either tool reports a problem (publint: errors and warnings) for any package.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['core', 'sqlite', 'redis', 'postgres', 'hono', 'express', 'client', 'otel', 'prometheus'];
const bin = (name) => join(ROOT, 'node_modules', '.bin', name);

function run(command, args) {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ ok: error === null, output: `$ ${[command, ...args].map((a) => a.replace(ROOT, '')).join(' ')}\n${stdout}${stderr}` });
    });
  });
}

async function tarballs(given) {
  if (given !== undefined) return { dir: given, cleanup: async () => {} };
  for (const name of PACKAGES) {
    if (!existsSync(join(ROOT, 'packages', name, 'dist', 'index.js'))) {
      console.error(`packages/${name}/dist is missing: run \`npm run build\` first`);
      process.exit(1);
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'mcp-fleet-pack-'));
  const packed = await run('npm', ['pack', '--silent', '--pack-destination', dir, ...PACKAGES.map((name) => join(ROOT, 'packages', name))]);
  if (!packed.ok) {
    console.error(packed.output);
    process.exit(1);
  }
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

const { dir, cleanup } = await tarballs(process.argv[2]);
const files = await readdir(dir);
const checks = [];
for (const name of PACKAGES) {
  const tarball = files.find((file) => new RegExp(`^mcp-fleet-${name}-\\d.*\\.tgz$`).test(file));
  if (tarball === undefined) {
    checks.push(Promise.resolve({ ok: false, output: `no tarball of @mcp-fleet/${name} in ${dir}` }));
    continue;
  }
  const path = join(dir, tarball);
  checks.push(run(bin('publint'), ['run', '--strict', path]));
  checks.push(run(bin('attw'), [path, '--no-emoji', '--format', 'ascii']));
}
const results = await Promise.all(checks);
await cleanup();
for (const { output } of results) console.log(output);
const failed = results.filter((result) => !result.ok).length;
console.log(failed === 0 ? `check:packages: ${PACKAGES.length} packages, no problems` : `check:packages: ${failed} check(s) failed`);
process.exit(failed === 0 ? 0 : 1);
