#!/usr/bin/env node
/**
 * `npm run conformance`: the official MCP conformance suite (`@modelcontextprotocol/conformance`, a devDependency)
 * against mcp-fleet's client layer (scripts/conformance/client.mjs). See docs/conformance.md.
 *
 *   npm run conformance                 builds, then runs every scenario below
 *   npm run conformance -- --no-build   uses the dist/ already built
 *   npm run conformance -- --verbose    prints the suite's output of passing scenarios too
 *
 * The suite needs Node 22; the project runs on Node 20. Node 22 comes from the `node` npm package through npx (a
 * cached download, never a dependency of the project); only the suite runs on it. The client under test runs on the
 * Node that runs this script: the suite gets its absolute path in the client command.
 *
 * Exits 1 when any scenario fails or is skipped as a whole (a skip would mean the suite no longer runs what we claim
 * it runs); single optional checks may be skipped.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE22, node22, readChecks, ROOT, run, seconds, stripAnsi, SUITE, suiteVersion } from './suite.mjs';

const CLIENT = join(ROOT, 'scripts', 'conformance', 'client.mjs');

/**
 * Checks of the authorization-code flow: a client that registers itself (dynamic registration) and sends a user to the
 * authorization endpoint, with the RFC 8707 resource there. The fleet is a machine client (client credentials, no
 * user, no redirect), so these never happen; in the scenarios below they are the only checks allowed to fail.
 */
const AUTH_CODE = ['client-registration', 'authorization-request', 'resource-parameter-in-authorization'];

/**
 * Scenarios whose scope checks are recorded at the authorization endpoint only, and whose token endpoint grants a
 * client-credentials token no scope at all: the server refuses every token the fleet can get, so the client expects
 * the refusal (scripts/conformance/client.mjs). `tokenRequests`: how many token requests the fleet must make, the one
 * thing of scope handling the suite sees of a client-credentials client: one for the 401, one step-up for the 403
 * `insufficient_scope`, then no more (no retry loop).
 */
const SCOPE = {
  'auth/scope-from-www-authenticate': { outOfScope: ['scope-from-www-authenticate'], tokenRequests: 2 },
  'auth/scope-step-up': { outOfScope: ['scope-step-up-initial', 'scope-step-up-escalation', 'sep-2350-scope-union-on-reauth'], tokenRequests: 2 },
  'auth/scope-retry-limit': { outOfScope: ['scope-retry-limit'], tokenRequests: 2 },
};

const authCode = (scenario, versions) => versions.map((specVersion) => ({ scenario, specVersion, outOfScope: AUTH_CODE }));
const scope = (scenario, versions) => versions.map((specVersion) => ({ scenario, specVersion, ...SCOPE[scenario] }));

/**
 * The applicable client scenarios, each in every spec version the suite offers it in (docs/conformance.md says why
 * the others are out of scope). No version: the suite's default (2025-11-25), or an extension that has none.
 * `outOfScope`: check ids that may fail, because they need the authorization-code flow; every other check must pass.
 */
const RUNS = [
  { scenario: 'initialize', specVersion: '2025-06-18' },
  { scenario: 'initialize' },
  { scenario: 'tools_call', specVersion: '2025-06-18' },
  { scenario: 'tools_call' },
  { scenario: 'tools_call', specVersion: '2026-07-28' },
  { scenario: 'sse-retry' },
  { scenario: 'request-metadata', specVersion: '2026-07-28' },
  { scenario: 'http-standard-headers', specVersion: '2026-07-28' },
  { scenario: 'http-custom-headers', specVersion: '2026-07-28' },
  { scenario: 'http-invalid-tool-headers', specVersion: '2026-07-28' },
  { scenario: 'json-schema-ref-no-deref', specVersion: '2026-07-28' },
  { scenario: 'json-schema-2020-12-preservation' },
  { scenario: 'json-schema-2020-12-preservation', specVersion: '2026-07-28' },
  { scenario: 'auth/client-credentials-basic' },
  { scenario: 'auth/pre-registration' },
  { scenario: 'auth/pre-registration', specVersion: '2026-07-28' },
  { scenario: 'auth/resource-mismatch', specVersion: '2026-07-28' },
  { scenario: 'auth/metadata-issuer-mismatch', specVersion: '2026-07-28' },
  { scenario: 'auth/client-credentials-jwt' },
  ...authCode('auth/metadata-default', ['2025-11-25', '2026-07-28']),
  ...authCode('auth/metadata-var1', ['2025-11-25', '2026-07-28']),
  ...authCode('auth/metadata-var2', ['2025-11-25', '2026-07-28']),
  ...authCode('auth/metadata-var3', ['2025-11-25', '2026-07-28']),
  ...authCode('auth/token-endpoint-auth-basic', ['2025-06-18', '2025-11-25', '2026-07-28']),
  ...authCode('auth/token-endpoint-auth-post', ['2025-06-18', '2025-11-25', '2026-07-28']),
  ...authCode('auth/token-endpoint-auth-none', ['2025-06-18', '2025-11-25', '2026-07-28']),
  ...authCode('auth/2025-03-26-oauth-metadata-backcompat', ['2025-03-26']),
  ...scope('auth/scope-from-www-authenticate', ['2025-11-25', '2026-07-28']),
  ...scope('auth/scope-step-up', ['2025-11-25', '2026-07-28']),
  ...scope('auth/scope-retry-limit', ['2025-11-25', '2026-07-28']),
  // Multi round-trip requests: the fleet answers no input request (UPSTREAM_INPUT_REQUIRED); what is left of the
  // scenario is that a result without resultType is complete and that nothing leaks into another call.
  {
    scenario: 'sep-2322-client-request-state',
    specVersion: '2026-07-28',
    outOfScope: ['sep-2322-client-request-state-echoed', 'sep-2322-client-jsonrpc-id-different', 'sep-2322-client-no-state-omitted'],
  },
];

