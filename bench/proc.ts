// Linux /proc readings of another process (the bench runs on Linux: PostgreSQL backends and
// cluster workers are not ours to ask over IPC).
import { readFileSync } from 'node:fs';

const MICROS_PER_TICK = 1_000_000 / 100; // USER_HZ is 100 on Linux

/** User + system CPU time of `pid` so far, microseconds; undefined once it has ended. */
export function processCpuMicros(pid: number): number | undefined {
  try {
    // After the command name (in parentheses, may hold spaces): field 14 utime, 15 stime.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * MICROS_PER_TICK;
  } catch {
    return undefined;
  }
}

export interface Memory {
  /** Resident set size now, bytes. */
  rss: number;
  /** The highest resident set size so far (VmHWM), bytes. */
  peakRss: number;
}

/** Resident memory of `pid`, now and at its peak; undefined once it has ended. */
export function processMemory(pid: number): Memory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rss: kib('VmRSS') * 1024, peakRss: kib('VmHWM') * 1024 };
  } catch {
    return undefined;
  }
}
