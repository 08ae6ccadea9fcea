import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, sep } from 'node:path';

/** Serves the dashboard's static files below the mount (`/dashboard/…`), or `undefined` for any other path. */
export type DashboardHandler = (request: Request, path: string) => Response | undefined;

export interface DashboardOptions {
  /** The folder of the built dashboard. @default the one shipped in `@mcp-fleet/core` (`dist/dashboard`) */
  assets?: string;
}

/** Where the page lives below the mount point. */
export const DASHBOARD_PATH = '/dashboard';

/**
 * Strict: scripts, styles, images and requests from this origin only, no inline code, never framed. The dashboard
 * talks to the API beside it, on the same origin.
 */
export const DASHBOARD_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

interface Asset {
  body: Uint8Array;
  type: string;
  etag: string;
  /** Vite names what it builds into `assets/` by content hash: those never change under their name. */
  immutable: boolean;
}

/** The dashboard shipped in this package: `dist/dashboard` beside the package's own `package.json`. */
export function shippedDashboardAssets(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@mcp-fleet/core/package.json')), 'dist', 'dashboard');
}

/**
 * Serves the files of `dir`, read once at start into memory (a few files, tens of KB): only names found there are
 * served, so no path can reach outside it. `/dashboard` redirects to `/dashboard/`, which is `index.html`.
 */
export function createDashboard(options: DashboardOptions = {}): DashboardHandler {
  const dir = options.assets ?? shippedDashboardAssets();
  if (!existsSync(join(dir, 'index.html'))) {
    throw new TypeError(`mcp-fleet: the dashboard's files are missing from ${dir} (build them with \`npm run build\`)`);
  }
  const assets = readAssets(dir);
  return (request, path) => {
    if (path !== DASHBOARD_PATH && !path.startsWith(`${DASHBOARD_PATH}/`)) return undefined;
    const url = new URL(request.url);
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return plain(405, 'Method not allowed.', { allow: 'GET, HEAD' });
    }
    // Relative asset URLs in index.html need the trailing slash, whatever prefix the host mounted the fleet under.
    // One leading slash: a path that opens with `//` would make the Location another host's (an open redirect).
    if (path === DASHBOARD_PATH) return plain(308, '', { location: `${url.pathname.replace(/^[/\\]+/, '/')}/${url.search}` });
    const name = path.slice(DASHBOARD_PATH.length + 1) || 'index.html';
    const asset = assets.get(name);
    if (asset === undefined) return plain(404, 'Not found.');
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      'content-type': asset.type,
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      etag: asset.etag,
    };
    if (request.headers.get('if-none-match') === asset.etag) return new Response(null, { status: 304, headers });
    return new Response(request.method === 'HEAD' ? null : asset.body, { status: 200, headers });
  };
}

const SECURITY_HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

function plain(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text === '' ? null : text, {
    status,
    headers: { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers },
  });
}

function readAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    const type = TYPES[extname(entry.name)];
    if (type === undefined) continue;
    const name = relative(dir, file).split(sep).join('/');
    const body = new Uint8Array(readFileSync(file));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, type, etag, immutable: name.startsWith('assets/') });
  }
  return assets;
}
