import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { err, errAsync, ok, okAsync, type Result, ResultAsync } from 'neverthrow';
import { FleetError } from '../errors/fleet-error.js';
import { type Ran, chain, chainMap } from './result.js';

/** A 32-byte key as an option takes it: bytes, or their base64 (standard or url-safe). */
export type EncryptionKey = Uint8Array | string;

/**
 * The envelope of a secret at rest: `enc:v1:<kid>:<iv>:<tag>:<ciphertext>`, the last three base64url. `kid` is the
 * first 8 hex digits of SHA-256 over `mcp-fleet key id:` and the key, so it names the key without revealing it.
 * AES-256-GCM with a fresh 96-bit IV per value; the additional data is the value's place (`server:<id>:token`), so a
 * ciphertext copied into another record or field does not open there.
 */
const PREFIX = 'enc:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

interface Key {
  kid: string;
  bytes: Buffer;
}

/** Whether a stored value is an envelope (anything else is plaintext written before encryption was on). */
export function isSealed(value: string): boolean {
  return value.startsWith(PREFIX);
}

/** The key id an envelope names; `undefined` for plaintext. */
export function kidOf(value: string): string | undefined {
  return isSealed(value) ? value.slice(PREFIX.length).split(':', 1)[0] : undefined;
}

export function keyId(bytes: Uint8Array): string {
  return createHash('sha256').update('mcp-fleet key id:').update(bytes).digest('hex').slice(0, 8);
}

/** Checks a key option at construction; the message names the option, never the value. */
export function checkKey(name: string, value: unknown): Buffer {
  const says = `mcp-fleet: ${name} must be 32 bytes: a Uint8Array (Buffer) or their base64, e.g. from \`openssl rand -base64 32\``;
  let bytes: Buffer | undefined;
  if (value instanceof Uint8Array) bytes = Buffer.from(value);
  else if (typeof value === 'string') {
    const text = value.trim();
    if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) bytes = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  }
  if (bytes?.length !== 32) throw new TypeError(says);
  return bytes;
}

/** Why a stored secret could not be opened; the message names the options that fix it, never a value. */
export function unreadableSecret(kid: string | undefined, cause?: unknown): FleetError {
  const which = kid === undefined ? 'a key' : `the key with id ${kid}`;
  return new FleetError('INTERNAL_ERROR', {
    message: `A stored secret was encrypted with ${which}, which neither encryptionKey nor previousKeys opens: set encryptionKey (reference server: MCP_FLEET_ENCRYPTION_KEY) to that key, or add it to previousKeys (MCP_FLEET_PREVIOUS_ENCRYPTION_KEYS).`,
    cause,
  });
}

export interface SecretBoxOptions {
  /** Seals new secrets; absent: new secrets are stored as they are (plaintext). */
  current?: EncryptionKey | undefined;
  /** Still open what they sealed. */
  previous?: readonly EncryptionKey[] | undefined;
}

/**
 * Seals and opens the secrets of records (server credentials and env values, webhook secrets) under the fleet's
 * keys. Every use waits for the start check (`gate`): a fleet whose keys do not open the store's check value writes
 * and reads no secret, so nothing is sealed under a wrong key.
 */
/** Opened secrets remembered at most (see `SecretBox.opened`). */
const OPENED_MAX = 1000;

export class SecretBox {
  readonly current: Key | undefined;
  private readonly keys = new Map<string, Key>();
  /** The start check every use waits for; run again after a storage failure, so an outage at start heals. */
  private check: (() => Promise<FleetError | undefined>) | undefined;
  private pending: Promise<FleetError | undefined> | undefined;
  /** The verdict of `pending` once it settled for good: `null` passed, else its error (`gate` answers it at once). */
  private verdict: FleetError | null | undefined;
  /**
   * Plaintexts of sealed values opened lately, by place and sealed value: every tool call opens its server's token,
   * and the same ciphertext under the same keys always opens to the same plaintext (a new seal has a new IV, so an
   * updated secret is another entry). At most {@link OPENED_MAX}, oldest dropped first.
   */
  private readonly opened = new Map<string, string>();

