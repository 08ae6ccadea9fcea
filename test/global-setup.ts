import { execFileSync } from 'node:child_process';

/**
 * Builds the packages and examples when their sources changed, as `npm start` does (scripts/build-if-stale.mjs): the
 * reference-server and consumer tests run the built output, exactly what `npm start` and `npm publish` ship.
 */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build-if-stale.mjs'], { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
}
