import { execFileSync } from 'node:child_process';

/**
 * Builds the packages and examples once per run: the reference-server and consumer tests run the built output,
 * exactly what `npm start` and `npm publish` ship.
 */
export default function setup(): void {
  execFileSync('npx', ['tsup', '--silent'], { stdio: 'inherit', cwd: new URL('..', import.meta.url) });
}
