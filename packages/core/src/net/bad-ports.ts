import { FleetError, type UpstreamError } from '../errors/fleet-error.js';
import { checkDestination, isGuardedAgent } from './guarded-agent.js';
import { classifyUndiciError } from './upstream-error.js';

/**
 * The Fetch standard's "bad ports": fetch (and undici's WebSocket handshake, which is a fetch) fails on them before
 * any connection, with a bare `Error('bad port')`, so the guard's connector never sees the address and the failure
 * reads like anything else. `http://127.0.0.1:9/mcp` is what a newcomer types for "nothing there".
 */
const BAD_PORTS = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117,
  119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636,
  989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Whether `url` is one fetch refuses for its port (an http or ws URL on a "bad port"): what `badPortRefusal` judges. */
export function hasBadPort(url: URL): boolean {
  return BAD_PORTS.has(Number(url.port)) && /^(https?|wss?):$/.test(url.protocol);
}

/**
 * What a request to `url` through `dispatcher` would fail with for its port alone: the guard's refusal first (a
 * refused destination is refused whatever the port, and that answer says what to change), else the port itself
 * as `UPSTREAM_UNREACHABLE`. `undefined` for an ordinary port, or a dispatcher that is not a guarded agent.
 */
export async function badPortRefusal(dispatcher: unknown, url: URL): Promise<UpstreamError | undefined> {
  if (!isGuardedAgent(dispatcher) || !hasBadPort(url)) return undefined;
  try {
    await checkDestination(dispatcher, url.hostname);
  } catch (refusal) {
    // The guard's own FleetError as it is; a name that does not resolve, as any other network failure.
    return classifyUndiciError(refusal);
  }
  const message = `Port ${url.port} is one that fetch never connects to (a "bad port" of the Fetch standard); use another port.`;
  return new FleetError('UPSTREAM_UNREACHABLE', { message });
}
