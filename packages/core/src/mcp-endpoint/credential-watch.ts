import type { Principal } from '../auth/scopes.js';

/** A stream held open on `/mcp` on the strength of a credential: a 2025 session (its GET stream) or a 2026-07-28 listen. */
export interface HeldStream {
  /** The credential the stream was last authenticated with. */
  principal(): Principal;
  /** Ends the stream (and, for a 2025 session, the session). */
  close(): void;
}

/**
 * Tells whether an API key still works: `false` once it is revoked, expired or gone; `true` when it works or the
 * storage cannot say (a store outage does not cut every listener off; the key's next request is checked as always).
 */
export type KeyLive = (keyId: string) => Promise<boolean>;

/**
 * A stream outlives the request that opened it: every message is authenticated, but a notification stream opened
 * before its key was revoked, or before its key or token expired, would go on hearing the account's changes. The
 * watch ends such streams: the endpoint calls `revoked` on a `key.revoked` of this process (at once), and `check`
 * every `credentialCheckMs` (a key revoked in another process sharing the store; a credential past its `expiresAt`).
 */
export class CredentialWatch {
  constructor(private readonly keyLive: KeyLive | undefined) {}

  /** Ends the streams held by `keyId`. */
  revoked(keyId: string, held: Iterable<HeldStream>): void {
    for (const stream of [...held]) if (stream.principal().keyId === keyId) stream.close();
  }

  /** Ends the streams whose credential expired or whose key no longer works: one read per distinct key. */
  async check(held: Iterable<HeldStream>, now: number): Promise<void> {
    const byKey = new Map<string, HeldStream[]>();
    for (const stream of [...held]) {
      const { expiresAt, keyId } = stream.principal();
      if (typeof expiresAt === 'string' && !(Date.parse(expiresAt) > now)) stream.close();
      else if (keyId !== undefined && this.keyLive !== undefined) {
        const streams = byKey.get(keyId);
        if (streams === undefined) byKey.set(keyId, [stream]);
        else streams.push(stream);
      }
    }
    const keyLive = this.keyLive;
    if (keyLive === undefined) return;
    await Promise.all(
      [...byKey].map(async ([keyId, streams]) => {
        if (!(await keyLive(keyId).catch(() => true))) for (const stream of streams) stream.close();
      }),
    );
  }
}
