/**
 * The client's types cannot drift from the API: the document is rendered again from the core's sources and the
 * generated file must be exactly what openapi-typescript makes of it.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { ROOT } from '../support/packed.js';
import { removeTempDirs, tempDir } from '../support/reference-server.js';

const run = promisify(execFile);
const SCRIPT = join(ROOT, 'scripts', 'generate-client-types.mjs');
const GENERATED = join(ROOT, 'packages', 'client', 'src', 'generated', 'openapi.ts');
afterAll(removeTempDirs);

it('packages/client/src/generated/openapi.ts is what the served document generates', async () => {
  const { stdout } = await run(process.execPath, [SCRIPT, '--check'], { cwd: ROOT });
  expect(stdout).toContain('packages/client/src/generated/openapi.ts matches the document');
}, 60_000);

it('a file that differs fails the check, saying what to run', async () => {
  const stale = join(await tempDir('mcp-fleet-client-types-'), 'openapi.ts');
  await writeFile(stale, (await readFile(GENERATED, 'utf8')).replace('"servers.list"', '"servers.listed"'));
  const failed = await run(process.execPath, [SCRIPT, '--check', stale], { cwd: ROOT }).then(
    () => undefined,
    (error: { code: number; stderr: string }) => error,
  );
  expect(failed?.code).toBe(1);
  expect(failed?.stderr).toContain('differs from the document the fleet serves: run `npm run generate:client`');
}, 60_000);