const args = new Set(process.argv.slice(2));
const verbose = args.has('--verbose');

/** A word for a POSIX shell: the suite hands its client command to `sh -c`. */
const shellQuote = (word) => `'${word.replaceAll("'", `'\\''`)}'`;

async function runScenario(node, { scenario, specVersion, outOfScope = [], tokenRequests }) {
  const label = specVersion === undefined ? scenario : `${scenario} @ ${specVersion}`;
  const outDir = await mkdtemp(join(tmpdir(), 'mcp-fleet-conformance-'));
  const started = performance.now();
  const { code, output } = await run(node, [
    SUITE,
    'client',
    '--command',
    `${shellQuote(process.execPath)} ${shellQuote(CLIENT)}`,
    '--scenario',
    scenario,
    ...(specVersion === undefined ? [] : ['--spec-version', specVersion]),
    '--output-dir',
    outDir,
  ]);
  const text = stripAnsi(output);
  const checks = await readChecks(outDir);
  const excused = (check) => check.status === 'FAILURE' && outOfScope.includes(check.id);
  const count = (status) => checks.filter((check) => check.status === status && !excused(check)).length;
  const excusedCount = checks.filter(excused).length;
  const tokenRequestCount = checks.filter((check) => check.id === 'token-request').length;
  // The suite exits 1 on any failed check, excused or not; the client under test exiting non-zero is always a failure.
  const clientFailed = /CLIENT EXITED WITH ERROR/.test(text);
  // Optional checks may be skipped (a method the fleet never sends); a run where every check was skipped tested nothing.
  let verdict;
  if ((code !== 0 && excusedCount === 0) || clientFailed || count('FAILURE') > 0) verdict = 'FAILED';
  else if (tokenRequests !== undefined && tokenRequestCount !== tokenRequests) verdict = 'FAILED';
  else if (/^SKIPPED:/m.test(text) || count('SUCCESS') === 0) verdict = 'SKIPPED';
  else verdict = 'PASSED';
  const extra = `${excusedCount > 0 ? `, ${excusedCount} out of scope` : ''}${tokenRequests === undefined ? '' : `, ${tokenRequestCount}/${tokenRequests} token requests`}`;
  const summary = `${verdict.padEnd(7)} ${label.padEnd(48)} ${String(count('SUCCESS')).padStart(2)} passed, ${count('FAILURE')} failed, ${count('SKIPPED')} skipped, ${count('WARNING')} warnings${extra}  ${seconds(started)}s`;
  if (verdict !== 'PASSED' || verbose) console.log(`\n--- suite output of ${label} (exit ${code}) ---\n${output.trimEnd()}\n---`);
  if (verdict === 'FAILED') console.log(`results kept in ${outDir}`);
  else await rm(outDir, { recursive: true, force: true });
  console.log(summary);
  return verdict;
}

async function main() {
  const started = performance.now();
  if (!args.has('--no-build')) {
    const build = await run('npm', ['run', 'build', '--silent'], { inherit: true });
    if (build.code !== 0) throw new Error('npm run build failed');
    console.log(`build: ${seconds(started)}s`);
  }
  if (!existsSync(join(ROOT, 'packages', 'core', 'dist', 'index.js'))) throw new Error('packages/core/dist is missing: run npm run build');
  if (!existsSync(SUITE)) throw new Error('@modelcontextprotocol/conformance is not installed: run npm ci');
  const version = await suiteVersion();
  const fetching = performance.now();
  const node = await node22();
  console.log(`conformance ${version} on Node ${NODE22} (npx: ${seconds(fetching)}s); client under test on Node ${process.versions.node} (${process.execPath})`);

  const verdicts = [];
  for (const entry of RUNS) verdicts.push(await runScenario(node, entry));
  const passed = verdicts.filter((verdict) => verdict === 'PASSED').length;
  console.log(`\nconformance: ${passed}/${verdicts.length} scenario runs passed; ${seconds(started)}s in all`);
  if (passed !== verdicts.length) process.exitCode = 1;
}

main().catch((error) => {
  console.error(`conformance: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
