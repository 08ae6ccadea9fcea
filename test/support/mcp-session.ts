import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** A 2025-era session at `{url}/mcp` with an API key; `end()` deletes it (`DELETE /mcp`) and closes the client. */
export async function openSession(url: string, key: string): Promise<{ client: V1Client; transport: V1Transport; end(): Promise<void> }> {
  const client = new V1Client({ name: 'session-test', version: '1.0.0' });
  const transport = new V1Transport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  return {
    client,
    transport,
    end: async () => {
      await transport.terminateSession();
      await client.close();
    },
  };
}
