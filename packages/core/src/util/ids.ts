import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
// 62 * 4 = 248: bytes at or above it are dropped so every character is equally likely.
const UNBIASED_LIMIT = 248;

/**
 * Bytes from the system's CSPRNG, drawn 4 KiB at a time and each handed out once: a request id costs no call into
 * the kernel's generator of its own (one in about 130 ids does). A byte used is never used again.
 */
const POOL = new Uint8Array(4096);
let poolAt = POOL.length;

function randomByte(): number {
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  return POOL[poolAt++] as number;
}

const CODES = Array.from(ALPHABET, (char) => char.charCodeAt(0));
/** Characters per `fromCharCode` call: a spread of a long array would overflow the stack. */
const CHUNK = 1024;

/** `length` characters of `[0-9A-Za-z]` from the system's CSPRNG. */
export function randomToken(length: number): string {
  // Character codes made into one string at the end: one allocation, not one per character.
  const codes = new Array<number>(length);
  for (let i = 0; i < length; ) {
    const byte = randomByte();
    if (byte < UNBIASED_LIMIT) codes[i++] = CODES[byte % 62] as number;
  }
  if (length <= CHUNK) return String.fromCharCode(...codes);
  let out = '';
  for (let at = 0; at < length; at += CHUNK) out += String.fromCharCode(...codes.slice(at, at + CHUNK));
  return out;
}

export const ID_PREFIXES = {
  server: 'srv_',
  toolCall: 'call_',
  webhook: 'wh_',
  event: 'evt_',
  delivery: 'dlv_',
  request: 'req_',
  apiKey: 'key_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** A new identifier of the given kind: its prefix and 24 random characters. */
export function newId(kind: IdKind): string {
  return ID_PREFIXES[kind] + randomToken(24);
}

/** True when `value` has the exact form of an identifier of this kind. */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIXES[kind];
  return value.length === prefix.length + 24 && value.startsWith(prefix) && /^[0-9A-Za-z]{24}$/.test(value.slice(prefix.length));
}
