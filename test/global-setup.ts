import { execFileSync } from 'node:child_process';

/**
 * Builds the packages and examples once per run: the reference-server and consumer tests run the built output,
 * exactly what `npm start` and `npm publish` ship (`npm run build`).
 */
export default function setup(): void {
  const cwd = new URL('..', import.meta.url);
  execFileSync('npx', ['tsup', '--silent'], { stdio: 'inherit', cwd });
  // The dashboard's files (packages/core/dist/dashboard), which `dashboard: true` serves.
  execFileSync('npx', ['vite', 'build', '--config', 'packages/core/ui/vite.config.ts'], { stdio: 'inherit', cwd });
}
