import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Project } from '../../src/modules/projects/project.js';
import { rateLimitKey } from '../../src/modules/rate-limits/rate-limits.repository.js';
import { clientNetwork } from '../../src/net/client-network.js';
import { eachDialect, startServer, type TestServer } from '../helpers/harness.js';

// The windows an OTP start counts against are counted in steps: this identifier from this network
// first, then the identifier-wide ceiling, then the project's budgets. A start refused at the first
// step must leave the shared windows untouched, even while it runs: a stranger who used up their
// own network's starts for someone's address must not spend that person's ceiling or the project's
// budget (found by review: counting every window at once and giving back after did, for a moment).
eachDialect('an OTP start refused for its own network touches no shared window', (dialect) => {
  let server: TestServer;
  let project: Project;
  const identifier = 'victim@example.com';
  const stranger = clientNetwork('198.51.100.7');

  before(async () => {
    server = await startServer(dialect, {
      env: { TESSERA_RATE_LIMIT_OTP_START: '2/900', TESSERA_OTP_RESEND_INTERVAL: '0' },
    });
    const found = await server.ctx.projects.byApiKeyId(server.project.api_key_id);
    assert.ok(found);
    project = found;
  });
  after(() => server.close());

  const countOf = async (scope: string, subject: string) => {
    const row = await server.storage.db.kysely
      .selectFrom('rate_limits')
      .select('count')
      .where('key', '=', rateLimitKey(scope, subject))
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  };

  test('20 concurrent refused starts: the ceiling and the budgets see only the 2 that were allowed', async () => {
    for (let i = 0; i < 2; i++) await server.ctx.otp.start(project, identifier, stranger);
    const everywhere = `${project.id}\0${identifier}`;
    const budget = `${project.id}\0email`;
    const before = {
      ceiling: await countOf('otp-start-all', everywhere),
      hour: await countOf('otp-budget-hour', budget),
    };
    assert.equal(before.ceiling, 2);
    const challenges = async () =>
      Number(
        (
          await server.storage.db.kysely
            .selectFrom('otp_challenges')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const challengesBefore = await challenges();
    // Every window the refused starts count a hit on, even one given back at once.
    const limiter = server.ctx.limiter;
    const hitSteps = limiter.hitSteps.bind(limiter);
    const touched = new Set<string>();
    limiter.hitSteps = async (steps, insert) => {
      const result = await hitSteps(steps, insert);
      for (const h of result.counted) touched.add(h.scope);
      return result;
    };
    let refused: PromiseSettledResult<unknown>[];
    try {
      refused = await Promise.allSettled(
        Array.from({ length: 20 }, () => server.ctx.otp.start(project, identifier, stranger)),
      );
    } finally {
      limiter.hitSteps = hitSteps;
    }
    // A refused start stores no challenge.
    assert.equal(await challenges(), challengesBefore);
    assert.deepEqual([...touched], ['otp-start']);
    assert.ok(
      refused.every(
        (r) => r.status === 'rejected' && (r.reason as { statusCode?: number }).statusCode === 429,
      ),
    );
    assert.equal(await countOf('otp-start-all', everywhere), before.ceiling);
    assert.equal(await countOf('otp-budget-hour', budget), before.hour);
    // The real user, from another network, still gets a code.
    const started = await server.ctx.otp.start(project, identifier, clientNetwork('203.0.113.9'));
    assert.ok(started.challenge_id);
    assert.equal(await countOf('otp-start-all', everywhere), before.ceiling + 1);
  });
});
