import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { LATENCY_BUCKETS, requestMetrics } from '../../src/modules/metrics/request-stats.js';

/** The same two metrics kept by prom-client itself: what the exposition must equal. */
function reference() {
  const registry = new Registry();
  const requests = new Counter({
    name: 'tessera_http_requests_total',
    help: 'HTTP requests by route, method and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'tessera_http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['method', 'route'] as const,
    buckets: [...LATENCY_BUCKETS],
    registers: [registry],
  });
  return {
    registry,
    observe(method: string, route: string, status: number, seconds: number) {
      requests.inc({ method, route, status: String(status) });
      latency.observe({ method, route }, seconds);
    },
  };
}

/** The exposition's lines, sorted: series order is not part of the format. */
const lines = async (registry: Registry) => (await registry.metrics()).split('\n').filter(Boolean).sort();

test('the request metrics expose exactly what prom-client would for the same requests', async () => {
  const registry = new Registry();
  const stats = requestMetrics(registry);
  const expected = reference();
  const requests: Array<[string, string, number, number]> = [
    ['POST', '/verify', 200, 0.0004],
    ['POST', '/verify', 200, 0.001], // on a bound: counted in that bucket
    ['POST', '/verify', 200, 0.0011],
    ['POST', '/verify', 400, 0.003],
    ['GET', '/verify', 404, 0.02],
    ['POST', '/oauth/token', 200, 0.7],
    ['POST', '/oauth/token', 503, 3], // above every bound: only in +Inf
    ['GET', 'not_found', 404, 0.0001],
    ['GET', '/v1/users/:user_id', 200, 0.25],
  ];
  for (const [method, route, status, seconds] of requests) {
    stats.observe(method, route, status, seconds);
    expected.observe(method, route, status, seconds);
  }
  assert.deepEqual(await lines(registry), await lines(expected.registry));
  assert.match(
    await registry.metrics(),
    /tessera_http_request_duration_seconds_bucket\{le="0.001",method="POST",route="\/verify"\} 2/,
  );

  registry.resetMetrics();
  assert.deepEqual(await lines(registry), await lines(reference().registry));
});

test('the request metrics survive JSON export (what a cluster aggregates)', async () => {
  const registry = new Registry();
  requestMetrics(registry).observe('GET', '/healthz', 200, 0.002);
  const json = await registry.getMetricsAsJSON();
  const counter = json.find((m) => m.name === 'tessera_http_requests_total');
  assert.deepEqual(counter?.values, [
    { labels: { method: 'GET', route: '/healthz', status: '200' }, value: 1 },
  ]);
  const histogram = json.find((m) => m.name === 'tessera_http_request_duration_seconds');
  assert.equal(histogram?.type, 'histogram');
  assert.equal(histogram?.values.length, LATENCY_BUCKETS.length + 3);
});
