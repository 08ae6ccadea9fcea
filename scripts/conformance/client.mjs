#!/usr/bin/env node
/**
 * The client under test of the official MCP conformance suite (`@modelcontextprotocol/conformance`): mcp-fleet's
 * client layer, from the built `@mcp-fleet/core` (`npm run build` first; `npm run conformance` does it).
 *
 *   node scripts/conformance/client.mjs <server-url>
 *
 * The suite starts a server for one scenario, then runs this with the server's URL as the last argument and
 * `MCP_CONFORMANCE_SCENARIO` naming the scenario; `MCP_CONFORMANCE_CONTEXT` carries what a scenario hands the client
 * (client credentials), `MCP_CONFORMANCE_PROTOCOL_VERSION` the revision asked for with `--spec-version` (the fleet negotiates the era
 * itself, as it does with any server).
 * It runs on the project's Node (20), not the suite's Node 22: the suite gets this Node's absolute path in its command.
 *
 * Exits 0 when the fleet did what the scenario asks; the suite's own checks decide whether that was conformant.
 * Prints no secret: the credentials of the auth scenario go into the fleet and nowhere else.
 */
import { createFleet } from '@mcp-fleet/core';

const ACCOUNT = 'conformance';
/** The tool the `tools_call` scenario serves, and what it must answer for these arguments. */
const TOOL = { name: 'add_numbers', arguments: { a: 2, b: 3 }, expected: 'The sum of 2 and 3 is 5' };

/** Scenarios that pass when the client refuses to authenticate: their metadata names another resource or issuer. */
const REFUSALS = new Set(['auth/resource-mismatch', 'auth/metadata-issuer-mismatch']);

/**
 * Scenarios whose server never accepts a client-credentials token: their token endpoint grants scopes only to an
 * authorization-code client, so the fleet's tokens have none and every request is refused (401, or 403
 * `insufficient_scope`). The fleet must ask once for the challenged scope, step up once, then stop: unhealthy,
 * UPSTREAM_AUTH_FAILED. run.mjs counts the token requests.
 */
const SCOPE_REFUSED = new Set(['auth/scope-from-www-authenticate', 'auth/scope-step-up', 'auth/scope-retry-limit']);

const serverUrl = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';

function fail(message) {
  console.error(`conformance client (${scenario}): ${message}`);
  process.exitCode = 1;
}

/** The context the suite hands over as JSON: `{ client_id, client_secret }` or `{ client_id, private_key_pem, signing_algorithm }` for client credentials. */
function context() {
  const raw = process.env.MCP_CONFORMANCE_CONTEXT;
  if (raw === undefined || raw === '') return {};
  return JSON.parse(raw);
}

/** The server as an embedder registers it: Streamable HTTP, with client credentials when the scenario gives some. */
function serverInput() {
  const input = { name: 'conformance-server', type: 'http', endpoint: serverUrl, timeout: 10_000 };
  // Any scenario that hands over a client id and secret gets them as oauth2 client credentials; those that test what
  // the client refuses before it authenticates get credentials of our own (they must never reach a token endpoint).
  const { client_id, client_secret, private_key_pem, signing_algorithm } = context();
  if (typeof client_id === 'string' && typeof client_secret === 'string') input.authentication = { type: 'oauth2', client_id, client_secret };
  // private_key_jwt (auth/client-credentials-jwt): the key and its algorithm as the fleet's oauth2 private_key.
  else if (typeof client_id === 'string' && typeof private_key_pem === 'string') {
    input.authentication = { type: 'oauth2', client_id, private_key: private_key_pem, ...(typeof signing_algorithm === 'string' && { algorithm: signing_algorithm }) };
  }
  // The other auth scenarios hand nothing: their authorization servers expect a client that registers itself and asks
  // a user (authorization code); the fleet is a machine client, so it comes with client credentials of its own.
  else if (scenario.startsWith('auth/') && !scenario.startsWith('auth/client-credentials')) {
    input.authentication = { type: 'oauth2', client_id: 'mcp-fleet-conformance', client_secret: 'not-a-secret' };
  }
  else if (scenario.startsWith('auth/client-credentials')) throw new Error('MCP_CONFORMANCE_CONTEXT has no client credentials this client supports');
  return input;
}

/** `fleet.servers.health`: the probe's real MCP exchange (initialize + ping, or server/discover), with the server's authentication. */
async function checkHealth(fleet, serverId) {
  const health = await fleet.servers.health(ACCOUNT, serverId);
  if (health.isErr()) return fail(`health failed: ${health.error.code}`);
  if (health.value.status !== 'healthy') return fail(`server unhealthy: ${health.value.error?.code ?? 'no error code'}`);
}

/** `fleet.servers.health` of a server whose authorization metadata the fleet must refuse: unhealthy, UPSTREAM_AUTH_FAILED. */
async function checkRefused(fleet, serverId) {
  const health = await fleet.servers.health(ACCOUNT, serverId);
  if (health.isErr()) return fail(`health failed: ${health.error.code}`);
  if (health.value.status === 'healthy' || health.value.error?.code !== 'UPSTREAM_AUTH_FAILED') {
    return fail(`expected a refusal (UPSTREAM_AUTH_FAILED), got ${health.value.status} ${health.value.error?.code ?? ''}`);
  }
  console.log(SCOPE_REFUSED.has(scenario) ? 'the server refused every token the fleet could get, as expected of a client-credentials client' : 'the fleet refused to authenticate, as the scenario expects');
}

/**
 * `fleet.tools.list` then `fleet.tools.call`: the embedder's own call path (the server's proxy settings, a kept
 * connection, era negotiation, the guarded fetch, no redirects), which also writes the tool-call record.
 */
