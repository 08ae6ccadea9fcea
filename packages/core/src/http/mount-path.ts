/**
 * The path below `prefix` (`/servers/srv_…`; `/` for the prefix itself), or `undefined` when `pathname` is not under
 * it. `prefix` is normalized (`/v1`, or `''` for none), as `fleet.prefix` is. The path stays raw (percent-encoded):
 * the handler decodes each segment once. The one rule for "is this request the fleet's?", which the handler applies
 * when it is given no path and the adapters apply to pass other requests on to the host app.
 */
export function mountPath(pathname: string, prefix: string): string | undefined {
  if (prefix === '' || prefix === '/') return pathname;
  if (pathname === prefix) return '/';
  return pathname.startsWith(`${prefix}/`) ? pathname.slice(prefix.length) : undefined;
}
