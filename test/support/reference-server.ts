import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkAnswer } from './answer-check.js';

/** The built reference server, exactly what `npm start` runs (global setup builds it). */
export const REFERENCE_SERVER = fileURLToPath(new URL('../../examples/reference-server/dist/main.js', import.meta.url));

const LISTENING = /^mcp-fleet listening on (http:\/\/(.+):(\d+))(\/v1) \(store: (.+)\)$/m;
/** A generated key as the server prints it: `mcpf_` + 40 characters. */
export const PRINTED_KEY = /mcpf_[0-9A-Za-z]{40}/g;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Milliseconds from the moment the exit was asked for (or the process started) to the exit. */
  ms: number;
}

export interface ProcessOptions {
  /** Working directory: the embedded default store lands in `<cwd>/.mcp-fleet/`. */
  cwd: string;
  /** Variables on top of a clean environment (no HOST, PORT or MCP_FLEET_*); `PORT` defaults to `0`. */
  env?: Record<string, string | undefined>;
  /** A path to run instead of the reference server. @default REFERENCE_SERVER */
  script?: string;
  /** Command-line arguments for the script. @default [] */
  args?: string[];
}

export interface RunningProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited, however that happened. */
  readonly exited: Promise<Exit>;
  /** Sends `signal` and waits for the exit; `ms` counts from the signal. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

export interface RunningServer extends RunningProcess {
  /** `http://127.0.0.1:40123` as printed. */
  origin: string;
  /** `origin` + `/v1`. */
  url: string;
  host: string;
  port: number;
  /** The store part of the listening line, e.g. `sqlite .mcp-fleet/fleet.sqlite`. */
  storeLabel: string;
  /** Every `mcpf_` key of the start banner (a fresh store prints one, last, in the same write as the listening line). */
  printedKeys: string[];
}

const live = new Set<ChildProcess>();

function cleanEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name === 'HOST' || name === 'PORT' || name.startsWith('MCP_FLEET_') || name === 'NODE_OPTIONS') continue;
    env[name] = value;
  }
  env.PORT = '0';
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** Spawns the process and collects its output; it is killed by `killLeftovers` if a test forgets it. */
export function spawnProcess(options: ProcessOptions): RunningProcess {
  const started = Date.now();
  let askedAt = started;
  const child = spawn(process.execPath, [options.script ?? REFERENCE_SERVER, ...(options.args ?? [])], {
    cwd: options.cwd,
    env: cleanEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<Exit>((resolve) => {
    // 'close' rather than 'exit': by then both output streams are drained.
    child.once('close', (code, signal) => {
      live.delete(child);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - askedAt });
    });
    child.once('error', () => {
      live.delete(child);
      resolve({ code: null, signal: null, stdout, stderr, ms: Date.now() - askedAt });
    });
  });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) {
        askedAt = Date.now();
        child.kill(signal);
      }
      return exited;
    },
  };
}

/**
 * Waits until the process's stdout matches `pattern`. Rejects, with all output, if the process exits first or
 * nothing matches within `timeoutMs` (the process is then killed).
 */
export function waitForOutput(proc: RunningProcess, pattern: RegExp, timeoutMs = 10_000): Promise<RegExpExecArray> {
  return new Promise<RegExpExecArray>((resolve, reject) => {
    let done = false;
    const check = () => {
      const found = pattern.exec(proc.stdout());
      if (found && !done) {
        finish();
        resolve(found);
      }
    };
    const timer = setTimeout(() => {
      if (done) return;
      finish();
      proc.child.kill('SIGKILL');
      reject(new Error(`no output matched ${pattern} within ${timeoutMs} ms:\n${proc.stdout()}\n${proc.stderr()}`));
    }, timeoutMs);
    const finish = () => {
      done = true;
      clearTimeout(timer);
      proc.child.stdout?.off('data', check);
    };
    proc.child.stdout?.on('data', check);
    void proc.exited.then((exit) => {
      check();
      if (done) return;
      finish();
      reject(new Error(`the process exited (code ${exit.code}, signal ${exit.signal}) before printing ${pattern}:\n${exit.stdout}\n${exit.stderr}`));
    });
    check();
  });
}

/** Starts the reference server and waits for its listening line. */
export async function startServer(options: ProcessOptions & { timeoutMs?: number }): Promise<RunningServer> {
  const proc = spawnProcess(options);
  const match = await waitForOutput(proc, LISTENING, options.timeoutMs);
  const [, origin, host, port, prefix, storeLabel] = match as unknown as [string, string, string, string, string, string];
  return {
    ...proc,
    origin,
    url: origin + prefix,
    host,
    port: Number(port),
    storeLabel,
    printedKeys: proc.stdout().match(PRINTED_KEY) ?? [],
  };
}

/** Runs a process that is expected to exit on its own (a bad configuration); kills it after `timeoutMs`. */
export async function runToExit(options: ProcessOptions & { timeoutMs?: number }): Promise<Exit> {
  const proc = spawnProcess(options);
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), options.timeoutMs ?? 10_000);
  const exit = await proc.exited;
  clearTimeout(timer);
  return exit;
}

/** Kills whatever a test left running and waits until it is gone. For `afterEach`. */
export async function killLeftovers(): Promise<void> {
  await Promise.all(
    [...live].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('close', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  live.clear();
}

/** A fresh temporary directory; `removeTempDirs` deletes every one made so far. */
const dirs: string[] = [];
export async function tempDir(label = 'mcp-fleet-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), label));
  dirs.push(dir);
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export interface ApiResult {
  status: number;
  headers: Headers;
  /** The parsed JSON body (every answer of the API is JSON). */
  body: any;
}

/** One request to the server's API with `key` as the bearer token (none when `null`). */
export async function api(base: string, key: string | null, method: string, path: string, body?: unknown): Promise<ApiResult> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${method} ${path}: ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
  }
  // Every answer is held to its route's declared schemas, as in the in-process suites (answer-check.ts).
  checkAnswer(method, path, response.status, text);
  return { status: response.status, headers: response.headers, body: parsed };
}
