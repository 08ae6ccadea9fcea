/**
 * An Express app that has routes of its own and mounts mcp-fleet under /api.
 *   PORT=3001 npm start -w examples/express-app
 * The fleet is mounted before express.json(), which only the app's own routes use.
 */
import type { AddressInfo } from 'node:net';
import { createFleet } from '@mcp-fleet/core';
import { fleetMiddleware } from '@mcp-fleet/express';
import express from 'express';

const fleet = createFleet();
const { secret } = (await fleet.keys.create({ account: 'demo', tier: 'pro' }))._unsafeUnwrap();

const app = express();
app.use('/api', fleetMiddleware(fleet)); // → /api/v1/servers, /api/v1/tool-calls
app.get('/', (_req, res) => {
  res.json({ app: 'my-app', fleet: '/api/v1/servers' });
});
app.post('/notes', express.json(), (req, res) => {
  res.status(201).json({ saved: req.body });
});

const port = Number(process.env.PORT ?? 3001);
const server = app.listen(port, process.env.HOST ?? '127.0.0.1', (error) => {
  if (error) {
    console.error(`my-app: cannot listen: ${error.message}`);
    process.exit(1);
  }
  // The bound address, not the requested one: PORT=0 picks a free port.
  const { address, family, port: bound } = server.address() as AddressInfo;
  const origin = `http://${family === 'IPv6' ? `[${address}]` : address}:${bound}`;
  console.log(`my-app on ${origin} — try:\n  curl -H "Authorization: Bearer ${secret}" ${origin}/api/v1/servers`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
