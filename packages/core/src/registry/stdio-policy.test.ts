import { describe, expect, it } from 'vitest';
import { commandIssue, envNameIssue, isLoaderEnvName } from './stdio-policy.js';

describe('stdio env names', () => {
  it.each([
    // What the audit got through the old list (issue 13), and the old list itself.
    'PYTHONHOME', 'PERL5OPT', 'RUBYOPT', 'JAVA_TOOL_OPTIONS', 'GCONV_PATH', 'GLIBC_TUNABLES', 'NODE_EXTRA_CA_CERTS',
    'NODE_TLS_REJECT_UNAUTHORIZED', 'npm_config_registry', 'PIP_INDEX_URL', 'UV_INDEX_URL', 'SSL_CERT_FILE', 'SSL_CERT_DIR',
    'HOSTALIASES', 'ENV', 'PS4', 'BASH_FUNC_x%%', 'GIT_SSH_COMMAND', 'LD_PRELOAD', 'DYLD_INSERT_LIBRARIES', 'NODE_OPTIONS',
    'PYTHONPATH', 'PYTHONWARNINGS', 'PYTHONBREAKPOINT', 'BASH_ENV', 'OPENSSL_CONF', 'HTTPS_PROXY', 'no_proxy', 'CURL_CA_BUNDLE',
    'REQUESTS_CA_BUNDLE', 'GEM_HOME', 'CLASSPATH', '_JAVA_OPTIONS', 'PHPRC', 'GOFLAGS', 'CARGO_HOME', 'RUSTC_WRAPPER', 'YARN_RC_FILENAME',
  ])('refuses %s', (name) => {
    expect(isLoaderEnvName(name)).toBe(true);
    expect(envNameIssue(name, undefined)).toBe('is not allowed: it changes how the program loads');
  });

  it.each(['NODE_ENV', 'API_TOKEN', 'PYTHONUNBUFFERED', 'PROXY', 'HOME', 'LANG', 'OPENSSL', 'MY_LD_FLAG'])('takes %s', (name) => {
    expect(envNameIssue(name, undefined)).toBeUndefined();
  });

  it('with stdio.envAllow, only its names, exactly, whatever the default list says', () => {
    const allow = ['API_TOKEN', 'PYTHONPATH'];
    expect(envNameIssue('API_TOKEN', allow)).toBeUndefined();
    expect(envNameIssue('PYTHONPATH', allow)).toBeUndefined();
    expect(envNameIssue('api_token', allow)).toMatch(/allowlist of environment variables \(stdio.envAllow\)/);
    expect(envNameIssue('LANG', allow)).toMatch(/stdio.envAllow/);
  });
});

describe('stdio command allowlist', () => {
  const rules = ['uvx', { command: 'node', args: ['/srv/mcp/server.js'] }, { command: 'npx', args: ['-y', '@acme/mcp'], extraArgs: true }];

  it('a bare string allows the command with any arguments, compared exactly', () => {
    expect(commandIssue(rules, 'uvx', ['anything', '--at', 'all'])).toBeUndefined();
    expect(commandIssue(rules, 'uvx ', [])).toBe('command');
    expect(commandIssue(rules, '/usr/bin/uvx', [])).toBe('command');
  });

  it('pinned arguments: exactly them, unless extraArgs lets more follow', () => {
    expect(commandIssue(rules, 'node', ['/srv/mcp/server.js'])).toBeUndefined();
    expect(commandIssue(rules, 'node', ['/srv/mcp/server.js', '--inspect'])).toBe('args');
    expect(commandIssue(rules, 'node', ['-e', 'require("fs")'])).toBe('args');
    expect(commandIssue(rules, 'node', [])).toBe('args');
    expect(commandIssue(rules, 'npx', ['-y', '@acme/mcp', '--port', '1'])).toBeUndefined();
    expect(commandIssue(rules, 'npx', ['-y', '@evil/mcp'])).toBe('args');
    expect(commandIssue(rules, 'python3', [])).toBe('command');
    expect(commandIssue([], 'node', [])).toBe('command');
  });
});
