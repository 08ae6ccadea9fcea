/**
 * The packages as `npm publish` would ship them: `npm pack`ed tarballs of the built workspace packages (global setup
 * has built `dist/`), and npm run the way a user runs it. Shared by the consumer test and the README test.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PACKAGES = ['core', 'hono', 'express', 'sqlite', 'redis', 'postgres', 'client', 'otel', 'prometheus'] as const;
export type PackageName = (typeof PACKAGES)[number];

export interface PackedFile {
  filename: string;
  files: { path: string }[];
}

export interface Packed {
  /** The path of each package's tarball. */
  tarballs: Record<PackageName, string>;
  /** What `npm pack --json` said of each. */
  files: Record<PackageName, PackedFile>;
}

/** npm in `cwd`, quiet about updates; rejects on a non-zero exit. */
export function npm(args: string[], cwd: string) {
  return run('npm', args, { cwd, maxBuffer: 32 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } });
}

/** Packs every workspace package into `dir`. */
export async function packTarballs(dir: string): Promise<Packed> {
  const { stdout } = await npm(['pack', '--json', '--pack-destination', dir, ...PACKAGES.map((name) => join(ROOT, 'packages', name))], ROOT);
  const list = JSON.parse(stdout) as PackedFile[];
  const tarballs = {} as Record<PackageName, string>;
  const files = {} as Record<PackageName, PackedFile>;
  PACKAGES.forEach((name, i) => {
    const file = list[i] as PackedFile;
    files[name] = file;
    tarballs[name] = join(dir, file.filename);
  });
  return { tarballs, files };
}

/** Installs `specs` into the project at `cwd`, as `npm i` does, from the local cache where it can. */
export function npmInstall(cwd: string, specs: string[]) {
  return npm(['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...specs], cwd);
}
