import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../helpers/harness.js';
import {
  adminQuery,
  dropSchema,
  newSchema,
  postgresOnly,
  type ServerProcess,
  serveEnv,
  signInOverHttp,
  startProcess,
} from './helpers.js';

/** Bounds of the load: it stops at the kill, and in any case after this many requests or this long. */
const MAX_REQUESTS = 1_000;
const MAX_LOAD_MS = 20_000;
/** The kill comes once this many refresh grants were answered 200, or after KILL_AFTER_MS. */
const KILL_AFTER_REFRESHES = 60;
const KILL_AFTER_MS = 8_000;
const WORKERS = 4;
const REFRESHES_PER_SIGN_IN = 8;
/** Kills at most, until one catches a refresh grant in flight. */
const KILLS = 3;

const serveArgs = ['--conditions=tessera-source', '--import', 'tsx', 'packages/server/src/cli.ts', 'serve'];

/** One sign-in and its rotations, as the client saw them. */
interface Chain {
  /** The newest refresh token answered with 200 (by the sign-in or a refresh grant). */
  acknowledged: string;
  /** True when a grant of `acknowledged` was sent and no answer came: it was in flight at the kill. */
  inFlight: boolean;
}

interface Load {
  chains: Chain[];
  refreshes: number;
  requests: number;
  /** Answers other than 200, or failures, before the kill (none expected). */
  unexpected: string[];
  /** Set at the kill: no new request starts, and failures are expected. */
  stop: boolean;
}

function grant(base: string, apiKeyId: string, refreshToken: string): Promise<Response> {
  return fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: apiKeyId }),
  });
}

/** Sign in, refresh a few times, again, until the server dies or a bound is reached. */
async function worker(server: ServerProcess, load: Load, id: number): Promise<void> {
  const started = performance.now();
  const more = () => !load.stop && load.requests < MAX_REQUESTS && performance.now() - started < MAX_LOAD_MS;
  for (let n = 0; more(); n++) {
    let bundle: { refresh_token: string };
    try {
      load.requests += 3;
      bundle = await signInOverHttp(server.base, server.apiKeyId, `kill-${id}-${n}@example.com`);
    } catch (error) {
      if (!load.stop) load.unexpected.push(`sign-in: ${(error as Error).message}`);
      return;
    }
    const chain: Chain = { acknowledged: bundle.refresh_token, inFlight: false };
    load.chains.push(chain);
    for (let i = 0; i < REFRESHES_PER_SIGN_IN && more(); i++) {
      chain.inFlight = true;
      load.requests++;
      let next: string | undefined;
      try {
        const answer = await grant(server.base, server.apiKeyId, chain.acknowledged);
        if (answer.status !== 200) {
          load.unexpected.push(`refresh: ${answer.status} ${await answer.text()}`);
          return;
        }
        next = ((await answer.json()) as { refresh_token: string }).refresh_token;
      } catch {
        return; // the server died with the request in flight (or the answer half sent)
      }
      chain.acknowledged = next;
      chain.inFlight = false;
      load.refreshes++;
    }
  }
}

/**
 * Runs a server, loads it with sign-ins and refresh grants, kills it with SIGKILL mid-load,
 * restarts it on the same database and checks every refresh token it had answered with 200.
 * A grant that was in flight at the kill is the interesting case, but the server may have answered
 * every grant in flight just before the kill; then it loads and kills the restarted server again,
 * up to KILLS times, until a kill catches one.
 */
async function killAndRestart(t: TestContext, env: Record<string, string>, port: number): Promise<void> {
  let server = await startProcess(process.execPath, serveArgs, env, port);
  try {
    let caught = 0;
    for (let kill = 1; kill <= KILLS && caught === 0; kill++) {
      const load: Load = { chains: [], refreshes: 0, requests: 0, unexpected: [], stop: false };
      const workers = Array.from({ length: WORKERS }, (_, i) => worker(server, load, i + kill * WORKERS));
      const loadStarted = performance.now();
      while (load.refreshes < KILL_AFTER_REFRESHES && performance.now() - loadStarted < KILL_AFTER_MS)
        await sleep(5);
      // Mid-load: at a moment when refresh grants are on their way (sign-ins take longer on PostgreSQL).
      const granting = () => load.chains.filter((c) => c.inFlight).length;
      for (let i = 0; i < 3_000 && granting() < (i < 1_000 ? 2 : 1); i++) await sleep(1);
      // In the same tick: the requests in flight stay in flight, no new one starts.
      load.stop = true;
      server.child.kill('SIGKILL');
      const { signal } = await server.exited;
      await Promise.all(workers);
      assert.equal(signal, 'SIGKILL');
      assert.deepEqual(load.unexpected, [], 'every request before the kill was answered 200');
      assert.ok(load.refreshes >= 20, `only ${load.refreshes} refresh grants before the kill`);
      const inFlight = load.chains.filter((c) => c.inFlight).length;
      caught += inFlight;
      t.diagnostic(
        `kill ${kill}: after ${load.refreshes} refresh grants and ${load.chains.length} sign-ins answered, ${inFlight} grants in flight`,
      );

      server = await startProcess(process.execPath, serveArgs, env, port);
      for (const [i, chain] of load.chains.entries()) {
        const what = `chain ${i}${chain.inFlight ? ' (its grant was in flight at the kill)' : ''}`;
        // Its last rotation answered 200 was committed: the token it returned is there and works
        // (for a grant in flight at the kill, committed or not, the retry within the grace window
        // gets the same successor or a first one)…
        const first = await grant(server.base, server.apiKeyId, chain.acknowledged);
        assert.equal(first.status, 200, `${what}: ${first.status} ${await first.clone().text()}`);
        const successor = ((await first.json()) as { refresh_token: string }).refresh_token;
        // …the rotation it made is a normal one (the successor rotates on)…
        const onward = await grant(server.base, server.apiKeyId, successor);
        assert.equal(onward.status, 200, `${what}: the successor answered ${onward.status}`);
        // …and it works only once: once its successor is used, presenting it again is reuse.
        const again = await grant(server.base, server.apiKeyId, chain.acknowledged);
        assert.equal(again.status, 400, `${what}: a second use answered ${again.status}`);
        assert.equal(((await again.json()) as { error: string }).error, 'invalid_grant');
      }
    }
    assert.ok(caught >= 1, `in ${KILLS} kills no refresh grant was in flight at the kill`);
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await server.exited;
  }
}

/** The grace window covers the restart, so a grant in flight at the kill can be retried after it. */
const GRACE = { TESSERA_REFRESH_GRACE: '120' };

describe('kill -9 under load loses no acknowledged refresh rotation [sqlite]', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-kill-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('every refresh token answered 200 before the kill works exactly once after the restart', async (t) => {
    const port = await freePort();
    const env = serveEnv(port, dir, { ...GRACE, TESSERA_DATABASE_URL: `sqlite:${join(dir, 'tessera.db')}` });
    await killAndRestart(t, env, port);
  });
});

postgresOnly('kill -9 under load loses no acknowledged refresh rotation', (url) => {
  const schema = newSchema();
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-kill-'));
    await adminQuery(url, `create schema ${schema}`);
  });
  after(async () => {
    await dropSchema(url, schema);
    rmSync(dir, { recursive: true, force: true });
  });

  test('every refresh token answered 200 before the kill works exactly once after the restart', async (t) => {
    const port = await freePort();
    const served = new URL(url);
    served.searchParams.set('options', `-c search_path=${schema}`);
    const env = serveEnv(port, dir, { ...GRACE, TESSERA_DATABASE_URL: served.toString() });
    await killAndRestart(t, env, port);
  });
});
