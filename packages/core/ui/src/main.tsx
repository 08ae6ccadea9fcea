import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, session } from './api.js';
import { ConnectPage } from './connect.js';
import { HealthPage } from './health.js';
import { ImportPage } from './import.js';
import { KeysPage } from './keys.js';
import { ServersPage } from './servers.js';
import { ToolCallsPage } from './toolcalls.js';
import { ToolsPage } from './tools.js';
import { WebhooksPage } from './webhooks.js';
import './style.css';

const PAGES = [
  { hash: '#/servers', name: 'Servers', Page: ServersPage },
  { hash: '#/health', name: 'Health', Page: HealthPage },
  { hash: '#/tool-calls', name: 'Tool calls', Page: ToolCallsPage },
  { hash: '#/webhooks', name: 'Webhooks', Page: WebhooksPage },
  { hash: '#/tools', name: 'Tools', Page: ToolsPage },
  { hash: '#/keys', name: 'Keys', Page: KeysPage },
  { hash: '#/connect', name: 'Connect an agent', Page: ConnectPage },
  { hash: '#/import', name: 'Import', Page: ImportPage },
] as const;

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return hash;
}

/** The key stays in this tab's sessionStorage and goes only to the API, as its Bearer header. */
function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [problem, setProblem] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    // Any answer but 401 means the key is known (a key without `servers:read` gets 403 and may still sign in).
    const answer = await api((client) => client.servers.list({ limit: 1 }), key.trim());
    setBusy(false);
    if (!answer.ok && (answer.error.status === 401 || answer.error.status === 0 || answer.error.status === 429)) {
      return setProblem(answer.error.status === 401 ? 'This API key was not accepted.' : answer.error.message);
    }
    session.signIn(key.trim());
    onSignedIn();
  };
  return (
    <main class="signin">
      <form class="panel" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">mcp-fleet</h1>
        <p>Sign in with an API key of your account. It is kept in this tab only, until you sign out or close it.</p>
        <label for="api-key">API key</label>
        <input id="api-key" type="password" autoComplete="off" value={key} onInput={(e) => (setKey(e.currentTarget.value), setProblem(''))} aria-describedby={problem ? 'signin-error' : undefined} required autoFocus />
        {problem && (
          <p id="signin-error" class="field-error" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" disabled={busy || key.trim() === ''}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(session.key() !== null);
  const hash = useHash();
  const main = useRef<HTMLElement>(null);
  useEffect(() => {
    const out = () => setSignedIn(false);
    window.addEventListener('mcp-fleet:signed-out', out);
    return () => window.removeEventListener('mcp-fleet:signed-out', out);
  }, []);
  const current = PAGES.find((page) => page.hash === hash.split('?')[0]) ?? PAGES[0];
  useEffect(() => {
    document.title = `${current.name} · mcp-fleet`;
    main.current?.focus();
  }, [current]);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  return (
    <>
      <header>
        <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
          Skip to content
        </a>
        <strong class="brand">mcp-fleet</strong>
        <nav aria-label="Main">
          {PAGES.map((page) => (
            <a href={page.hash} aria-current={page === current ? 'page' : undefined}>
              {page.name}
            </a>
          ))}
        </nav>
        <button type="button" class="signout" onClick={session.signOut}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <current.Page />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
