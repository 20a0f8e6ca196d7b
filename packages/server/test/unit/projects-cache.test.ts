import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrorCodes } from '@tessera/core';
import { randomToken } from '../../src/crypto/random.js';
import type { NoticeListener } from '../../src/db/notifications.js';
import { Lru } from '../../src/lru.js';
import type { Project } from '../../src/modules/projects/project.js';
import {
  CACHE_MS,
  KNOWN_PROJECTS_CACHED,
  UNKNOWN_IDS_CACHED,
} from '../../src/modules/projects/project-cache.js';
import type { ProjectsRepository } from '../../src/modules/projects/projects.repository.js';
import { isWellFormedApiKeyId, ProjectsService } from '../../src/modules/projects/projects.service.js';

const mintedId = () => `pk_${randomToken(16)}`;
const projectWith = (apiKeyId: string, id = `id-${apiKeyId}`) =>
  ({ id, api_key_id: apiKeyId, name: apiKeyId, origins: [], secret_hash: 'x' }) as unknown as Project;

/** A repository over a fixed set of projects that counts its reads. */
function fakeRepository(projects: Project[]) {
  const reads = { byApiKeyId: 0, byId: 0 };
  const state: { find?: (apiKeyId: string) => Promise<Project | undefined> } = {};
  const repository = {
    findByApiKeyId: (apiKeyId: string) => {
      reads.byApiKeyId++;
      return state.find
        ? state.find(apiKeyId)
        : Promise.resolve(projects.find((p) => p.api_key_id === apiKeyId));
    },
    findById: (id: string) => {
      reads.byId++;
      return Promise.resolve(projects.find((p) => p.id === id));
    },
  } as unknown as ProjectsRepository;
  return { repository, reads, state };
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('project cache under a flood of unknown API key ids', () => {
  test('20,000 random unknown ids do not evict a known project, and both caches stay bounded', async () => {
    const known = projectWith(mintedId());
    const { repository, reads } = fakeRepository([known]);
    const clock = { now: 1_000_000 };
    const projects = new ProjectsService(repository, () => clock.now);
    assert.equal(await projects.byApiKeyId(known.api_key_id), known);
    assert.equal(reads.byApiKeyId, 1);

    for (let i = 0; i < 20_000; i++) assert.equal(await projects.byApiKeyId(mintedId()), undefined);
    assert.equal(reads.byApiKeyId, 1 + 20_000, 'each unknown id read once');

    assert.equal(await projects.byApiKeyId(known.api_key_id), known);
    assert.equal(projects.cached(known.api_key_id), known, 'the /verify hot path still answers from memory');
    assert.equal(reads.byApiKeyId, 1 + 20_000, 'the known project was served without a read');
    const sizes = projects.cacheSizes();
    assert.equal(sizes.unknown, UNKNOWN_IDS_CACHED);
    assert.ok(sizes.known <= KNOWN_PROJECTS_CACHED);
    assert.equal(sizes.reading, 0);
  });

  test('known projects leave least recently used first, never all at once', async () => {
    const all = Array.from({ length: KNOWN_PROJECTS_CACHED + 1 }, () => projectWith(mintedId()));
    const { repository, reads } = fakeRepository(all);
    const projects = new ProjectsService(repository, () => 1_000_000);
    for (const p of all.slice(0, KNOWN_PROJECTS_CACHED)) await projects.byApiKeyId(p.api_key_id);
    await projects.byApiKeyId(all[0]!.api_key_id); // the first becomes the most recently used
    await projects.byApiKeyId(all[KNOWN_PROJECTS_CACHED]!.api_key_id);
    assert.equal(projects.cacheSizes().known, KNOWN_PROJECTS_CACHED);
    const before = reads.byApiKeyId;
    assert.equal(projects.cached(all[0]!.api_key_id), all[0]);
    assert.equal(projects.cached(all[2]!.api_key_id), all[2]);
    assert.equal(projects.cached(all[1]!.api_key_id), null, 'the least recently used one left');
    assert.equal(reads.byApiKeyId, before);
  });
});

describe('project cache: one read per key at a time', () => {
  test('concurrent misses of one id cause one repository read and share its answer', async () => {
    const known = projectWith(mintedId());
    const { repository, reads, state } = fakeRepository([known]);
    const answer = deferred<Project | undefined>();
    state.find = () => answer.promise;
    const projects = new ProjectsService(repository, () => 1_000_000);
    const lookups = Array.from({ length: 50 }, () => projects.byApiKeyId(known.api_key_id));
    await Promise.resolve();
    answer.resolve(known);
    const results = await Promise.all(lookups);
    assert.equal(reads.byApiKeyId, 1);
    assert.ok(results.every((p) => p === known));
    assert.equal(projects.cacheSizes().reading, 0);
  });

  test('concurrent misses share the read error too, and the next lookup reads again', async () => {
    const known = projectWith(mintedId());
    const { repository, reads, state } = fakeRepository([known]);
    const answer = deferred<Project | undefined>();
    state.find = () => answer.promise;
    const projects = new ProjectsService(repository, () => 1_000_000);
    const lookups = Array.from({ length: 20 }, () => projects.byApiKeyId(known.api_key_id));
    const failure = new Error('connection terminated unexpectedly');
    answer.reject(failure);
    const settled = await Promise.allSettled(lookups);
    assert.equal(reads.byApiKeyId, 1);
    assert.ok(settled.every((s) => s.status === 'rejected' && s.reason === failure));
    delete state.find;
    assert.equal(await projects.byApiKeyId(known.api_key_id), known);
    assert.equal(reads.byApiKeyId, 2);
  });

  test('a read in flight when the project changes is not remembered', async () => {
    const known = projectWith(mintedId());
    const { repository, reads, state } = fakeRepository([known]);
    const answer = deferred<Project | undefined>();
    state.find = () => answer.promise;
    const handlers: Array<(detail: Record<string, unknown>) => void> = [];
    const notices = {
      on: (_c: unknown, h: (d: Record<string, unknown>) => void) => handlers.push(h),
      onListening: () => {},
    };
    const projects = new ProjectsService(repository, () => 1_000_000);
    projects.follow(notices as unknown as NoticeListener);
    const stale = projects.byApiKeyId(known.api_key_id);
    await Promise.resolve();
    for (const h of handlers) h({ id: known.id, api_key_id: known.api_key_id });
    answer.resolve(known);
    assert.equal(await stale, known, 'its callers get what it read');
    assert.equal(projects.cached(known.api_key_id), null, 'but it is not cached');
    delete state.find;
    await projects.byApiKeyId(known.api_key_id);
    assert.equal(reads.byApiKeyId, 2);
  });
});

describe('project cache: malformed and unknown ids', () => {
  const malformed = ['', ' ', 'pk_ x', 'pk_é', 'pk_1;drop', 'pk_\n1', `pk_${'a'.repeat(98)}`, 'pk_1:2'];

  test('a malformed id is unknown without a repository read, answered like an unknown one', async () => {
    const { repository, reads } = fakeRepository([]);
    const projects = new ProjectsService(repository, () => 1_000_000);
    for (const id of malformed) {
      assert.equal(isWellFormedApiKeyId(id), false, JSON.stringify(id));
      assert.equal(await projects.byApiKeyId(id), undefined);
      assert.equal(projects.cached(id), undefined);
      if (id !== '') {
        await assert.rejects(projects.requireApiKeyId(id), (error: { statusCode: number; code: string }) => {
          assert.equal(error.statusCode, 401);
          assert.equal(error.code, ErrorCodes.unknownApiKey);
          return true;
        });
      }
      const basic = `Basic ${Buffer.from(`${encodeURIComponent(id)}:sk_secret`).toString('base64')}`;
      await assert.rejects(projects.authenticateBasic(basic), { code: ErrorCodes.invalidClient });
    }
    assert.equal(reads.byApiKeyId, 0);
    assert.deepEqual(projects.cacheSizes(), { known: 0, unknown: 0, reading: 0 });
  });

  test('ids Tessera mints, and shorter ones made by hand, are well formed', () => {
    for (const id of [mintedId(), 'pk_1', 'pk_test_4f1c', 'pk_live.1234~x', `pk_${'a'.repeat(97)}`])
      assert.equal(isWellFormedApiKeyId(id), true, id);
  });

  test('an unknown id is remembered for CACHE_MS, then read again (a project made meanwhile is found)', async () => {
    const later = projectWith(mintedId());
    const stored: Project[] = [];
    const { repository, reads } = fakeRepository(stored);
    const clock = { now: 1_000_000 };
    const projects = new ProjectsService(repository, () => clock.now);
    assert.equal(await projects.byApiKeyId(later.api_key_id), undefined);
    assert.equal(await projects.byApiKeyId(later.api_key_id), undefined);
    assert.equal(projects.cached(later.api_key_id), undefined);
    assert.equal(reads.byApiKeyId, 1);
    stored.push(later);
    clock.now += CACHE_MS - 1;
    assert.equal(await projects.byApiKeyId(later.api_key_id), undefined);
    assert.equal(reads.byApiKeyId, 1);
    clock.now += 1;
    assert.equal(projects.cached(later.api_key_id), null, 'expired');
    assert.equal(await projects.byApiKeyId(later.api_key_id), later);
    assert.equal(reads.byApiKeyId, 2);
    assert.deepEqual(projects.cacheSizes(), { known: 1, unknown: 0, reading: 0 });
  });
});

describe('Lru', () => {
  test('holds at most its capacity and evicts the least recently used', () => {
    const lru = new Lru<string, number>(3);
    for (const [k, v] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const)
      lru.set(k, v);
    assert.equal(lru.get('a'), 1);
    lru.set('d', 4);
    assert.equal(lru.size, 3);
    assert.equal(lru.get('b'), undefined);
    lru.set('a', 10);
    lru.set('e', 5);
    assert.equal(lru.get('c'), undefined);
    assert.deepEqual([lru.get('a'), lru.get('d'), lru.get('e')], [10, 4, 5]);
    assert.throws(() => new Lru(0), RangeError);
  });

  test('keeps its order through deletions, peeks and clears: oldest, entries and eviction agree', () => {
    const lru = new Lru<number, string>(1000);
    for (let i = 0; i < 3000; i++) lru.set(i, `v${i}`);
    assert.deepEqual(lru.oldest(), [2000, 'v2000']);
    // Deleting from the middle and the ends, and peeking, leave the rest in order.
    for (const k of [2000, 2500, 2999]) lru.delete(k);
    assert.equal(lru.peek(2001), 'v2001');
    assert.deepEqual(lru.oldest(), [2001, 'v2001']);
    const keys = [...lru.entries()].map(([k]) => k);
    assert.equal(keys.length, 997);
    assert.deepEqual(keys.slice(0, 2), [2001, 2002]);
    assert.ok(!keys.includes(2500) && keys.at(-1) === 2998);
    // The current entry may be deleted while iterating.
    for (const [k] of lru.entries()) if (k % 2 === 0) lru.delete(k);
    assert.equal(lru.size, 499);
    assert.deepEqual(lru.oldest(), [2001, 'v2001']);
    // A read moves an entry to the newest end; a full table evicts from the oldest.
    lru.get(2001);
    assert.deepEqual(lru.oldest(), [2003, 'v2003']);
    for (let k = 5000; lru.size < 1000; k++) lru.set(k, 'x');
    lru.set(9999, 'y');
    assert.equal(lru.peek(2003), undefined);
    assert.deepEqual(lru.oldest(), [2005, 'v2005']);
    lru.clear();
    assert.equal(lru.oldest(), undefined);
    assert.deepEqual([...lru.entries()], []);
    lru.set(1, 'one');
    assert.deepEqual(lru.oldest(), [1, 'one']);
  });
});
