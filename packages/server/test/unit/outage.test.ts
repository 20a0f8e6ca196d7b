import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DatabaseOutage } from '../../src/db/outage.js';

const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

test('an unreachable database is logged once when the outage starts and once when a ping succeeds, with counts', async () => {
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
  const logger = {
    error: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'error', fields, msg }),
    info: (fields: Record<string, unknown>, msg: string) => lines.push({ level: 'info', fields, msg }),
  };
  let up = false;
  const outage = new DatabaseOutage(
    async () => {
      if (!up) throw refused;
    },
    logger as never,
    { probeMs: 10 },
  );
  try {
    for (let i = 0; i < 20; i++) outage.refused(refused);
    outage.unready(refused);
    outage.unready(refused);
    await sleep(50);
    assert.equal(outage.kind, 'unreachable');
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg.split(':')[0]]),
      [['error', 'database outage began (unreachable)']],
    );
    assert.equal(lines[0]!.fields.code, 'ECONNREFUSED');
    assert.equal('err' in lines[0]!.fields, false, 'no stack');
    up = true;
    await sleep(50);
    assert.equal(outage.kind, undefined);
    assert.equal(lines.length, 2);
    assert.equal(lines[1]!.msg, 'database outage over (unreachable)');
    assert.equal(lines[1]!.fields.refusedRequests, 20);
    assert.equal(lines[1]!.fields.failedReadinessProbes, 2);
  } finally {
    outage.stop();
  }
});
