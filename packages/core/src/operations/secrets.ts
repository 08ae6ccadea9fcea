import { err, errAsync, ok, okAsync, type ResultAsync } from 'neverthrow';
import { FleetError } from '../errors/fleet-error.js';
import type { ServerRegistry } from '../registry/registry.js';
import type { RecordStore } from '../storage/records.js';
import { type SecretBox, unreadableSecret } from '../util/secret-box.js';
import { all, okWith, chain, toAsync } from '../util/result.js';

/** What `fleet.secrets.rotate()` wrote: the records whose secrets it sealed again under the current key. */
export interface RotationCounts {
  servers: number;
  webhooks: number;
}

/** The secrets at rest of a fleet (docs/security.md, "Secrets at rest"). */
export interface SecretsApi {
  /**
   * Seals every stored secret (server credentials and `env` values, webhook secrets) that is plaintext or under a
   * key of `previousKeys` again under `encryptionKey`, then forgets the older keys' check values: afterwards a start
   * with `encryptionKey` alone opens everything. Safe to run again, and while the fleet serves.
   */
  rotate(): ResultAsync<RotationCounts, FleetError>;
}

/**
 * The store's check values: for each key that may have sealed a secret in it, a known text sealed under that key.
 * A start whose keys do not open every one of them fails, before any secret is written under a wrong key.
 */
const CHECK_KEY = 'secrets:check';
const CHECK_TEXT = 'mcp-fleet secrets check';
interface CheckRecord {
  checks: Record<string, string>;
}

function keysMissing(kids: string[], hasKey: boolean): FleetError {
  const which = `the key${kids.length > 1 ? 's' : ''} with id ${kids.join(', ')}`;
  const fix = hasKey
    ? 'set encryptionKey (reference server: MCP_FLEET_ENCRYPTION_KEY) to it, or add it to previousKeys (MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS) and run fleet.secrets.rotate() (reference server: npm run secrets -- rotate)'
    : 'set encryptionKey (reference server: MCP_FLEET_ENCRYPTION_KEY) to it';
  return new FleetError('INTERNAL_ERROR', {
    message: `The store holds secrets encrypted with ${which}, which neither encryptionKey nor previousKeys is: ${fix}.`,
  });
}

/** The start check: every key the store names opens its check value; the current key gets one if it has none. */
export function checkStoreKeys(records: RecordStore, box: SecretBox): Promise<FleetError | undefined> {
  return toAsync(records.get<CheckRecord>(CHECK_KEY))
    .andThen((stored) => {
      const checks = stored?.checks ?? {};
      const missing = Object.keys(checks).filter((kid) => !box.knows(kid));
      if (missing.length > 0) return errAsync(keysMissing(missing, box.current !== undefined));
      const opened = Object.entries(checks).map(([kid, value]) =>
        box.openUnchecked(value, CHECK_KEY).andThen((text) => (text === CHECK_TEXT ? ok(undefined) : err(unreadableSecret(kid)))),
      );
      return toAsync(all(opened)).andThen(() => {
        const current = box.current;
        if (current === undefined || checks[current.kid] !== undefined) return ok(undefined);
        // Sealed without the check: this is the check, which the gate waits for.
        return records.set(CHECK_KEY, { checks: { ...checks, [current.kid]: box.sealUnchecked(CHECK_TEXT, CHECK_KEY) } } satisfies CheckRecord);
      });
    })
    .match(
      () => undefined,
      (error) => error,
    );
}

export function createSecrets(deps: {
  records: RecordStore;
  box: SecretBox;
  registry: ServerRegistry;
  webhooks: { rotateSecrets(): ResultAsync<number, FleetError> } | undefined;
}): SecretsApi {
  const { records, box, registry, webhooks } = deps;
  return {
    rotate: () => {
      const current = box.current;
      if (current === undefined) {
        return errAsync(
          new FleetError('INTERNAL_ERROR', {
            message: 'Rotating secrets needs the key to encrypt under: set encryptionKey (reference server: MCP_FLEET_ENCRYPTION_KEY).',
          }),
        );
      }
      return registry.rotateSecrets().andThen((servers) =>
        (webhooks?.rotateSecrets() ?? okAsync(0)).andThen((rotatedWebhooks) =>
          // Everything is under the current key now: older keys are no longer needed to start.
          toAsync(chain(box.seal(CHECK_TEXT, CHECK_KEY), (sealed) => records.set(CHECK_KEY, { checks: { [current.kid]: sealed } } satisfies CheckRecord))).andThen(
            okWith(() => ({ servers, webhooks: rotatedWebhooks })),
          ),
        ),
      );
    },
  };
}