async function callTool(fleet, serverId) {
  const listed = await fleet.tools.list(ACCOUNT, serverId);
  if (listed.isErr()) return fail(`tools/list failed: ${listed.error.code}`);
  if (!listed.value.some((tool) => tool.name === TOOL.name)) return fail(`tools/list has no ${TOOL.name}`);
  const called = await fleet.tools.call(ACCOUNT, serverId, TOOL.name, TOOL.arguments);
  if (called.isErr()) return fail(`tools/call failed: ${called.error.code}`);
  const { status, result, error } = called.value;
  const text = result?.content?.find((part) => part.type === 'text')?.text;
  if (status !== 'success' || text !== TOOL.expected) return fail(`unexpected tools/call outcome: ${status} ${error?.code ?? ''} ${JSON.stringify(result)}`);
  const recorded = await fleet.toolCalls.get(ACCOUNT, called.value.id);
  if (recorded.isErr() || recorded.value.status !== 'success') return fail('the call was not recorded');
  console.log(`tools/call ${TOOL.name} answered "${text}" (${called.value.attempts} attempt, recorded as ${called.value.id})`);
}

/** One `fleet.tools.call` that must be answered (success or the tool's own error), not fail upstream. */
async function callOnce(fleet, serverId, name, args) {
  const called = await fleet.tools.call(ACCOUNT, serverId, name, args);
  if (called.isErr()) return fail(`tools/call ${name} failed: ${called.error.code}`);
  const { status, error } = called.value;
  if (status !== 'success') return fail(`tools/call ${name}: ${status} ${error?.code ?? ''}`);
  console.log(`tools/call ${name}: ${status}`);
}

/** The calls the scenario hands over (`context.toolCalls`), made straight away: no tools/list before them. */
async function callGiven(fleet, serverId, calls) {
  for (const { name, arguments: args } of calls) await callOnce(fleet, serverId, name, args ?? {});
}

/** A value of the type a schema property asks for: enough for a scenario server that records what it receives. */
function sample(property) {
  switch (property?.type) {
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    case 'object':
      return {};
    case 'array':
      return [];
    default:
      return 'x';
  }
}

/** `fleet.tools.list`, then a call of every tool listed, with its required arguments. Returns the tools. */
async function listAndCallAll(fleet, serverId) {
  const listed = await fleet.tools.list(ACCOUNT, serverId);
  if (listed.isErr()) return fail(`tools/list failed: ${listed.error.code}`);
  for (const tool of listed.value) {
    const required = tool.inputSchema?.required ?? [];
    const args = Object.fromEntries(required.map((key) => [key, sample(tool.inputSchema?.properties?.[key])]));
    await callOnce(fleet, serverId, tool.name, args);
  }
  return listed.value;
}

/**
 * `sep-2322-client-request-state` (2026-07-28 multi round-trip requests): the fleet answers no input request, so a
 * tool that answers `input_required` must end as UPSTREAM_INPUT_REQUIRED after one request, and one whose result has
 * no `resultType` must be read as complete; a tool called in between carries nothing of another call.
 */
async function inputRequired(fleet, serverId) {
  const listed = await fleet.tools.list(ACCOUNT, serverId);
  if (listed.isErr()) return fail(`tools/list failed: ${listed.error.code}`);
  for (const name of ['test_mrtr_echo_state', 'test_mrtr_unrelated', 'test_mrtr_no_state', 'test_mrtr_no_result_type']) {
    const called = await fleet.tools.call(ACCOUNT, serverId, name, {});
    if (called.isErr()) return fail(`tools/call ${name} failed: ${called.error.code}`);
    const { status, error, attempts } = called.value;
    const asksInput = name === 'test_mrtr_echo_state' || name === 'test_mrtr_no_state';
    if (asksInput ? error?.code !== 'UPSTREAM_INPUT_REQUIRED' || attempts !== 1 : status !== 'success') {
      return fail(`tools/call ${name}: ${status} ${error?.code ?? ''} (${attempts} attempts)`);
    }
    console.log(`tools/call ${name}: ${status} ${error?.code ?? ''}`);
  }
}

/** `json-schema-2020-12-preservation`: the focal tool's inputSchema, as the fleet lists it, echoed back verbatim. */
async function echoSchema(fleet, serverId) {
  const listed = await fleet.tools.list(ACCOUNT, serverId);
  if (listed.isErr()) return fail(`tools/list failed: ${listed.error.code}`);
  const focal = listed.value.find((tool) => tool.name === 'json_schema_2020_12_tool');
  if (focal === undefined) return fail('tools/list has no json_schema_2020_12_tool');
  await callOnce(fleet, serverId, 'json_schema_echo', { schema: focal.inputSchema });
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
    const given = context().toolCalls;
    if (Array.isArray(given)) return await callGiven(fleet, serverId, given);
    if (REFUSALS.has(scenario) || SCOPE_REFUSED.has(scenario)) return await checkRefused(fleet, serverId);
    if (scenario === 'initialize' || scenario.startsWith('auth/')) return await checkHealth(fleet, serverId);
    switch (scenario) {
      case 'tools_call':
        return await callTool(fleet, serverId);
      case 'json-schema-ref-no-deref': {
        const listed = await fleet.tools.list(ACCOUNT, serverId);
        if (listed.isErr()) return fail(`tools/list failed: ${listed.error.code}`);
        return;
      }
      case 'json-schema-2020-12-preservation':
        return await echoSchema(fleet, serverId);
      case 'sep-2322-client-request-state':
        return await inputRequired(fleet, serverId);
      case 'http-standard-headers':
      case 'http-invalid-tool-headers':
      case 'request-metadata':
      case 'sse-retry':
        return void (await listAndCallAll(fleet, serverId));
      default:
        return fail('scenario not supported by this client');
    }
  } finally {
    await fleet.close();
  }
}

main().catch((error) => fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error)));
