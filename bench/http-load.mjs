// The load generator of section 2, in its own process (pinned to its own CPU when the bench pins) so that it shares
// neither the server's event loop nor its core. Keeps `connections` keep-alive HTTP/1.1 connections busy, one request
// in flight on each, for a fixed duration: GET requests, or POST /v1/servers creates (`method: 'POST'`), each with a
// name never sent before. Every answer is read to its end (Content-Length or chunked) and its status counted. A part's
// connections are opened before its timed window and closed after it, both finished before the part is reported done
// (`run`), so that no server under test accepts or closes connections while another is measured.
//
// It writes requests and parses answers on plain `net` sockets, not through an HTTP client library: with undici's
// Pool this process spent more CPU per request than the bare servers it loaded, so on 2 cores the client, not the
// server, set the pace of the bare variants and squeezed every ratio towards 1 (bench/README.md, "Getting the spread
// within ±10 %").
//   ← { type: 'run', origin, path, headers, connections, durationMs, method? }
//   → { type: 'done', requests, ok, non2xx, errors, elapsedMs, p50Ms, p99Ms, cpuMs }
import net from 'node:net';
// If the process that forked this one dies (a section that threw, a bench stopped), do not linger.
process.on('disconnect', () => process.exit(0));

const CRLF2 = Buffer.from('\r\n\r\n');

let created = 0;
const createBody = () => JSON.stringify({ name: `load-${process.pid}-${created++}`, type: 'http', endpoint: 'https://mcp.example.com/mcp' });

function requestHead(method, host, path, headers, bodyLength) {
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\nconnection: keep-alive\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  if (bodyLength !== undefined) head += `content-type: application/json\r\ncontent-length: ${bodyLength}\r\n`;
  return `${head}\r\n`;
}

/**
 * One keep-alive connection: `send()` writes the next request; `onAnswer(status)` is called when its answer has been
 * read to the end. Answers are parsed incrementally from the socket's chunks.
 */
function connection(url, onAnswer, onError) {
  const socket = net.connect({ host: url.hostname, port: Number(url.port), noDelay: true });
  let buffer = Buffer.alloc(0);
  let status = 0;
  let bodyLeft = -1; // bytes of a Content-Length body still to come; -1 while reading a head
  let chunked = false;
  socket.on('error', onError);
  socket.on('data', (chunk) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    for (;;) {
      if (bodyLeft < 0 && !chunked) {
        const end = buffer.indexOf(CRLF2);
        if (end < 0) return;
        const head = buffer.toString('latin1', 0, end);
        buffer = buffer.subarray(end + 4);
        status = Number(head.slice(9, 12));
        const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        if (length !== null) bodyLeft = Number(length[1]);
        else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) chunked = true;
        else bodyLeft = 0;
      }
      if (chunked) {
        // Chunks: "<hex size>\r\n<data>\r\n", ending with a zero-size chunk and an empty line.
        const lineEnd = buffer.indexOf('\r\n');
        if (lineEnd < 0) return;
        const size = parseInt(buffer.toString('latin1', 0, lineEnd), 16);
        const need = lineEnd + 2 + size + 2;
        if (buffer.length < need) return;
        buffer = buffer.subarray(need);
        if (size === 0) {
          chunked = false;
          bodyLeft = -1;
          onAnswer(status);
        }
        continue;
      }
      if (buffer.length < bodyLeft) return;
      buffer = buffer.subarray(bodyLeft);
      bodyLeft = -1;
      onAnswer(status);
      if (buffer.length === 0) return;
    }
  });
  return socket;
}

function percentile(sorted, p) {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/**
 * One part: `connections` connections opened first, then `durationMs` of requests (the timed window: from the first
 * request sent to the last answer read), then every connection closed and its close seen. Opening and closing are
 * kept out of the window and finished before the part is reported done: the server under test accepts its
 * connections before the clock starts, and has handled their end (its FIN back) before the next part's server is
 * measured on the same core, instead of during it.
 */
async function run({ origin, path, headers, connections, durationMs, method = 'GET' }) {
  const url = new URL(origin);
  const host = url.host;
  const getRequest = Buffer.from(requestHead('GET', host, path, headers));
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  const latencies = [];
  const sockets = [];
  const opened = [];
  // Each connection's answers go to the part's handler once it is set (`answered`), its errors are counted.
  let answered = () => {};
  let failed = () => {};
  for (let i = 0; i < connections; i++) {
    const socket = connection(url, (status) => answered(i, status), () => failed(i));
    sockets.push(socket);
    opened.push(new Promise((resolve) => {
      socket.once('connect', resolve);
      socket.once('error', resolve);
    }));
  }
  await Promise.all(opened);
  const closed = sockets.map((socket) => new Promise((resolve) => (socket.destroyed ? resolve() : socket.once('close', resolve))));
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  const deadline = start + durationMs;
  const sent = new Array(connections).fill(0);
  const result = await new Promise((resolve) => {
    let open = connections;
    const done = new Array(connections).fill(false);
    const finish = () => {
      if (--open > 0) return;
      const elapsedMs = performance.now() - start;
      const cpu = process.cpuUsage(cpuStart);
      latencies.sort((a, b) => a - b);
      resolve({ requests: ok + non2xx, ok, non2xx, errors, elapsedMs, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), cpuMs: (cpu.user + cpu.system) / 1000 });
    };
    const send = (i) => {
      sent[i] = performance.now();
      const socket = sockets[i];
      if (method === 'POST') {
        const body = createBody();
        socket.write(requestHead('POST', host, path, headers, Buffer.byteLength(body)) + body);
      } else socket.write(getRequest);
    };
    const stop = (i) => {
      if (done[i]) return;
      done[i] = true;
      finish();
    };
    answered = (i, status) => {
      const now = performance.now();
      latencies.push(now - sent[i]);
      if (status >= 200 && status < 300) ok++;
      else non2xx++;
      if (now < deadline) send(i);
      else stop(i);
    };
    failed = (i) => {
      errors++;
      sockets[i].destroy();
      stop(i);
    };
    for (let i = 0; i < connections; i++) {
      if (sockets[i].destroyed) failed(i);
      else send(i);
    }
  });
  // Every answer is read: close the connections and wait until the server has closed its ends too.
  for (const socket of sockets) socket.end();
  // A server that does not close within a second is closed on (it would otherwise hold the bench).
  const late = setTimeout(() => sockets.forEach((socket) => socket.destroy()), 1000);
  await Promise.all(closed);
  clearTimeout(late);
  return result;
}

process.on('message', async (message) => {
  if (message.type === 'run') {
    globalThis.gc?.();
    process.send({ type: 'done', ...(await run(message)) });
  } else if (message.type === 'exit') process.exit(0);
});
process.send({ type: 'ready' });
