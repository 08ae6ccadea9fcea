import { Client, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { StdioChannelTransport } from './stdio-transport.js';
import { createStdioSupervisor, type StdioChannel, type StdioExit, type StdioSupervisor } from './supervisor.js';
import { exists, fixture, NODE } from './test-helpers.js';

const supervisors: StdioSupervisor[] = [];

afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
});

async function echoServer(serverId = 'srv_echo'): Promise<{ stdio: StdioSupervisor; channel: StdioChannel }> {
  const stdio = createStdioSupervisor({ commands: [NODE], killGraceMs: 500 });
  supervisors.push(stdio);
  const channel = await stdio.acquire('acct_a', serverId, { command: NODE, args: [fixture('echo-server.mjs')] });
  return { stdio, channel };
}

/** A transport that records what it hears, with a helper that awaits the next messages. */
function recorded(transport: StdioChannelTransport) {
  const messages: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  let closes = 0;
  const waiters: (() => void)[] = [];
  transport.onmessage = (message) => {
    messages.push(message);
    for (const wake of waiters.splice(0)) wake();
  };
  transport.onerror = (error) => errors.push(error);
  transport.onclose = () => {
    closes += 1;
  };
  return {
    messages,
    errors,
    closes: () => closes,
    async until(count: number, timeoutMs = 5000): Promise<JSONRPCMessage[]> {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`only ${messages.length} of ${count} messages arrived`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return messages;
    },
  };
}

/** A channel driven by the test: what the "process" writes is pushed by hand. */
function fakeChannel() {
  const data = new Set<(chunk: Buffer) => void>();
  const exits = new Set<(exit: StdioExit) => void>();
  const written: string[] = [];
  let alive = true;
  const channel: StdioChannel = {
    account: 'acct_a',
    serverId: 'srv_fake',
    pid: 1,
    startedAt: 0,
    exitSummary: () => undefined,
    get alive() {
      return alive;
    },
    write: async (chunk) => {
      written.push(String(chunk));
    },
    onData: (listener) => {
      data.add(listener);
      return () => data.delete(listener);
    },
    onExit: (listener) => {
      exits.add(listener);
      return () => exits.delete(listener);
    },
    exited: new Promise(() => {}),
    stderrTail: () => '',
  };
  return {
    channel,
    written,
    emit: (chunk: string | Buffer) => {
      for (const listener of [...data]) listener(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    },
    exit: () => {
      alive = false;
      for (const listener of [...exits]) listener({ code: 0, signal: null, reason: 'exited' });
    },
    listeners: () => data.size + exits.size,
  };
}

const line = (message: object) => `${JSON.stringify(message)}\n`;

describe('StdioChannelTransport over a real process', () => {
  it('round-trips a JSON-RPC request', async () => {
    const { channel } = await echoServer();
    const transport = new StdioChannelTransport(channel);
    const heard = recorded(transport);
    await transport.start();
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(await heard.until(1)).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    expect(heard.errors).toEqual([]);
  });

  it('carries the MCP client: initialize, tools/list, tools/call', async () => {
    const { channel } = await echoServer();
    const client = new Client({ name: 'mcp-fleet-test', version: '0.0.0' });
    await client.connect(new StdioChannelTransport(channel));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['echo']);
    const result = await client.callTool({ name: 'echo', arguments: { hello: 'world' } });
    expect(result.content).toEqual([{ type: 'text', text: '{"hello":"world"}' }]);
    await client.close();
    expect(channel.alive).toBe(true);
  });

  it('joins a message written in several chunks, cut inside a multi-byte character', async () => {
    const { channel } = await echoServer();
    const transport = new StdioChannelTransport(channel);
    const heard = recorded(transport);
    await transport.start();
    await transport.send({ jsonrpc: '2.0', id: 7, method: 'test/split' });
    expect(await heard.until(1)).toEqual([{ jsonrpc: '2.0', id: 7, result: { text: 'héllo ✓' } }]);
  });

  it('splits several messages of one chunk, with CRLF and blank lines', async () => {
    const { channel } = await echoServer();
    const transport = new StdioChannelTransport(channel);
    const heard = recorded(transport);
    await transport.start();
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'test/burst' });
    const [notification, response] = await heard.until(2);
    expect(notification).toMatchObject({ method: 'notifications/message', params: { data: 'first' } });
    expect(response).toEqual({ jsonrpc: '2.0', id: 2, result: { burst: true } });
    expect(heard.errors).toEqual([]);
  });

  it('reports malformed lines to onerror without quoting them, and keeps reading', async () => {
    const { channel } = await echoServer();
    const transport = new StdioChannelTransport(channel);
    const heard = recorded(transport);
    await transport.start();
    await transport.send({ jsonrpc: '2.0', id: 3, method: 'test/garbage' });
    expect(await heard.until(1)).toEqual([{ jsonrpc: '2.0', id: 3, result: { after: 'garbage' } }]);
    expect(heard.errors).toHaveLength(2);
    for (const error of heard.errors) {
      expect(error).toMatchObject({ code: 'UPSTREAM_PROTOCOL_ERROR' });
      expect(`${error.message} ${String(error.cause)}`).not.toContain('secret-in-garbage');
    }
    expect(channel.alive).toBe(true);
    await transport.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
    expect((await heard.until(2))[1]).toEqual({ jsonrpc: '2.0', id: 4, result: {} });
  });

  it('close() detaches without ending the process; a new transport can use it', async () => {
    const { stdio, channel } = await echoServer();
    const first = new StdioChannelTransport(channel);
    const heard = recorded(first);
    await first.start();
    await first.close();
    await first.close();
    expect(heard.closes()).toBe(1);
    expect(channel.alive).toBe(true);
    expect(exists(channel.pid)).toBe(true);
    await expect(first.send({ jsonrpc: '2.0', id: 1, method: 'ping' })).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });

    const again = await stdio.acquire('acct_a', 'srv_echo', { command: NODE, args: [fixture('echo-server.mjs')] });
    expect(again.pid).toBe(channel.pid);
    const second = new StdioChannelTransport(again);
    const heardAgain = recorded(second);
    await second.start();
    await second.send({ jsonrpc: '2.0', id: 5, method: 'ping' });
    expect(await heardAgain.until(1)).toEqual([{ jsonrpc: '2.0', id: 5, result: {} }]);
    expect(heard.messages).toEqual([]);
  });

  it('fires onclose when the process exits, and refuses to start on a dead channel', async () => {
    const { stdio, channel } = await echoServer();
    const transport = new StdioChannelTransport(channel);
    const heard = recorded(transport);
    await transport.start();
    await stdio.stop('srv_echo');
    expect(heard.closes()).toBe(1);
    await expect(transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' })).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
    await expect(new StdioChannelTransport(channel).start()).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
  });
});

