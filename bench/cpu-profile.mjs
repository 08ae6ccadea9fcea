// Summarises a V8 CPU profile (what `inspector`'s Profiler.stop or `node --cpu-prof` writes): self time by function,
// the top N, with the file they come from, so that a regression shows where its time went.
import path from 'node:path';

/** `[{ name, where, selfPct }]`, heaviest first; `(garbage collector)`, `(program)` and `(idle)` are V8's own rows. */
export function topFunctions(profile, n = 15) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  // A native function (no file) is shown with its caller's place, which says whose work it is.
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
  const self = new Map();
  const deltas = profile.timeDeltas;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const dt = deltas[i] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)' || isProfilerOwn(node, parentOf)) continue;
    total += dt;
    let file = url === '' ? '' : shortUrl(url);
    let line = lineNumber;
    if (url === '' && !functionName.startsWith('(')) {
      const caller = parentOf.get(node.id)?.callFrame;
      if (caller !== undefined && caller.url !== '') {
        file = `called from ${caller.functionName || '(anonymous)'} ${shortUrl(caller.url)}`;
        line = caller.lineNumber;
      }
    }
    const key = `${functionName || '(anonymous)'}\u0000${file}${file && line >= 0 ? `:${line + 1}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([key, us]) => {
      const [name, where] = key.split('\u0000');
      return { name, where, selfPct: (100 * us) / Math.max(1, total) };
    });
}

/** The profiler's own work (the inspector session's `dispatch`, starting and stopping it): not the profiled program's. */
function isProfilerOwn(node, parentOf) {
  return node.callFrame.url === '' && parentOf.get(node.id)?.callFrame.url === 'node:inspector';
}

/** Self time grouped by package (node_modules/<pkg>, node:internal, mcp-fleet's dist), heaviest first. */
export function byPackage(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
  const sums = new Map();
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const { functionName, url } = node.callFrame;
    if (functionName === '(idle)' || isProfilerOwn(node, parentOf)) continue;
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    const group = url === '' ? (functionName.startsWith('(') ? functionName : '(native)') : packageOf(url);
    sums.set(group, (sums.get(group) ?? 0) + dt);
  }
  return [...sums.entries()].sort((a, b) => b[1] - a[1]).map(([group, us]) => ({ group, pct: (100 * us) / Math.max(1, total) }));
}

function packageOf(url) {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (url.startsWith('node:')) return 'node (internal)';
  const m = /packages\/([^/]+)\/dist\//.exec(url);
  if (m) return `@mcp-fleet/${m[1]}`;
  return path.basename(url);
}

function shortUrl(url) {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const m = /packages\/([^/]+\/dist\/.*)$/.exec(url);
  if (m) return m[1];
  return url.replace(/^file:\/\//, '');
}
