import { accessSync, constants, realpathSync, statSync, type Stats } from 'node:fs';
import { dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { StdioUser } from './stdio-users.js';

/**
 * Whether the user a stdio child runs as can reach its command, its script and its working folder: checked at create
 * (400) and at spawn, so that a server whose files that user cannot read is refused with the path, the user and the
 * fix, instead of crashing with EACCES on every start. Ordinary Unix permissions (owner, group, others; children
 * have no supplementary groups); ACLs and security modules are not looked at.
 */

type Want = 'read' | 'execute' | 'search';
const BITS: Record<Want, number> = { read: 4, execute: 1, search: 1 };
const VERB: Record<Want, string> = { read: 'read', execute: 'run', search: 'entered' };

function allowed(stat: Stats, user: Pick<StdioUser, 'uid' | 'gid'>, want: Want): boolean {
  const bit = BITS[want];
  if (user.uid === 0) return want === 'execute' ? (stat.mode & 0o111) !== 0 : true;
  if (stat.uid === user.uid) return ((stat.mode >> 6) & bit) !== 0;
  if (stat.gid === user.gid) return ((stat.mode >> 3) & bit) !== 0;
  return (stat.mode & bit) !== 0;
}

const mode = (stat: Stats) => (stat.mode & 0o777).toString(8).padStart(4, '0');

/** Why `user` cannot `want` the path (the first folder or the file that stops it), or undefined. */
export function pathIssue(path: string, user: Pick<StdioUser, 'uid' | 'gid' | 'label'> | undefined, want: Want): string | undefined {
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return `${path} does not exist`;
  }
  const self = user === undefined || user.uid === process.getuid?.();
  if (self) {
    try {
      accessSync(real, want === 'read' ? constants.R_OK : constants.X_OK);
      return undefined;
    } catch {
      return `${path} cannot be ${VERB[want]} by this service's user: fix its permissions`;
    }
  }
  const folders: string[] = [];
  for (let folder = dirname(real); ; folder = dirname(folder)) {
    folders.unshift(folder);
    if (dirname(folder) === folder) break;
  }
  for (const folder of folders) {
    const stat = statSync(folder);
    if (!allowed(stat, user, 'search')) {
      return `the folder ${folder} (mode ${mode(stat)}, owner uid ${stat.uid}) does not let ${user.label} reach ${path}: allow it (chmod o+x ${folder}) or move the files to a folder that user can read`;
    }
  }
  const stat = statSync(real);
  if (want === 'search' && !stat.isDirectory()) return `${path} is not a folder`;
  if (want === 'execute' && !stat.isFile()) return `${path} is not a file`;
  if (!allowed(stat, user, want)) {
    const fix = want === 'read' ? 'chmod o+r' : 'chmod o+x';
    return `${path} (mode ${mode(stat)}, owner uid ${stat.uid}) cannot be ${VERB[want]} by ${user.label}: allow it (${fix} ${real}) or move it to a folder that user can read`;
  }
  return undefined;
}

export interface AccessIssue {
  field: 'command' | 'args' | 'working_directory';
  issue: string;
  /** `missing`: the path is not there (yet); `denied`: it is, and the user cannot reach it. */
  kind: 'missing' | 'denied';
}

const kindOf = (issue: string): AccessIssue['kind'] => (issue.endsWith(' does not exist') || issue.includes(' is not found on the PATH') ? 'missing' : 'denied');

/**
 * What stops `user` from running the server: its working folder, its command (looked up on `path` when it has no
 * slash) and its script (the first argument that is not an option, when it names an existing file, relative to the
 * working folder). Undefined when nothing does.
 */
export function accessIssue(
  config: { command: string; args?: readonly string[] | undefined; working_directory?: string | undefined },
  user: StdioUser | undefined,
  path: string | undefined,
): AccessIssue | undefined {
  const cwd = config.working_directory ?? process.cwd();
  if (config.working_directory !== undefined) {
    const issue = pathIssue(config.working_directory, user, 'search');
    if (issue !== undefined) return { field: 'working_directory', issue, kind: kindOf(issue) };
  }
  const command = config.command;
  if (command.includes('/') || command.includes(sep)) {
    const issue = pathIssue(isAbsolute(command) ? command : resolve(cwd, command), user, 'execute');
    if (issue !== undefined) return { field: 'command', issue, kind: kindOf(issue) };
  } else {
    const folders = (path ?? '').split(':').filter((f) => f !== '');
    let first: string | undefined;
    let found = false;
    for (const folder of folders) {
      const candidate = join(folder, command);
      try {
        statSync(candidate);
      } catch {
        continue;
      }
      const issue = pathIssue(candidate, user, 'execute');
      if (issue === undefined) {
        found = true;
        break;
      }
      first ??= issue;
    }
    if (!found) {
      const issue = first ?? `${command} is not found on the PATH stdio servers get (${path ?? ''}): give its full path, or set stdio.path (reference server: MCP_FLEET_STDIO_PATH)`;
      return { field: 'command', issue, kind: kindOf(issue) };
    }
  }
  const script = (config.args ?? []).find((arg) => !arg.startsWith('-'));
  if (script !== undefined) {
    const full = isAbsolute(script) ? script : resolve(cwd, script);
    let isFile = false;
    try {
      isFile = statSync(full).isFile();
    } catch {
      // a package or module name (`npx -y @acme/server`, `python -m server`), not a file
    }
    if (isFile) {
      const issue = pathIssue(full, user, 'read');
      if (issue !== undefined) return { field: 'args', issue, kind: kindOf(issue) };
    }
  }
  return undefined;
}
