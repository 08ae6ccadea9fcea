// Section 7f/7g (issue 31: "report stdio and WebSocket upstreams too"): a tool call through /v1/mcp against a direct
// SDK call to the same upstream over the same transport, for a stdio and a WebSocket upstream. Information only: the
// issue's ≤ +1.0 ms target is for HTTP upstreams. The upstream is bench/transport-upstreams.mjs (the v1 SDK's
// McpServer with a tool `ping`), in a child process:
//   7f stdio      the fleet spawns `node transport-upstreams.mjs stdio` for the registered stdio server (its
//                 supervisor, run as the account's uid when the bench runs as root); the direct Client spawns the same
//                 command with the SDK's StdioClientTransport. Two processes of the same server, one per road.
//   7g WebSocket  one child process serves both roads (`ws`, subprotocol `mcp`, one McpServer per connection); the
//                 fleet connects through its guarded WebSocket transport, the direct Client with the v1 SDK's
//                 WebSocketClientTransport (on undici's WebSocket, Node 20 having no global one).
// Both variants are v2 SDK Clients connected once and kept; they run interleaved call by call as 7a/7b
// (`interleavedRounds`, the first round dropped), and each figure is the median of per-round figures.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
import { WebSocket } from 'undici';
import { figure, fmtAddedFigure, fmtMs, fmtSpread, interleavedRounds, pad } from './stats.mjs';

const UPSTREAMS = fileURLToPath(new URL('./transport-upstreams.mjs', import.meta.url));
/** The command the fleet may run for the bench's stdio server (its `stdio.commands`). */
export const STDIO_COMMAND = process.execPath;

const fmtFigureMs = (f) => `${fmtMs(f.median)} ms (rounds ${fmtMs(f.low)}..${fmtMs(f.high)}, ${fmtSpread(f)})`;

async function connected(transport) {
  const client = new Client({ name: 'bench-mcp-transports', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/**
 * Registers a stdio and a WebSocket server in `account` of `fleet` (which must allow STDIO_COMMAND and private
 * networks), times 7f and 7g, closes what it opened and answers `{ stdio, websocket }`, each
 * `{ directMs, mcpMs, added, ratio }` (figures of per-round values).
 * `mcp` is a Client already connected to /v1/mcp with the account's key; `call(client, name)` calls a tool and checks its answer.
 */
export async function transportRounds({ fleet, account, mcp, call, rounds, batch, warmup }) {
  globalThis.WebSocket ??= WebSocket;
  const ws = fork(UPSTREAMS, ['ws'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { url } = await new Promise((resolve) => ws.once('message', resolve));
  const created = async (input) => (await fleet.servers.create(account, input))._unsafeUnwrap().id;
  await created({ name: 'bench-stdio', type: 'stdio', command: STDIO_COMMAND, args: [UPSTREAMS, 'stdio'], timeout: 30_000 });
  await created({ name: 'bench-ws', type: 'websocket', endpoint: url });
  const direct = {
    stdio: await connected(new StdioClientTransport({ command: STDIO_COMMAND, args: [UPSTREAMS, 'stdio'], stderr: 'inherit' })),
    ws: await connected(new WebSocketClientTransport(new URL(url))),
  };
  const result = {};
  try {
    for (const [key, prefix, title] of [
      ['stdio', 'bench-stdio', '7f. stdio upstream: v1 SDK McpServer on StdioServerTransport, a child process per road'],
      ['ws', 'bench-ws', '7g. WebSocket upstream: v1 SDK McpServer per connection (ws, subprotocol mcp), one child process'],
    ]) {
      const list = [
        { id: 'direct', run: () => call(direct[key], 'ping') },
        { id: 'mcp', run: () => call(mcp, `${prefix}__ping`) },
      ];
      for (const v of list) for (let i = 0; i < warmup; i++) await v.run();
      const perRound = await interleavedRounds(list, rounds + 1, batch);
      for (const id of Object.keys(perRound)) perRound[id].shift();
      const out = {
        directMs: figure(perRound.direct),
        mcpMs: figure(perRound.mcp),
        added: figure(perRound.mcp.map((t, i) => t - perRound.direct[i])),
        ratio: figure(perRound.mcp.map((t, i) => t / perRound.direct[i])),
      };
      console.log(`\n${title}`);
      console.log(`  ${pad(`direct: SDK Client (kept ${key === 'ws' ? 'WebSocket' : 'child process'}) callTool`, 56)} ${fmtFigureMs(out.directMs)}`);
      console.log(`  ${pad('mcp: SDK Client on /v1/mcp (kept session) callTool', 56)} ${fmtFigureMs(out.mcpMs)}`);
      console.log(`  ${pad('mcp − direct (information: the target is for HTTP)', 56)} ${fmtAddedFigure(out.added)}, time ×${out.ratio.median.toFixed(2)} ${fmtSpread(out.ratio)}`);
      result[key === 'ws' ? 'websocket' : 'stdio'] = out;
    }
  } finally {
    await direct.stdio.close();
    await direct.ws.close();
    ws.send({ type: 'exit' });
  }
  return result;
}
