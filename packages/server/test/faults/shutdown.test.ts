import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../helpers/harness.js';
import { alive, descendants, type ServerProcess, serveEnv, startProcess } from './helpers.js';

/** `npm start` as a user runs it: npm from this test's own npm when known, else from PATH. */
function npmStart(): [string, string[]] {
  const npm = process.env.npm_execpath;
  return npm ? [process.execPath, [npm, 'start']] : ['npm', ['start']];
}

/** Opens a POST /verify whose body is only half sent; `finish()` sends the rest. */
function halfSentRequest(port: number): { socket: Socket; finish(): void; answer: Promise<string> } {
  const body = JSON.stringify({ oauth_token: { access_token: 'not-a-token' } });
  const socket = connect(port, '127.0.0.1');
  socket.setEncoding('utf8');
  let received = '';
  socket.on('data', (chunk: string) => {
    received += chunk;
  });
  socket.on('error', () => {});
  const answer = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
  socket.write(
    `POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  );
  return { socket, answer, finish: () => socket.end(body.slice(10)) };
}

async function exitWithin(server: ServerProcess, ms: number) {
  return Promise.race([
    server.exited,
    sleep(ms).then(() => {
      throw new Error(`still running ${ms} ms after SIGTERM`);
    }),
  ]);
}

describe('SIGTERM drains and stops in bounded time', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-shutdown-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('SIGTERM to `npm start` reaches the server, which finishes the request in flight and leaves no orphan', async () => {
    const port = await freePort();
    const [command, args] = npmStart();
    const server = await startProcess(
      command,
      args,
      serveEnv(port, join(dir, 'npm'), { TESSERA_DATABASE_URL: `sqlite:${join(dir, 'npm', 'tessera.db')}` }),
      port,
    );
    const pid = server.child.pid!;
    const tree = descendants(pid);
    assert.ok(tree.length > 0, 'npm started no process');
    try {
      const inFlight = halfSentRequest(port);
      await sleep(200);
      server.child.kill('SIGTERM');
      await sleep(500);
      // Draining: a new request is refused or answered 503; the request already begun is answered.
      const late = await fetch(`${server.base}/healthz`).then(
        (r) => r.status,
        () => 'refused',
      );
      assert.ok(late === 'refused' || late === 503, `a request during the drain got ${late}`);
      inFlight.finish();
      const answer = await inFlight.answer;
      assert.match(answer, /^HTTP\/1\.1 200 /);
      assert.match(answer, /"success":false/);
      // Written during the drain: its client must not send another request on this connection.
      assert.match(answer, /\r\nconnection: close\r\n/i);
      const { code, signal } = await exitWithin(server, 10_000);
      assert.ok(
        code === 0 || signal === 'SIGTERM',
        `npm ended with ${code ?? signal}: ${server.output.stderr}`,
      );
      assert.match(server.output.stdout, /"msg":"draining in-flight requests"/);
      assert.match(server.output.stdout, /"msg":"stopped"/);
      // A refusal during the drain is an access line, not an error line per request.
      assert.doesNotMatch(server.output.stdout, /"level":50/);
      await sleep(200);
      const orphans = tree.filter(alive);
      assert.deepEqual(orphans, [], 'processes of npm start outlived it');
    } finally {
      for (const child of [pid, ...tree]) if (alive(child)) process.kill(child, 'SIGKILL');
    }
  });

  test('a connection that never finishes its request does not hold the drain past TESSERA_SHUTDOWN_TIMEOUT', async () => {
    const port = await freePort();
    const server = await startProcess(
      process.execPath,
      ['--conditions=tessera-source', '--import', 'tsx', 'packages/server/src/cli.ts', 'serve'],
      serveEnv(port, join(dir, 'stuck'), {
        TESSERA_DATABASE_URL: `sqlite:${join(dir, 'stuck', 'tessera.db')}`,
        TESSERA_SHUTDOWN_TIMEOUT: '2',
      }),
      port,
    );
    const stuck = halfSentRequest(port);
    try {
      await sleep(200);
      const started = performance.now();
      server.child.kill('SIGTERM');
      const { code } = await exitWithin(server, 10_000);
      const tookMs = performance.now() - started;
      assert.equal(code, 1);
      assert.ok(tookMs >= 1_900 && tookMs < 6_000, `exited ${tookMs} ms after SIGTERM`);
      assert.match(server.output.stdout, /shutdown took more than 2 s; exiting/);
    } finally {
      stuck.socket.destroy();
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }
  });
});
