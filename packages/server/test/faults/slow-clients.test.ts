import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { startServer, type TestServer } from '../helpers/harness.js';

/** Bounds of this suite, in seconds (the defaults are 30 s, 10 s and 5 s). */
const ENV = {
  TESSERA_HTTP_REQUEST_TIMEOUT: '2',
  TESSERA_HTTP_HEADERS_TIMEOUT: '1',
  TESSERA_HTTP_KEEP_ALIVE_TIMEOUT: '1',
};
/** Longest wait for the server to close a connection before the test fails. */
const GIVE_UP_MS = 10_000;

interface Closed {
  /** ms from the start of the dribble until the server closed the connection. */
  afterMs: number;
  /** What the server sent before closing. */
  received: string;
}

/** Opens a socket to the server and writes `first`, then one byte of `drip` every 200 ms. */
function dribble(server: TestServer, first: string, drip: string): Promise<Closed> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(Number(port), '127.0.0.1');
    const started = performance.now();
    let received = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    const giveUp = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error(`the server kept a dribbling connection open for ${GIVE_UP_MS} ms`));
    }, GIVE_UP_MS);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ afterMs: performance.now() - started, received });
    });
    socket.on('connect', () => {
      socket.write(first);
      timer = setInterval(() => {
        if (!socket.writable) return;
        socket.write(drip[sent % drip.length]!);
        sent++;
      }, 200);
    });
  });
}

/** Writes `bytes` on a new connection (then ends it when `end`) and collects what comes back until it closes. */
function exchange(server: TestServer, bytes: string, end = false): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${GIVE_UP_MS} ms`));
    }, GIVE_UP_MS);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve(received);
    });
    socket.write(bytes, () => {
      if (end) socket.destroy();
    });
  });
}

/** A problem document answered by Node's refusal of the connection's bytes, and the connection closed. */
function assertRefused(received: string, status: number): void {
  assert.match(received, new RegExp(`^HTTP/1\\.1 ${status} `), received);
  assert.match(received, /\r\ncontent-type: application\/problem\+json\r\n/i, received);
  const body = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  assert.equal(body.status, status);
  assert.equal(body.code, 'invalid_request');
  assert.equal(typeof body.detail, 'string');
}

describe('slow clients are cut off in bounded time', () => {
  let server: TestServer;
  const logged: Array<Record<string, unknown>> = [];
  before(async () => {
    server = await startServer('sqlite', {
      env: ENV,
      logStream: { write: (line: string) => void logged.push(JSON.parse(line)) },
    });
  });
  after(() => server.close());

  test('a request body dribbled a byte at a time is closed after the request timeout', async () => {
    const head =
      'POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n';
    const closed = await dribble(server, head, ' ');
    // 2 s plus Node's check interval (0.5 s here) and scheduling slack.
    assert.ok(closed.afterMs >= 1_900, `closed after ${closed.afterMs} ms, before the request timeout`);
    assert.ok(closed.afterMs < 5_000, `closed after ${closed.afterMs} ms`);
    assertRefused(closed.received, 408);
  });

  test('bytes that are not HTTP and headers over the size limit are refused as problem documents', async () => {
    assertRefused(await exchange(server, 'NOT HTTP AT ALL\r\n\r\n'), 400);
    assertRefused(await exchange(server, 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'), 400);
    const huge = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    assertRefused(await exchange(server, huge), 431);
  });

  test('a body the client stops sending is not logged as a database outage', async () => {
    const before = logged.length;
    const head =
      'POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"a":';
    await exchange(server, head, true);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lines = logged.slice(before);
    // Node's "aborted" error has code ECONNRESET, as a database socket's would.
    assert.deepEqual(
      lines.filter((l) => Number(l.level) >= 50 || l.code === 'service_unavailable'),
      [],
      JSON.stringify(lines),
    );
  });

  test('headers dribbled a byte at a time are closed after the headers timeout', async () => {
    const closed = await dribble(server, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 'a');
    assert.ok(closed.afterMs >= 900, `closed after ${closed.afterMs} ms, before the headers timeout`);
    assert.ok(closed.afterMs < 4_000, `closed after ${closed.afterMs} ms`);
  });

  test('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.setEncoding('utf8');
    let received = '';
    const closed = new Promise<number>((resolve) => {
      let answeredAt = 0;
      socket.on('data', (chunk: string) => {
        received += chunk;
        if (!answeredAt && received.includes('"status":"ok"')) answeredAt = performance.now();
      });
      socket.on('close', () => resolve(performance.now() - answeredAt));
    });
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
    const idleMs = await Promise.race([
      closed,
      new Promise<number>((_, reject) =>
        setTimeout(() => reject(new Error('the idle connection stayed open')), GIVE_UP_MS).unref(),
      ),
    ]);
    socket.destroy();
    assert.match(received, /^HTTP\/1\.1 200 /);
    assert.match(received, /Keep-Alive: timeout=1/i);
    assert.ok(idleMs >= 900 && idleMs < 3_000, `idle connection closed after ${idleMs} ms`);
  });

  test('a request that arrives in time is answered normally', async () => {
    const answer = await server.request('POST', '/verify', { body: { oauth_token: { access_token: 'x' } } });
    assert.equal(answer.status, 200);
  });
});
