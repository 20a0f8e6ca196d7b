import assert from 'node:assert/strict';
import dns, { type LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, test } from 'node:test';
import {
  authorizedClient,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';

/** The production rule for webhook targets, in a test server (which still accepts http:// receivers). */
const PRODUCTION_TARGETS = { ...RELAXED_LIMITS, TESSERA_WEBHOOK_ALLOW_PRIVATE: 'false' };

/** A name the (mocked) system resolver answers with loopback, as an attacker's DNS would. */
const REBOUND_HOST = 'hooks.attacker.test';

const integrator = (server: TestServer) => authorizedClient(server, basicAuth(server.project));

async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A webhook receiver on loopback that counts what reaches it. */
async function startReceiver(): Promise<{ port: number; hits: string[]; server: Server }> {
  const hits: string[] = [];
  const server = createServer((request, response) => {
    request.resume();
    hits.push(request.url ?? '');
    response.writeHead(204).end();
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { port: (server.address() as AddressInfo).port, hits, server };
}

async function stopReceiver({ server }: { server: Server }): Promise<void> {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
}

/** Makes the system resolver answer REBOUND_HOST with 127.0.0.1 for the rest of the test. */
function resolveReboundHostToLoopback(t: TestContext): void {
  const original = dns.lookup;
  type Callback = (
    err: NodeJS.ErrnoException | null,
    address: string | LookupAddress[],
    family?: number,
  ) => void;
  t.mock.method(dns, 'lookup', (hostname: string, options: dns.LookupOptions, callback: Callback) => {
    if (hostname !== REBOUND_HOST)
      return (original as (...args: unknown[]) => void)(hostname, options, callback);
    const answer = { address: '127.0.0.1', family: 4 };
    setImmediate(() =>
      options?.all ? callback(null, [answer]) : callback(null, answer.address, answer.family),
    );
  });
}

eachDialect('webhook targets and caps (SSRF, cost)', (dialect) => {
  test('internal hosts are refused at creation in every spelling', async () => {
    const server = await startServer(dialect, { env: PRODUCTION_TARGETS });
    try {
      const api = integrator(server);
      for (const url of [
        'http://localhost/hook',
        'http://localhost./hook',
        'http://api.localhost/hook',
        'http://127.1/hook',
        'http://0x7f.1/hook',
        'http://2130706433/hook',
        'http://0.0.0.0/hook',
        'http://[::1]/hook',
        'http://[::]/hook',
        'http://[::ffff:127.0.0.1]/hook',
        'http://[::ffff:7f00:1]/hook',
        'http://[::127.0.0.1]/hook',
        'http://[2002:7f00:1::]/hook',
        'http://[64:ff9b::7f00:1]/hook',
        'http://[64:ff9b::a9fe:a9fe]/hook',
        'http://169.254.169.254/latest/meta-data',
        'http://100.64.0.1/hook',
        'http://198.18.0.1/hook',
        'http://224.0.0.1/hook',
        'http://[fd00::1]/hook',
        'http://[fe80::1]/hook',
        'http://[ff02::1]/hook',
      ]) {
        const response = await api('POST', '/v1/webhooks', { url });
        assert.equal(response.status, 400, `${url}: ${response.text}`);
        assert.equal(response.body.code, 'invalid_request');
        assert.match(response.body.detail, /may not point at loopback, private or link-local/);
      }
      assert.equal((await api('GET', '/v1/webhooks')).body.webhooks.length, 0);
      // A public name is accepted; what it resolves to is checked at every delivery.
      const created = await api('POST', '/v1/webhooks', { url: 'https://hooks.example.com/tessera' });
      assert.equal(created.status, 201, created.text);
    } finally {
      await server.close();
    }
  });

  test('a host name resolving to loopback is refused at delivery, with a neutral status', async (t) => {
    resolveReboundHostToLoopback(t);
    const receiver = await startReceiver();
    const url = `http://${REBOUND_HOST}:${receiver.port}/hook`;
    try {
      // Development rules (private targets allowed): the name reaches the receiver, so the resolver
      // stand-in works and what follows is the policy at work.
      const dev = await startServer(dialect, { env: RELAXED_LIMITS });
      try {
        const created = await integrator(dev)('POST', '/v1/webhooks', {
          url,
          event_types: ['signin.succeeded'],
        });
        assert.equal(created.status, 201, created.text);
        await dev.signIn(uniqueEmail('ssrf'));
        await waitFor('the development delivery', async () => receiver.hits.length === 1);
      } finally {
        await dev.close();
      }

      receiver.hits.length = 0;
      const server = await startServer(dialect, {
        env: { ...PRODUCTION_TARGETS, TESSERA_WEBHOOK_BACKOFF: '0' },
      });
      try {
        const api = integrator(server);
        const created = await api('POST', '/v1/webhooks', { url, event_types: ['signin.succeeded'] });
        assert.equal(created.status, 201, created.text);
        const id = created.body.webhook_id;
        await server.signIn(uniqueEmail('ssrf'));
        const response = await waitFor('the delivery to fail', async () => {
          const listed = await api('GET', `/v1/webhooks/${id}/deliveries`);
          return listed.body.deliveries[0]?.status === 'failed' && listed;
        });
        const [delivery] = response.body.deliveries;
        assert.equal(delivery.attempts, 2);
        assert.equal(delivery.last_error, 'address not allowed');
        assert.equal(delivery.last_status_code, null);
        const endpoint = await api('GET', `/v1/webhooks/${id}`);
        assert.equal(endpoint.body.last_status, 'failed: address not allowed');
        for (const text of [response.text, endpoint.text]) {
          assert.doesNotMatch(text, /127\.0\.0\.1|ECONN|EADDR/);
          assert.ok(!text.replace(url, '').includes(String(receiver.port)), 'no port beyond the URL');
        }
        assert.deepEqual(receiver.hits, [], 'nothing reached the internal receiver');
      } finally {
        await server.close();
      }
    } finally {
      await stopReceiver(receiver);
    }
  });

  test('endpoints per project are capped', async () => {
    const server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_WEBHOOK_MAX_ENDPOINTS: '2' },
    });
    try {
      const api = integrator(server);
      const first = await api('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/a' });
      assert.equal(first.status, 201, first.text);
      assert.equal((await api('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/b' })).status, 201);
      const third = await api('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/c' });
      assert.equal(third.status, 409, third.text);
      assert.equal(third.body.code, 'conflict');
      assert.match(third.body.detail, /at most 2 webhook endpoints/);
      // Another project has its own allowance.
      const other = await server.ctx.projects.create({ name: 'other' });
      const otherApi = (body: unknown) =>
        server.request('POST', '/v1/webhooks', { body, headers: { authorization: basicAuth(other) } });
      assert.equal((await otherApi({ url: 'http://127.0.0.1:9/x' })).status, 201);
      // Deleting one makes room.
      assert.equal((await api('DELETE', `/v1/webhooks/${first.body.webhook_id}`)).status, 204);
      assert.equal((await api('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/c' })).status, 201);
      assert.equal((await api('GET', '/v1/webhooks')).body.webhooks.length, 2);
    } finally {
      await server.close();
    }
  });

  test('deliveries per project per minute are capped: the excess is deferred, then delivered', async () => {
    const clock = { t: Date.now(), now: () => clock.t };
    const receiver = await startReceiver();
    const server = await startServer(dialect, {
      now: clock.now,
      env: { ...RELAXED_LIMITS, TESSERA_WEBHOOK_DELIVERIES_PER_MINUTE: '2' },
    });
    try {
      const api = integrator(server);
      const created = await api('POST', '/v1/webhooks', {
        url: `http://127.0.0.1:${receiver.port}/hook`,
        event_types: ['signin.succeeded'],
      });
      const id = created.body.webhook_id;
      for (let i = 0; i < 4; i++) await server.signIn(uniqueEmail('rate'));

      const { kysely } = server.storage.db;
      const deferred = await waitFor('two deliveries sent and two deferred', async () => {
        const rows = await kysely.selectFrom('webhook_deliveries').selectAll().execute();
        // Deferred: put off past now. (A delivery stored after the deferral statement ran is still
        // due at its creation time until the dispatcher's next pass defers it too.)
        const waiting = rows.filter(
          (r) => r.status === 'pending' && r.locked_until === null && r.next_attempt_at > clock.t,
        );
        return receiver.hits.length === 2 && waiting.length === 2 && waiting;
      });
      for (const row of deferred) {
        assert.equal(row.attempts, 0, 'a deferral is not an attempt');
        assert.equal(row.last_error, null);
        assert.ok(row.next_attempt_at > clock.t && row.next_attempt_at <= clock.t + 60_000);
      }
      const metrics = await server.ctx.metrics.registry.getSingleMetricAsString(
        'tessera_webhook_deliveries_total',
      );
      assert.match(metrics, /outcome="deferred"\} 2/);
      // Nothing more goes out within the minute.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(receiver.hits.length, 2);

      clock.t += 61_000;
      await waitFor('the deferred deliveries', async () => receiver.hits.length === 4);
      const listed = await waitFor('all four delivered', async () => {
        const response = await api('GET', `/v1/webhooks/${id}/deliveries`);
        const all = response.body.deliveries as Array<{ status: string; attempts: number }>;
        return all.length === 4 && all.every((d) => d.status === 'delivered') && all;
      });
      assert.ok(listed.every((d) => d.attempts === 1));
    } finally {
      await server.close();
      await stopReceiver(receiver);
    }
  });
});