  constructor(options: SecretBoxOptions = {}) {
    if (options.current !== undefined) {
      const bytes = checkKey('encryptionKey', options.current);
      this.current = { kid: keyId(bytes), bytes };
      this.keys.set(this.current.kid, this.current);
    }
    (options.previous ?? []).forEach((value, i) => {
      const bytes = checkKey(`previousKeys[${i}]`, value);
      const kid = keyId(bytes);
      if (!this.keys.has(kid)) this.keys.set(kid, { kid, bytes });
    });
  }

  /** Runs the start check that every use waits for; if it fails, every use fails with its error. */
  startCheck(run: () => Promise<FleetError | undefined>): Promise<FleetError | undefined> {
    this.check = run;
    return this.runCheck(run);
  }

  private runCheck(run: () => Promise<FleetError | undefined>): Promise<FleetError | undefined> {
    const pending = run();
    this.pending = pending;
    this.verdict = undefined;
    void pending.then((error) => {
      if (this.pending !== pending) return;
      if (error?.code === 'STORAGE_UNAVAILABLE') this.pending = undefined;
      else this.verdict = error ?? null;
    });
    return pending;
  }

  /**
   * The start check every use goes through: at once when there is none or when it has settled (an outage, which runs
   * the check again on the next use, is not a verdict); while it runs, a `ResultAsync` that waits for it.
   */
  private gate(): Ran<void, FleetError> {
    if (this.check === undefined) return ok(undefined);
    if (this.pending !== undefined && this.verdict !== undefined) return this.verdict === null ? ok(undefined) : err(this.verdict);
    const pending = this.pending ?? this.runCheck(this.check);
    return new ResultAsync(pending.then((error) => (error === undefined ? ok(undefined) : err(error))));
  }

  /** Whether a stored value must be sealed again to be under the current key. */
  isStale(value: string): boolean {
    return this.current !== undefined && kidOf(value) !== this.current.kid;
  }

  knows(kid: string): boolean {
    return this.keys.has(kid);
  }

  /**
   * `value` sealed under the current key, or as it is without one. `place` binds the ciphertext to where it is stored.
   * Through the start check, as `open` is: at once once it has settled.
   */
  seal(value: string, place: string): Ran<string, FleetError> {
    return chainMap(this.gate(), () => this.sealUnchecked(value, place));
  }

  /**
   * The plaintext of a stored value (plaintext stays as it is), through the start check: at once once it has settled
   * (a plaintext, a value opened lately, or one AES-GCM decryption).
   */
  open(value: string, place: string): Ran<string, FleetError> {
    return chain(this.gate(), () => this.openAtOnce(value, place));
  }

  /** `seal` without the start check: for the check itself, which the gate waits for. */
  sealUnchecked(value: string, place: string): string {
    const key = this.current;
    if (key === undefined) return value;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key.bytes, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(place, 'utf8'));
    const data = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return `${PREFIX}${key.kid}:${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${data.toString('base64url')}`;
  }

  /** `open` without the start check: for the check itself, which the gate waits for. */
  openUnchecked(value: string, place: string): Result<string, FleetError> {
    return this.openAtOnce(value, place);
  }

  private openAtOnce(value: string, place: string): Result<string, FleetError> {
    if (!isSealed(value)) return ok(value);
    const memo = `${place}\n${value}`;
    const known = this.opened.get(memo);
    if (known !== undefined) return ok(known);
    return this.decrypt(value, place).map((plain) => {
      if (this.opened.size >= OPENED_MAX) this.opened.delete(this.opened.keys().next().value as string);
      this.opened.set(memo, plain);
      return plain;
    });
  }

  private decrypt(value: string, place: string): Result<string, FleetError> {
    const [kid, iv, tag, data] = value.slice(PREFIX.length).split(':');
    const key = kid === undefined ? undefined : this.keys.get(kid);
    if (key === undefined || iv === undefined || tag === undefined || data === undefined) return err(unreadableSecret(kid));
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(place, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return ok(Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8'));
    } catch (cause) {
      return err(unreadableSecret(kid, cause));
    }
  }
}
