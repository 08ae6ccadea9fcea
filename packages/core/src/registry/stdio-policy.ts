/**
 * What docs/architecture.md "stdio servers" asks of stdio servers, in one place: checked when a server is created or
 * updated (`schema.ts`) and again when its process is spawned (`stdio/supervisor.ts`), so the two cannot drift. It
 * lives with the configuration it judges, below the supervisor that also reads it.
 */

/**
 * One entry of the allowlist of stdio commands. A string allows that command (compared exactly) with any arguments.
 * An object pins arguments: `args` must open the server's arguments, and more may follow only with `extraArgs`.
 */
export type StdioCommandRule = string | { command: string; args?: readonly string[]; extraArgs?: boolean };

/**
 * Environment names that steer how a program loads, which interpreter options or modules it takes, whom it trusts
 * for TLS, where its traffic or its package downloads go, or what a shell runs first: with one of them a tenant could
 * make an allowlisted command run code of its choosing. Refused with 400 unless `stdio.envAllow` replaces this list.
 * docs/configuration.md lists them.
 */
const STEERING_ENV: readonly RegExp[] = [
  // Dynamic loaders and C libraries.
  /^LD_/, /^DYLD_/, /^GCONV_PATH$/, /^GLIBC_TUNABLES$/, /^MALLOC_/, /^LOCPATH$/, /^NLSPATH$/, /^HOSTALIASES$/,
  /^RES_OPTIONS$/, /^LOCALDOMAIN$/, /^RESOLV_/,
  // Node, npm and the other JavaScript runtimes and package managers.
  /^NODE_/, /^NPM_CONFIG_/, /^YARN_/, /^PNPM_/, /^COREPACK_/, /^BUN_/, /^DENO_/,
  // Python and its package managers.
  /^PYTHON(PATH|HOME|STARTUP|USERBASE|INSPECT|BREAKPOINT|WARNINGS|EXECUTABLE|PLATLIBDIR|PYCACHEPREFIX)$/, /^PIP_/, /^UV_/, /^POETRY_/, /^CONDA/, /^PIPX_/, /^VIRTUAL_ENV$/,
  // Perl, Ruby, Java, PHP, Lua, Go, Rust, .NET.
  /^PERL/, /^RUBY/, /^GEM_/, /^BUNDLE_/, /^JAVA_TOOL_OPTIONS$/, /^_JAVA_OPTIONS$/, /^JDK_JAVA_OPTIONS$/, /^CLASSPATH$/,
  /^PHPRC$/, /^PHP_INI_SCAN_DIR$/, /^LUA_C?PATH/, /^GO(FLAGS|PROXY|PATH|ROOT|TOOLCHAIN|ENV)$/, /^CARGO_/, /^RUSTUP_/,
  /^RUSTC_WRAPPER$/, /^DOTNET_/, /^COMPlus_/,
  // Shells: what they read or run before the program.
  /^ENV$/, /^BASH_ENV$/, /^BASH_FUNC_/, /^BASHOPTS$/, /^SHELLOPTS$/, /^PS4$/, /^PROMPT_COMMAND$/, /^IFS$/, /^CDPATH$/,
  // Git, which many servers shell out to.
  /^GIT_/,
  // TLS trust and crypto configuration.
  /^OPENSSL_/, /^SSL_CERT_/, /^SSLKEYLOGFILE$/, /^CURL_CA_BUNDLE$/, /^REQUESTS_CA_BUNDLE$/,
  // Proxies: where the child's traffic goes.
  /_PROXY$/,
];

/** Names under those prefixes that only tune output or mode, which servers commonly need. */
const HARMLESS_ENV: ReadonlySet<string> = new Set(['NODE_ENV', 'NODE_NO_WARNINGS']);

/** True for an env name a stdio server may not set under the default rules (400 at create and update). */
export function isLoaderEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  return !HARMLESS_ENV.has(upper) && STEERING_ENV.some((re) => re.test(upper));
}

/**
 * Why a server may not set the env name, or `undefined`: with `envAllow` only its names are allowed (exactly, case
 * included); without it every name but the steering ones.
 */
export function envNameIssue(name: string, envAllow: readonly string[] | undefined): string | undefined {
  if (envAllow !== undefined) return envAllow.includes(name) ? undefined : 'is not on the allowlist of environment variables (stdio.envAllow)';
  return isLoaderEnvName(name) ? 'is not allowed: it changes how the program loads' : undefined;
}

/** Why the allowlist refuses `command` with `args`: the command, its arguments, or nothing (`undefined`). */
export function commandIssue(rules: readonly StdioCommandRule[], command: string, args: readonly string[] = []): 'command' | 'args' | undefined {
  let known = false;
  for (const rule of rules) {
    // Compared exactly: no path lookup, no trimming, no case folding.
    if (typeof rule === 'string') {
      if (rule === command) return undefined;
      continue;
    }
    if (rule.command !== command) continue;
    known = true;
    const pinned = rule.args ?? [];
    const prefixHolds = pinned.length <= args.length && pinned.every((arg, i) => args[i] === arg);
    if (prefixHolds && (rule.extraArgs === true || args.length === pinned.length)) return undefined;
  }
  return known ? 'args' : 'command';
}

export function isAllowedCommand(rules: readonly StdioCommandRule[], command: string, args: readonly string[] = []): boolean {
  return commandIssue(rules, command, args) === undefined;
}

/**
 * The `PATH` of every stdio child unless `stdio.path` says otherwise: fixed, so that a child learns nothing of the
 * service's own (its home, its tools) and finds the usual system commands (`node`, `npx`, `uvx` where installed there).
 */
export const DEFAULT_STDIO_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * The child's whole environment, nothing of the host's: `HOME` (the stdio user's private home, where npm and uv keep
 * their caches) with `XDG_CACHE_HOME` and `XDG_CONFIG_HOME` below it, then the server's `env`, then `PATH` (ours,
 * never the server's).
 */
export function childEnv(env: Readonly<Record<string, string>> | undefined, path: string | undefined, home?: string): Record<string, string> {
  const result: Record<string, string> = home === undefined ? {} : { HOME: home, XDG_CACHE_HOME: `${home}/.cache`, XDG_CONFIG_HOME: `${home}/.config` };
  Object.assign(result, env);
  delete result.PATH;
  if (path !== undefined) result.PATH = path;
  return result;
}
