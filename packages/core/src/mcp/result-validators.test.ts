import { Client, InMemoryTransport, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { keepResultValidators } from './result-validators.js';

// keepResultValidators hands the SDK's Client.request the validation it would make itself: the same results pass,
// the same malformed results fail with the same message, and other methods and explicit schemas are untouched.

/** A client connected to a scripted 2025 server answering `tools/call` with `result` (and `ping` with `{}`). */
async function connected(result: unknown, kept: boolean): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  serverSide.onmessage = (message: JSONRPCMessage) => {
    if (!('id' in message) || !('method' in message)) return;
    const answer =
      message.method === 'initialize'
        ? { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'scripted', version: '1.0.0' } }
        : message.method === 'tools/call'
          ? result
          : {};
    void serverSide.send({ jsonrpc: '2.0', id: message.id, result: answer } as JSONRPCMessage);
  };
  await serverSide.start();
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  if (kept) keepResultValidators(client);
  return client;
}

const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error: (error as Error).message, name: (error as Error).name }),
  );

describe('keepResultValidators', () => {
  it('answers what Client.request answers, for a good result and for malformed ones', async () => {
    const results: unknown[] = [
      { content: [{ type: 'text', text: 'pong' }] },
      { content: [{ type: 'text', text: 'x' }], structuredContent: { a: 1 }, isError: false },
      {},
      { content: 'not an array' },
      { content: [{ type: 'nonsense' }] },
      { content: [], isError: 'yes' },
    ];
    for (const result of results) {
      const [plain, kept] = await Promise.all([connected(result, false), connected(result, true)]);
      const call = (client: Client) => outcome(client.callTool({ name: 'ping', arguments: {} }));
      expect(await call(kept), JSON.stringify(result)).toEqual(await call(plain));
      expect(await outcome(kept.ping())).toEqual(await outcome(plain.ping()));
      await Promise.all([plain.close(), kept.close()]);
    }
  });

  it('fails a malformed result as invalid, with the codec message (the test can fail)', async () => {
    const client = await connected({ content: 'not an array' }, true);
    const failed = await outcome(client.callTool({ name: 'ping', arguments: {} }));
    expect(failed).toMatchObject({ error: expect.stringContaining('Invalid result for tools/call') });
    await client.close();
  });

  it('passes an explicit result schema through as given', async () => {
    const client = await connected({ content: [{ type: 'text', text: 'pong' }] }, true);
    const seen: unknown[] = [];
    const schema = {
      '~standard': {
        version: 1 as const,
        vendor: 'test',
        validate: (value: unknown) => {
          seen.push(value);
          return { value: { mine: true } };
        },
      },
    };
    expect(await client.request({ method: 'tools/call', params: { name: 'ping', arguments: {} } }, schema as never)).toEqual({ mine: true });
    expect(seen).toHaveLength(1);
    await client.close();
  });
});
