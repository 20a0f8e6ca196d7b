import assert from 'node:assert/strict';
import { test } from 'node:test';
import { postgresOnly } from '../faults/helpers.js';
import { RELAXED_LIMITS, startServer } from '../helpers/harness.js';
import { refreshGrant } from '../helpers/sign-in-methods.js';

/** Collects the server's JSON log lines. */
function logLines() {
  const lines: Array<Record<string, unknown>> = [];
  return { lines, stream: { write: (line: string) => void lines.push(JSON.parse(line)) } };
}

/** The value of an unlabelled series in a /metrics text. */
function series(text: string, name: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

const SKEW_WARNING = /clock is .* s (ahead of|behind) the database's/;

/** Signs in and refreshes on a server whose clock is `offsetMs` off the database's. */
async function skewAfterRefresh(offsetMs: number) {
  const log = logLines();
  const server = await startServer('postgres', {
    env: { ...RELAXED_LIMITS, TESSERA_LOG_LEVEL: 'info' },
    now: () => Date.now() + offsetMs,
    logStream: log.stream,
  });
  try {
    // A few grants: a reading whose round trip is slow (the first statement of a fresh pool
    // prepares it) is not used.
    let token = (await server.signIn(`skew-${offsetMs}@example.com`)).refresh_token;
    for (let i = 0; i < 3; i++) {
      const refreshed = await refreshGrant(server, token);
      assert.equal(refreshed.status, 200, refreshed.text);
      token = refreshed.body.refresh_token as string;
    }
    const metrics = (await server.request('GET', '/metrics')).text;
    const warnings = log.lines.filter((l) => SKEW_WARNING.test(String(l.msg)));
    return { skew: series(metrics, 'tessera_database_clock_skew_seconds'), warnings };
  } finally {
    await server.close();
  }
}

postgresOnly("an instance's clock against the database's", () => {
  test('90 s ahead: the refresh exports the skew as a metric and warns once in the log', async () => {
    const { skew, warnings } = await skewAfterRefresh(90_000);
    assert.ok(skew !== undefined && Math.abs(skew - 90) < 1, `tessera_database_clock_skew_seconds ${skew}`);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(String(warnings[0]!.msg), /90\.\d s ahead of/);
    assert.equal(warnings[0]!.level, 40);
  });

  test('90 s behind: a negative skew, and the warning says behind', async () => {
    const { skew, warnings } = await skewAfterRefresh(-90_000);
    assert.ok(skew !== undefined && Math.abs(skew + 90) < 1, `tessera_database_clock_skew_seconds ${skew}`);
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.match(String(warnings[0]!.msg), /behind/);
  });

  test('clocks that agree: a skew under a second and no warning', async () => {
    const { skew, warnings } = await skewAfterRefresh(0);
    assert.ok(skew !== undefined && Math.abs(skew) < 1, `tessera_database_clock_skew_seconds ${skew}`);
    assert.deepEqual(warnings, []);
  });
});
