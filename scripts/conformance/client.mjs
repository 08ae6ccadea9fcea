#!/usr/bin/env node
/**
 * The client under test of the official MCP conformance suite (`@modelcontextprotocol/conformance`): mcp-fleet's
 * client layer, from the built `@mcp-fleet/core` (`npm run build` first; `npm run conformance` does it).
 *
 *   node scripts/conformance/client.mjs <server-url>
 *
 * The suite starts a server for one scenario, then runs this with the server's URL as the last argument and
 * `MCP_CONFORMANCE_SCENARIO` naming the scenario; `MCP_CONFORMANCE_CONTEXT` carries what a scenario hands the client
 * (client credentials), `MCP_CONFORMANCE_PROTOCOL_VERSION` the revision asked for with `--spec-version`.
 * It runs on the project's Node (20), not the suite's Node 22: the suite gets this Node's absolute path in its command.
 *
 * Exits 0 when the fleet did what the scenario asks; the suite's own checks decide whether that was conformant.
 * Prints no secret: the credentials of the auth scenario go into the fleet and nowhere else.
 */
import { closeClient, connectClient, createFleet, createGuardedFetch } from '@mcp-fleet/core';

const ACCOUNT = 'conformance';
/** The tool the `tools_call` scenario serves, and what it must answer for these arguments. */
const TOOL = { name: 'add_numbers', arguments: { a: 2, b: 3 }, expected: 'The sum of 2 and 3 is 5' };

const serverUrl = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';

function fail(message) {
  console.error(`conformance client (${scenario}): ${message}`);
  process.exitCode = 1;
}

/** The context the suite hands over as JSON: `{ client_id, client_secret }` for client credentials. */
function context() {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  if (raw === undefined || raw === '') return {};
  return JSON.parse(raw);
}

/** The era a `--spec-version` asks for: 2026-07-28 is stateless (`server/discover`), dated revisions before it use `initialize`. */
function requestedEra() {
  const version = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION;
  if (version === undefined || version === '') return undefined;
  return version >= '2026-07-28' ? '2026-07-28' : '2025';
}

/** The server as an embedder registers it: Streamable HTTP, with client credentials when the scenario gives some. */
function serverInput() {
  const input = { name: 'conformance-server', type: 'http', endpoint: serverUrl, timeout: 10_000 };
  if (scenario.startsWith('auth/client-credentials')) {
    const { client_id, client_secret } = context();
    if (typeof client_id !== 'string' || typeof client_secret !== 'string') throw new Error('MCP_CONFORMANCE_CONTEXT has no client credentials');
    input.authentication = { type: 'oauth2', client_id, client_secret };
  }
  return input;
}

/** `fleet.servers.health`: the probe's real MCP exchange (initialize + ping, or server/discover), with the server's authentication. */
async function checkHealth(fleet, serverId) {
  const health = await fleet.servers.health(ACCOUNT, serverId);
  if (health.isErr()) return fail(`health failed: ${health.error.code}`);
  if (health.value.status !== 'healthy') return fail(`server unhealthy: ${health.value.error?.code ?? 'no error code'}`);
}

/**
 * `tools/list` then `tools/call` through the client layer the fleet's probes use (`connectClient`: era negotiation,
 * the guarded fetch, no redirects).
 * TODO(merge of toolcalls): switch to `fleet.tools.list(ACCOUNT, serverId)` and `fleet.tools.call(ACCOUNT, serverId,
 * TOOL.name, TOOL.arguments)` once branch `toolcalls` is merged, so the scenario runs the embedder's real call path
 * (proxy settings, tool-call records) instead of the layer beneath it.
 */
async function callTool(input) {
  const outbound = createGuardedFetch({ allowPrivateNetworks: true });
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), input.timeout);
  const era = requestedEra();
  let connected;
  try {
    connected = await connectClient(
      input,
      { fetch: outbound, dispatcher: outbound.dispatcher },
      { signal: controller.signal, timeoutMs: input.timeout, ...(era === undefined ? {} : { era }) },
    );
    const { client } = connected;
    const { tools } = await client.listTools();
    if (!tools.some((tool) => tool.name === TOOL.name)) return fail(`tools/list has no ${TOOL.name}`);
    const result = await client.callTool({ name: TOOL.name, arguments: TOOL.arguments });
    const text = result.content?.find((part) => part.type === 'text')?.text;
    if (result.isError === true || text !== TOOL.expected) return fail(`unexpected tools/call result: ${JSON.stringify(result)}`);
    console.log(`tools/call ${TOOL.name} answered "${text}" (era ${connected.era})`);
  } finally {
    clearTimeout(timer);
    await closeClient(connected?.client, connected?.transport);
    await outbound.dispatcher.close();
  }
}

async function main() {
  if (serverUrl === undefined || !/^https?:\/\//.test(serverUrl)) throw new Error('usage: client.mjs <server-url>');
  // The suite's servers listen on localhost, which the outgoing-connection guard refuses unless allowed.
  const fleet = createFleet({ allowPrivateNetworks: true, rateLimit: false });
  try {
    const input = serverInput();
    const created = await fleet.servers.create(ACCOUNT, input);
    if (created.isErr()) return fail(`create failed: ${created.error.code}`);
    const serverId = created.value.id;
    switch (scenario) {
      case 'initialize':
      case 'auth/client-credentials-basic':
        return await checkHealth(fleet, serverId);
      case 'tools_call':
        return await callTool(input);
      default:
        return fail('scenario not supported by this client');
    }
  } finally {
    await fleet.close();
  }
}

main().catch((error) => fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error)));
