import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OUTAGE_GRACE_MS } from '../../src/db/unavailable.js';
import type { Project } from '../../src/modules/projects/project.js';
import { AWAY_RETRY_MS } from '../../src/modules/projects/project-cache.js';
import type { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { ProjectsService } from '../../src/modules/projects/projects.service.js';

const PROJECT = { id: 'p1', api_key_id: 'pk_1', name: 'one', origins: [] } as unknown as Project;
const refused = () =>
  Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));

function serviceWith(clock: { now: number }) {
  const state: { find: () => Promise<Project | undefined> } = { find: async () => PROJECT };
  const repository = {
    findByApiKeyId: () => state.find(),
    findById: () => state.find(),
  } as unknown as ProjectsRepository;
  return { projects: new ProjectsService(repository, () => clock.now), state };
}

describe('project cache while the database is away', () => {
  test('an expired entry answers during the outage grace, then the failure shows', async () => {
    const clock = { now: 1_000_000 };
    const { projects, state } = serviceWith(clock);
    assert.equal(await projects.byApiKeyId('pk_1'), PROJECT);
    clock.now += 5_000;
    assert.equal(projects.cached('pk_1'), null, 'expired, the database not known to be away');
    state.find = refused;
    assert.equal(await projects.byApiKeyId('pk_1'), PROJECT);
    assert.equal(projects.cached('pk_1'), PROJECT, 'the /verify hot path answers from memory');
    clock.now = 1_000_000 + 5_000 + OUTAGE_GRACE_MS;
    assert.equal(projects.cached('pk_1'), null);
    await assert.rejects(projects.byApiKeyId('pk_1'), /ECONNREFUSED/);
    // Back: the next read (AWAY_RETRY_MS after the failure) refreshes the entry and ends the outage mode.
    state.find = async () => PROJECT;
    clock.now += AWAY_RETRY_MS;
    assert.equal(await projects.byApiKeyId('pk_1'), PROJECT);
    clock.now += 5_000;
    assert.equal(projects.cached('pk_1'), null);
  });

  test('other errors, and projects never seen, are not served from memory', async () => {
    const clock = { now: 1_000_000 };
    const { projects, state } = serviceWith(clock);
    await projects.byId('p1');
    clock.now += 6_000;
    state.find = () => Promise.reject(new TypeError('a bug'));
    await assert.rejects(projects.byId('p1'), TypeError);
    state.find = refused;
    await assert.rejects(projects.byApiKeyId('pk_unknown'), /ECONNREFUSED/);
    assert.equal(await projects.byId('p1'), PROJECT);
  });

  test('once a read failed, lookups past the grace fail at once until the next probe: one read, not one a request', async () => {
    const clock = { now: 1_000_000 };
    const { projects, state } = serviceWith(clock);
    await projects.byApiKeyId('pk_1');
    clock.now += 5_000 + OUTAGE_GRACE_MS; // past the trust window
    let reads = 0;
    state.find = () => {
      reads++;
      return refused();
    };
    for (let i = 0; i < 10; i++) await assert.rejects(projects.byApiKeyId('pk_1'), /ECONNREFUSED/);
    assert.equal(reads, 1, 'each lookup waited for a read of its own');
    await assert.rejects(projects.byApiKeyId('pk_other'), /ECONNREFUSED/);
    assert.equal(reads, 1, 'the database is away for every key');
    // The probe: the first lookup AWAY_RETRY_MS after the failure reads again.
    clock.now += AWAY_RETRY_MS;
    state.find = async () => {
      reads++;
      return PROJECT;
    };
    assert.equal(await projects.byApiKeyId('pk_1'), PROJECT);
    assert.equal(reads, 2);
  });
});
