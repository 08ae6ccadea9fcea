/**
 * Where the fleet logs, in the shape of pino's logger (`logger.info(fields, message)`): pass `pino()` as it is, or
 * anything with these three methods. Fields never carry a header, a body, a query, a secret or an upstream's answer.
 */
export interface Logger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}
