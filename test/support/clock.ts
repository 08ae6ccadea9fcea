/**
 * A stopped clock a few seconds into the next real minute: one rate-limit window for everything a suite does, whatever
 * minute it runs in, so no count a test reads is reset by a minute that ends between two of its requests. (A
 * PostgreSQL or Redis store ends a window at the database's clock or at an absolute expiry, which must not be past
 * this one: hence the next minute, not the current one.)
 */
export function oneWindow(): () => number {
  const stopped = (Math.floor(Date.now() / 60_000) + 1) * 60_000 + 5_000;
  return () => stopped;
}
