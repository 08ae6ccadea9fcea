/**
 * `text` with every secret replaced by `mask`, longest first (one secret may contain another); empty ones ignored.
 * The one redaction of the project: stdio stderr tails, store connection errors.
 */
export function redact(text: string, secrets: readonly string[], mask = '***'): string {
  let out = text;
  for (const secret of [...secrets].filter((s) => s !== '').sort((a, b) => b.length - a.length)) out = out.split(secret).join(mask);
  return out;
}

/** A store's connection URL, parsed, with the spellings of its password (raw and decoded) to keep out of messages. */
export interface StoreUrl {
  url: URL;
  secrets: string[];
}

/**
 * Parses the connection URL a store was given. A message never carries the input (URL's own error would, password
 * included): `what` names the option (`createRedisStore: url`), `expected` shows a well-formed one.
 */
export function parseStoreUrl(text: string, what: string, protocols: readonly string[], expected: string): StoreUrl {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError(`${what} is not a URL; expected ${expected}`);
  }
  if (!protocols.includes(url.protocol)) throw new TypeError(`${what} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  let decoded = url.password;
  try {
    decoded = decodeURIComponent(url.password);
  } catch {
    // A malformed escape: authentication will fail, and the raw spelling is the one to hide.
  }
  return { url, secrets: [...new Set([url.password, decoded])].filter((secret) => secret !== '') };
}