describe('StdioChannelTransport sharing a process', () => {
  it('lets one transport talk at a time: a second start() waits until the first closes', async () => {
    const { channel } = await echoServer();
    const first = new StdioChannelTransport(channel);
    const second = new StdioChannelTransport(channel);
    const heardFirst = recorded(first);
    const heardSecond = recorded(second);
    await first.start();
    let secondStarted = false;
    const starting = second.start().then(() => {
      secondStarted = true;
    });
    await first.send({ jsonrpc: '2.0', id: 0, method: 'ping' });
    await heardFirst.until(1);
    expect(secondStarted).toBe(false);
    await first.close();
    await starting;
    await second.send({ jsonrpc: '2.0', id: 0, method: 'test/pid' });
    expect(await heardSecond.until(1)).toEqual([{ jsonrpc: '2.0', id: 0, result: { pid: channel.pid } }]);
    expect(heardFirst.messages).toHaveLength(1);
  });

  it('a waiting start() fails when the transport is closed, its signal aborts, or the process exits', async () => {
    const { stdio, channel } = await echoServer();
    const holder = new StdioChannelTransport(channel);
    await holder.start();

    const closedEarly = new StdioChannelTransport(channel);
    const closing = closedEarly.start();
    await closedEarly.close();
    await expect(closing).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });

    const controller = new AbortController();
    const aborting = new StdioChannelTransport(channel, { signal: controller.signal }).start();
    controller.abort(new Error('deadline'));
    await expect(aborting).rejects.toThrow('deadline');

    const orphaned = expect(new StdioChannelTransport(channel).start()).rejects.toMatchObject({ code: 'UPSTREAM_UNREACHABLE' });
    await stdio.stop('srv_echo');
    await orphaned;
  });

  it('serves one MCP client after another on the same process (a real SDK server, initialized twice)', async () => {
    const everything = fileURLToPath(new URL('../../../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url));
    const stdio = createStdioSupervisor({ commands: [NODE], killGraceMs: 500 });
    supervisors.push(stdio);
    const config = { command: NODE, args: [everything, 'stdio'] };
    const pids: number[] = [];
    for (const round of [1, 2]) {
      const channel = await stdio.acquire('acct_a', 'srv_everything', config);
      pids.push(channel.pid);
      const client = new Client({ name: `round-${round}`, version: '0.0.0' });
      await client.connect(new StdioChannelTransport(channel));
      const result = await client.callTool({ name: 'echo', arguments: { message: `hello ${round}` } });
      expect(result.content).toEqual([{ type: 'text', text: `Echo: hello ${round}` }]);
      await client.close();
    }
    expect(pids[1]).toBe(pids[0]);
  });
});

