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

/** The child's whole environment: the server's `env` plus `PATH` (ours, never the server's), nothing of the host's. */
export function childEnv(env: Readonly<Record<string, string>> | undefined, path: string | undefined): Record<string, string> {
  const result: Record<string, string> = { ...env };
  delete result.PATH;
  if (path !== undefined) result.PATH = path;
  return result;
}
