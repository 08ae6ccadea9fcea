/**
 * The README's first screen, followed as a newcomer does: a project made with `npm init -y` and the README's own
 * commands (its ESM line, its install line, with the packed tarballs standing in for the registry), the snippet pasted
 * into `server.ts` and run with its types stripped (what `tsx` does), then the curl line it prints.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { transform } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { npm, npmInstall, PACKAGES, type Packed, packTarballs, ROOT } from './support/packed.js';
import { removeTempDirs, tempDir } from './support/reference-server.js';

const run = promisify(execFile);
const readme = await readFile(join(ROOT, 'README.md'), 'utf8');

/** The first ```ts block after a bold heading such as **Hono**, and the `npm i …` line the heading names. */
function snippet(heading: string): { code: string; install: string[] } {
  const start = readme.indexOf(`**${heading}**`);
  expect(start, `README has a **${heading}** snippet`).toBeGreaterThanOrEqual(0);
  const rest = readme.slice(start);
  const match = /```ts\n([\s\S]*?)```/.exec(rest);
  if (match?.[1] === undefined) throw new Error(`no ts block after **${heading}**`);
  const install = /`npm i ([^`]+)`/.exec(rest.slice(0, match.index));
  if (install?.[1] === undefined) throw new Error(`no \`npm i …\` line with **${heading}**`);
  return { code: match[1], install: install[1].split(/\s+/) };
}

/** The commands that make a project, from the README's sh block that starts with `npm init -y`. */
function projectCommands(): string[][] {
  const line = /^npm init -y(?: && .*)?$/m.exec(readme)?.[0];
  if (line === undefined) throw new Error('README shows no `npm init -y` line');
  return line.split(' && ').map((command) => command.trim().split(/\s+/));
}

let packed: Packed;
let work: string;
beforeAll(async () => {
  work = await tempDir('mcp-fleet-readme-');
  await mkdir(join(work, 'tarballs'));
  packed = await packTarballs(join(work, 'tarballs'));
}, 60_000);
afterAll(removeTempDirs);

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** A project as a user makes one: `npm init -y`, the README's commands, its install line (our packages as tarballs). */
async function userProject(name: string, install: string[]): Promise<string> {
  const dir = join(work, name);
  await mkdir(dir);
  for (const [command, ...args] of projectCommands()) {
    expect(command).toBe('npm');
    await npm(args, dir);
  }
  const specs = install.map((spec) => {
    const ours = /^@mcp-fleet\/(\w+)$/.exec(spec)?.[1];
    if (ours === undefined) return spec;
    expect(PACKAGES).toContain(ours);
    return packed.tarballs[ours as (typeof PACKAGES)[number]];
  });
  await npmInstall(dir, specs);
  return dir;
}

/** Runs the snippet as pasted into `server.ts` (types stripped, as tsx does), waits for the curl line it prints. */
async function runSnippet(dir: string, code: string): Promise<string> {
  const js = await transform(code, { loader: 'ts', target: 'node20' });
  await writeFile(join(dir, 'server.ts'), code);
  await writeFile(join(dir, 'server.js'), js.code);
  const child = spawn(process.execPath, ['server.js'], { cwd: dir, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no curl line from ${dir}/server.js:\n${output}`)), 15_000);
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
    child.once('exit', (code) => reject(new Error(`${dir}/server.js exited with ${code}:\n${output}`)));
  });
}

/** `curl -H "Authorization: Bearer K" URL` → fetch the same. */
async function curl(line: string): Promise<Response> {
  const match = /^curl -H "Authorization: Bearer (\S+)" (\S+)$/.exec(line.trim());
  if (match === null) throw new Error(`unexpected curl line: ${line}`);
  return fetch(match[2] as string, { headers: { authorization: `Bearer ${match[1]}` } });
}

describe('README snippets work when pasted into a project made with npm init -y', () => {
  it.each(['Hono', 'Express'])(
    '%s',
    async (heading) => {
      const { code, install } = snippet(heading);
      const dir = await userProject(`my-${heading.toLowerCase()}-app`, install);
      // The README's ESM line is what makes top-level await work: npm init -y alone writes "commonjs".
      expect(JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')).type).toBe('module');
      const line = await runSnippet(dir, code);
      const response = await curl(line);
      expect(response.status).toBe(200);
      const body = (await response.json()) as { success: boolean; data: unknown[] };
      expect(body).toMatchObject({ success: true, data: [] });
      const unauthenticated = await fetch(line.split(' ').at(-1) as string);
      expect(unauthenticated.status).toBe(401);
      // Its webhooks are there too, as the comment says.
      const hooks = await curl(line.replace(/servers$/, 'webhooks'));
      expect(hooks.status).toBe(200);
    },
    120_000,
  );

  it('without the ESM line, the project npm init -y makes is CommonJS, where the snippet cannot run', async () => {
    const dir = join(work, 'plain');
    await mkdir(dir);
    await npm(['init', '-y'], dir);
    expect(JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')).type ?? 'commonjs').toBe('commonjs');
    await writeFile(join(dir, 'server.js'), (await transform(snippet('Hono').code, { loader: 'ts' })).code);
    await expect(run(process.execPath, ['server.js'], { cwd: dir })).rejects.toThrow();
  });

  it('shows the two commands, and the keys command with its --, on its first screen', () => {
    const firstScreen = readme.split('\n').slice(0, 12).join('\n');
    expect(firstScreen).toContain('npm ci && npm start');
    expect(firstScreen).toContain('npm test');
    expect(firstScreen).toContain('npm run keys -- create acme --tier pro');
  });
});

describe('package READMEs', () => {
  it.each(PACKAGES)('@mcp-fleet/%s links only to absolute URLs (a relative link is broken on npm) and has a quick start', async (name) => {
    const text = await readFile(join(ROOT, 'packages', name, 'README.md'), 'utf8');
    const links = [...text.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1] as string);
    expect(links.filter((link) => !/^https:\/\//.test(link) && !link.startsWith('#'))).toEqual([]);
    expect(text).toMatch(/## Quick start/);
    expect(text).toMatch(new RegExp(`^npm i .*@mcp-fleet/${name}\\b`, 'm'));
  });
});
