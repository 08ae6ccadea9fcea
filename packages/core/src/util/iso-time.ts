import { z } from 'zod';

/** A time as every answer writes it: ISO 8601 in UTC with milliseconds (`Date.prototype.toISOString`). */
export const isoTimeSchema = z.iso.datetime({ precision: 3 });

/**
 * `new Date(ms).toISOString()`, made again only when `ms` moves: many answers and creates share a millisecond, and the
 * text is a fresh string each time otherwise. One per clock that asks (the handler's envelopes, a registry's creates).
 */
export function isoTimeOf(): (ms: number) => string {
  let at = Number.NaN;
  let text = '';
  return (ms) => {
    if (ms !== at) {
      text = new Date(ms).toISOString();
      at = ms;
    }
    return text;
  };
}