describe('StdioChannelTransport framing', () => {
  it('writes one message per line', async () => {
    const fake = fakeChannel();
    const transport = new StdioChannelTransport(fake.channel);
    await transport.start();
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    expect(fake.written).toEqual([line({ jsonrpc: '2.0', id: 1, method: 'ping' }), line({ jsonrpc: '2.0', method: 'notifications/initialized' })]);
  });

  it('reassembles lines split at every byte', async () => {
    const fake = fakeChannel();
    const transport = new StdioChannelTransport(fake.channel);
    const heard = recorded(transport);
    await transport.start();
    const bytes = Buffer.from(line({ jsonrpc: '2.0', id: 1, result: { text: 'ünïcødé 🚀' } }) + line({ jsonrpc: '2.0', id: 2, result: {} }));
    for (let i = 0; i < bytes.length; i += 1) fake.emit(bytes.subarray(i, i + 1));
    expect(heard.messages).toEqual([
      { jsonrpc: '2.0', id: 1, result: { text: 'ünïcødé 🚀' } },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
  });

  it('keeps a partial line until its newline, and drops an unterminated tail at exit', async () => {
    const fake = fakeChannel();
    const transport = new StdioChannelTransport(fake.channel);
    const heard = recorded(transport);
    await transport.start();
    fake.emit(`${line({ jsonrpc: '2.0', id: 1, result: {} })}{"jsonrpc":"2.0",`);
    expect(heard.messages).toHaveLength(1);
    fake.emit('"id":2,"result":{}}\n{"jsonrpc"');
    expect(heard.messages).toHaveLength(2);
    fake.exit();
    expect(heard.closes()).toBe(1);
    expect(heard.errors).toEqual([]);
    expect(fake.listeners()).toBe(0);
  });

  it('ends the connection on a line longer than the limit, with UPSTREAM_RESPONSE_TOO_LARGE as its failure', async () => {
    const fake = fakeChannel();
    let oversize = 0;
    const transport = new StdioChannelTransport(fake.channel, { maxLineBytes: 64, onOversize: () => (oversize += 1) });
    const heard = recorded(transport);
    await transport.start();
    fake.emit(line({ jsonrpc: '2.0', id: 1, result: {} }));
    fake.emit(`{"jsonrpc":"2.0","id":2,"result":{"big":"${'x'.repeat(40)}`);
    fake.emit(`${'y'.repeat(100)}`);
    fake.emit(`"}}\n${line({ jsonrpc: '2.0', id: 3, result: {} })}`);
    // An answer past the bound is the hardening rule's UPSTREAM_RESPONSE_TOO_LARGE; nothing after it is read.
    expect(heard.messages).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    expect(heard.errors.map((e) => (e as { code?: string }).code)).toEqual(['UPSTREAM_RESPONSE_TOO_LARGE']);
    expect(transport.failure?.code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    expect(heard.closes()).toBe(1);
    expect(oversize).toBe(1);
    expect(fake.listeners()).toBe(0);
  });

  it('ends the connection when a complete line in one chunk is past the limit', async () => {
    const fake = fakeChannel();
    const transport = new StdioChannelTransport(fake.channel, { maxLineBytes: 64 });
    const heard = recorded(transport);
    await transport.start();
    fake.emit(`${'z'.repeat(80)}\n${line({ jsonrpc: '2.0', id: 2, result: {} })}`);
    expect(heard.messages).toEqual([]);
    expect(transport.failure?.code).toBe('UPSTREAM_RESPONSE_TOO_LARGE');
    expect(heard.closes()).toBe(1);
  });

  it('turns valid JSON that is not JSON-RPC, and a throwing onmessage, into onerror', async () => {
    const fake = fakeChannel();
    const transport = new StdioChannelTransport(fake.channel);
    const heard = recorded(transport);
    await transport.start();
    fake.emit('[1,2,3]\n{"jsonrpc":"1.0","id":1}\n42\n');
    expect(heard.errors).toHaveLength(3);
    transport.onmessage = () => {
      throw new Error('handler failed');
    };
    fake.emit(line({ jsonrpc: '2.0', id: 9, result: {} }));
    expect(heard.errors.at(-1)?.message).toBe('handler failed');
  });

  it('starts once', async () => {
    const transport = new StdioChannelTransport(fakeChannel().channel);
    await transport.start();
    await expect(transport.start()).rejects.toThrow(/already started/);
  });
});
