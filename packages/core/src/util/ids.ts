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
  return randomAfter('', length);
}

/**
 * `prefix` and `length` random characters, made into one string at the end: one allocation, not one per character,
 * and a flat string. `prefix + randomToken(n)` would be V8's pair of references to the two parts, kept as three
 * objects for as long as the string lives (an id lives as long as its record, and is a key in several maps).
 */
function randomAfter(prefix: string, length: number): string {
  const codes = new Array<number>(prefix.length + length);
  for (let i = 0; i < prefix.length; i++) codes[i] = prefix.charCodeAt(i);
  for (let i = prefix.length; i < codes.length; ) {
    const byte = randomByte();
    if (byte < UNBIASED_LIMIT) codes[i++] = CODES[byte % 62] as number;
  }
  if (codes.length <= CHUNK) return String.fromCharCode(...codes);
  let out = '';
  for (let at = 0; at < codes.length; at += CHUNK) out += String.fromCharCode(...codes.slice(at, at + CHUNK));
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
  return randomAfter(ID_PREFIXES[kind], 24);
}

/** True when `value` has the exact form of an identifier of this kind. */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIXES[kind];
  return value.length === prefix.length + 24 && value.startsWith(prefix) && /^[0-9A-Za-z]{24}$/.test(value.slice(prefix.length));
}
