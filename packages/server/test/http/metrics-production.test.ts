import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import Fastify from 'fastify';
import pino from 'pino';
import { Metrics } from '../../src/modules/metrics/metrics.js';
import { metricsRoutes } from '../../src/modules/metrics/metrics.routes.js';
import { eachDialect, startServer } from '../helpers/harness.js';

// Regression tests of issue 12: /metrics was open in production. Now production serves it only
// with TESSERA_METRICS_TOKEN set (Bearer, compared in constant time); without one it is a 404.
const PRODUCTION = {
  TESSERA_ENV: 'production',
  TESSERA_ALLOW_HTTP_ISSUER: 'true',
  TESSERA_DELIVERY: 'live',
  TESSERA_SMTP_URL: 'smtp://127.0.0.1:1',
};

eachDialect('/metrics in production', (dialect) => {
  test('regression: without TESSERA_METRICS_TOKEN, production answers 404 and shows nothing', async () => {
    const server = await startServer(dialect, { env: PRODUCTION });
    try {
      assert.equal(server.config.env, 'production');
      for (const authorization of [undefined, 'Bearer ', 'Bearer anything']) {
        const answer = await server.request(
          'GET',
          '/metrics',
          authorization ? { headers: { authorization } } : {},
        );
        assert.equal(answer.status, 404, answer.text);
        assert.ok(!answer.text.includes('tessera_'), 'metrics were served');
      }
      // The rest of the operations family is still there.
      assert.equal((await server.request('GET', '/openapi.json')).status, 200);
    } finally {
      await server.close();
    }
  });

  test('with TESSERA_METRICS_TOKEN, production needs exactly that Bearer token', async () => {
    const token = 'prod-metrics-3b9d1e';
    const server = await startServer(dialect, { env: { ...PRODUCTION, TESSERA_METRICS_TOKEN: token } });
    try {
      for (const authorization of [
        undefined,
        'Bearer',
        `Bearer ${token.slice(0, -1)}`,
        `bearer  ${token}`,
        token,
      ]) {
        const answer = await server.request(
          'GET',
          '/metrics',
          authorization ? { headers: { authorization } } : {},
        );
        assert.equal(answer.status, 401, `${authorization}: ${answer.text}`);
        assert.equal(answer.body.code, 'unauthorized');
        assert.ok(!answer.text.includes(token));
      }
      const ok = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${token}` } });
      assert.equal(ok.status, 200, ok.text);
      assert.match(ok.text, /tessera_otp_sends_total|tessera_http_requests_total/);
    } finally {
      await server.close();
    }
  });

  test('development and test stay open without a token', async () => {
    const server = await startServer(dialect);
    try {
      const answer = await server.request('GET', '/metrics');
      assert.equal(answer.status, 200, answer.text);
      assert.match(answer.text, /# TYPE tessera_otp_sends_total counter/);
    } finally {
      await server.close();
    }
  });
});

test('production without a metrics token warns once at start-up, naming TESSERA_METRICS_TOKEN', async () => {
  const lines: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const app = Fastify({ loggerInstance: pino({ level: 'warn' }, sink) });
  await app.register(metricsRoutes({ metrics: new Metrics(), token: undefined, production: true }));
  await app.ready();
  try {
    const warnings = lines.filter((l) => l.level === 40);
    assert.equal(warnings.length, 1, JSON.stringify(lines));
    assert.match(warnings[0]!.msg, /TESSERA_METRICS_TOKEN/);
    assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
  } finally {
    await app.close();
  }
});
