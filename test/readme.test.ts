import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(`${root}README.md`, 'utf8');
// Inside the repository, so that `@mcp-fleet/*` resolves to the built workspace packages, as for a user.
const scratch = `${root}test/.tmp/`;

/** The first ```ts block after a bold heading such as **Hono**. */
function snippet(heading: string): string {
  const start = readme.indexOf(`**${heading}**`);
  expect(start, `README has a **${heading}** snippet`).toBeGreaterThanOrEqual(0);
  const match = /```ts\n([\s\S]*?)```/.exec(readme.slice(start));
  if (match?.[1] === undefined) throw new Error(`no ts block after **${heading}**`);
  return match[1];
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** Runs a snippet as pasted (types stripped), waits for the curl line it prints, and returns it. */
async function runSnippet(name: string, code: string): Promise<string> {
  const js = await transform(code, { loader: 'ts', format: 'esm', target: 'node20' });
  mkdirSync(scratch, { recursive: true });
  const file = `${scratch}readme-${name}.mjs`;
  writeFileSync(file, js.code);
  const child = spawn(process.execPath, [file], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no curl line from the ${name} snippet:\n${output}`)), 10_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split('\n').find((l) => l.startsWith('curl '));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the ${name} snippet exited with ${code}:\n${output}`)));
  });
}

/** `curl -H "Authorization: Bearer K" URL` → fetch the same. */
async function curl(line: string): Promise<Response> {
  const match = /^curl -H "Authorization: Bearer (\S+)" (\S+)$/.exec(line.trim());
  if (match === null) throw new Error(`unexpected curl line: ${line}`);
  return fetch(match[2] as string, { headers: { authorization: `Bearer ${match[1]}` } });
}

describe('README snippets work when pasted', () => {
  it.each(['Hono', 'Express'])('%s', async (heading) => {
    const line = await runSnippet(heading.toLowerCase(), snippet(heading));
    const response = await curl(line);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { success: boolean; data: unknown[] };
    expect(body).toMatchObject({ success: true, data: [] });
    const unauthenticated = await fetch(line.split(' ').at(-1) as string);
    expect(unauthenticated.status).toBe(401);
  });

  it('shows the two commands on its first screen', () => {
    const firstScreen = readme.split('\n').slice(0, 12).join('\n');
    expect(firstScreen).toContain('npm ci && npm start');
    expect(firstScreen).toContain('npm test');
  });
});
