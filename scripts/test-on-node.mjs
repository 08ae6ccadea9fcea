// Runs the suites users meet first on another Node major, through the `node` npm package (npx), so the project's own
// npm scripts stay on the repository's Node (engines: >=20.18): the adapters' HTTP suite (the MCP endpoint's cases
// among them), the MCP endpoint across processes and its unit tests, and the packed-tarball consumer test.
//   node scripts/test-on-node.mjs 24        (.ci/run runs it for 22 and 24; extra arguments go to vitest)
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const [major, ...extra] = process.argv.slice(2);
if (!/^\d+$/.test(major ?? '')) {
  console.error('usage: node scripts/test-on-node.mjs <major, e.g. 22 or 24> [vitest arguments]');
  process.exit(2);
}
const SUITES = ['test/http', 'test/mcp-endpoint-processes.test.ts', 'test/consumer.test.ts', 'packages/core/src/mcp-endpoint'];
const root = fileURLToPath(new URL('..', import.meta.url));
const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const npx = (args) => spawnSync('npx', ['--yes', '--prefer-offline', '--package', `node@${major}`, '--', ...args], { cwd: root, stdio: 'inherit' });

console.log(`test-on-node: Node ${major} (the node npm package), ${SUITES.join(' ')}`);
const version = npx(['node', '-p', '"test-on-node: running on " + process.version']);
if (version.status !== 0) {
  console.error(`test-on-node: could not get Node ${major} through npx (it needs the npm registry once, then its cache).`);
  process.exit(version.status ?? 1);
}
// The memory run only: the HTTP suite's second run on PostgreSQL (project http-postgres) tests the store, not Node.
const run = npx(['node', vitest, 'run', '--project', 'main', '--project', 'http', ...SUITES, ...extra]);
process.exit(run.status ?? 1);
